/// Why XMTP content could not be encoded or decoded.
public enum XMTPCodecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes are not valid protobuf for the expected message.
    case malformed(ProtobufError)
    /// The `EncodedContent` has no `type` field, so no codec can be chosen.
    case missingContentType
    /// A codec was asked to decode content of another type.
    case typeMismatch(expected: XMTPContentTypeID, actual: XMTPContentTypeID?)
    /// The content is well-formed protobuf but not a valid value of its type (bad JSON, hex, UTF-8, number…).
    case invalidContent(type: String, reason: String)
    /// The `compression` field names an algorithm this codec does not know.
    case unsupportedCompression(Int32)
    /// The compressed content could not be inflated.
    case decompressionFailed(String)

    /// A readable explanation.
    public var description: String {
        switch self {
        case .malformed(let error): "malformed protobuf: \(error.message)"
        case .missingContentType: "EncodedContent has no content type"
        case let .typeMismatch(expected, actual):
            "expected content type \(expected), got \(actual.map(\.description) ?? "none")"
        case let .invalidContent(type, reason): "invalid \(type) content: \(reason)"
        case .unsupportedCompression(let value): "unsupported compression \(value)"
        case .decompressionFailed(let reason): "decompression failed: \(reason)"
        }
    }
}

/// `xmtp.mls.message_contents.ContentTypeId`: who defines a content type, its name and version.
///
/// Wire format: `1: string authority_id`, `2: string type_id`, `3: uint32 version_major`, `4: uint32 version_minor`.
public struct XMTPContentTypeID: Sendable, Hashable, CustomStringConvertible {
    /// The authority governing the type, e.g. `xmtp.org`.
    public var authorityID: String
    /// The type name, e.g. `text`.
    public var typeID: String
    /// The major version.
    public var versionMajor: UInt32
    /// The minor version.
    public var versionMinor: UInt32

    /// A content type ID from its parts.
    public init(authorityID: String, typeID: String, versionMajor: UInt32, versionMinor: UInt32) {
        self.authorityID = authorityID
        self.typeID = typeID
        self.versionMajor = versionMajor
        self.versionMinor = versionMinor
    }

    /// An `xmtp.org` content type.
    public static func xmtp(_ typeID: String, _ major: UInt32, _ minor: UInt32 = 0) -> XMTPContentTypeID {
        XMTPContentTypeID(authorityID: "xmtp.org", typeID: typeID, versionMajor: major, versionMinor: minor)
    }

    /// `xmtp.org/text:1.0`.
    public static let text = xmtp("text", 1)
    /// `xmtp.org/reply:1.0`.
    public static let reply = xmtp("reply", 1)
    /// `xmtp.org/reaction:1.0` (legacy JSON reaction).
    public static let legacyReaction = xmtp("reaction", 1)
    /// `xmtp.org/reaction:2.0` (protobuf reaction, what libxmtp sends today).
    public static let reaction = xmtp("reaction", 2)
    /// `xmtp.org/readReceipt:1.0`.
    public static let readReceipt = xmtp("readReceipt", 1)
    /// `xmtp.org/attachment:1.0`.
    public static let attachment = xmtp("attachment", 1)
    /// `xmtp.org/remoteStaticAttachment:1.0`.
    public static let remoteAttachment = xmtp("remoteStaticAttachment", 1)
    /// `xmtp.org/multiRemoteStaticAttachment:1.0`.
    public static let multiRemoteAttachment = xmtp("multiRemoteStaticAttachment", 1)
    /// `xmtp.org/deleteMessage:1.0`.
    public static let deleteMessage = xmtp("deleteMessage", 1)
    /// `xmtp.org/editMessage:1.0`.
    public static let editMessage = xmtp("editMessage", 1)

    /// `authority/type:major.minor`, the form libxmtp writes into a reply's `contentType` parameter.
    public var description: String { "\(authorityID)/\(typeID):\(versionMajor).\(versionMinor)" }

    /// Parses `authority/type:major.minor` (the minor version may be omitted); nil when malformed.
    public init?(parsing text: String) {
        guard let slash = text.lastIndex(of: "/"), let colon = text.lastIndex(of: ":"), slash < colon else { return nil }
        let authority = String(text[..<slash])
        let type = String(text[text.index(after: slash)..<colon])
        let version = text[text.index(after: colon)...].split(separator: ".", omittingEmptySubsequences: false)
        guard !type.isEmpty, (1...2).contains(version.count), let major = UInt32(version[0]) else { return nil }
        var minor: UInt32 = 0
        if version.count == 2 {
            guard let parsed = UInt32(version[1]) else { return nil }
            minor = parsed
        }
        self.init(authorityID: authority, typeID: type, versionMajor: major, versionMinor: minor)
    }

    /// The protobuf bytes (empty strings and zero versions are omitted, as prost does).
    public func encoded() -> [UInt8] {
        var writer = ProtobufWriter()
        writer.string(1, authorityID)
        writer.string(2, typeID)
        writer.uint64(3, UInt64(versionMajor))
        writer.uint64(4, UInt64(versionMinor))
        return writer.bytes
    }

    /// Decodes a `ContentTypeId`; unknown fields are skipped.
    public static func decode(_ bytes: [UInt8]) throws(ProtobufError) -> XMTPContentTypeID {
        var reader = ProtobufReader(bytes)
        var id = XMTPContentTypeID(authorityID: "", typeID: "", versionMajor: 0, versionMinor: 0)
        while let (field, type) = try reader.nextField() {
            switch field {
            case 1: try reader.expect(type, .lengthDelimited, field: 1); id.authorityID = try reader.string()
            case 2: try reader.expect(type, .lengthDelimited, field: 2); id.typeID = try reader.string()
            case 3: try reader.expect(type, .varint, field: 3); id.versionMajor = UInt32(truncatingIfNeeded: try reader.varint())
            case 4: try reader.expect(type, .varint, field: 4); id.versionMinor = UInt32(truncatingIfNeeded: try reader.varint())
            default: try reader.skip(type)
            }
        }
        return id
    }
}

/// `xmtp.mls.message_contents.Compression` (an open protobuf enum: unknown values are kept).
public struct XMTPCompression: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The enum's wire value.
    public var rawValue: Int32
    /// A compression from its wire value.
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// `COMPRESSION_DEFLATE = 0` (zlib-wrapped deflate, RFC 1950, as the XMTP SDKs write it; raw RFC 1951 is accepted too).
    public static let deflate = XMTPCompression(rawValue: 0)
    /// `COMPRESSION_GZIP = 1` (RFC 1952).
    public static let gzip = XMTPCompression(rawValue: 1)
    /// `deflate`, `gzip` or the number.
    public var description: String {
        switch self {
        case .deflate: "deflate"
        case .gzip: "gzip"
        default: String(rawValue)
        }
    }
}

/// `xmtp.mls.message_contents.EncodedContent`: a typed payload with parameters and a fallback text.
///
/// Wire format: `1: ContentTypeId type`, `2: map<string,string> parameters`, `3: optional string fallback`,
/// `4: bytes content`, `5: optional Compression compression`, written in field-number order like prost. Map entries
/// are written sorted by key (libxmtp writes them in hash order, so only maps of at most one entry are byte-identical).
public struct XMTPEncodedContent: Sendable, Hashable {
    /// The content type (absent only in malformed content).
    public var type: XMTPContentTypeID?
    /// Codec parameters.
    public var parameters: [String: String]
    /// Text shown by clients that do not know the type.
    public var fallback: String?
    /// The encoded value.
    public var content: [UInt8]
    /// How `content` is compressed, if at all.
    public var compression: XMTPCompression?

    /// Encoded content from its parts.
    public init(type: XMTPContentTypeID?, parameters: [String: String] = [:], fallback: String? = nil,
                content: [UInt8] = [], compression: XMTPCompression? = nil) {
        self.type = type
        self.parameters = parameters
        self.fallback = fallback
        self.content = content
        self.compression = compression
    }

    /// The protobuf bytes.
    public func encoded() -> [UInt8] {
        var writer = ProtobufWriter()
        if let type { writer.message(1, type.encoded()) }
        for key in parameters.keys.sorted() {
            var entry = ProtobufWriter()
            entry.string(1, key)
            entry.string(2, parameters[key] ?? "")
            writer.message(2, entry.bytes)
        }
        if let fallback { writer.string(3, fallback, always: true) }
        writer.bytes(4, content)
        if let compression { writer.uint64(5, UInt64(bitPattern: Int64(compression.rawValue)), always: true) }
        return writer.bytes
    }

    /// Decodes `EncodedContent` bytes; throws `.malformed` on bad protobuf.
    public static func decode(_ bytes: [UInt8]) throws(XMTPCodecError) -> XMTPEncodedContent {
        do {
            var reader = ProtobufReader(bytes)
            var result = XMTPEncodedContent(type: nil)
            while let (field, type) = try reader.nextField() {
                switch field {
                case 1:
                    try reader.expect(type, .lengthDelimited, field: 1)
                    result.type = try XMTPContentTypeID.decode(try reader.lengthDelimited())
                case 2:
                    try reader.expect(type, .lengthDelimited, field: 2)
                    var entry = ProtobufReader(try reader.lengthDelimited())
                    var key = "", value = ""
                    while let (entryField, entryType) = try entry.nextField() {
                        switch entryField {
                        case 1: try entry.expect(entryType, .lengthDelimited, field: 1); key = try entry.string()
                        case 2: try entry.expect(entryType, .lengthDelimited, field: 2); value = try entry.string()
                        default: try entry.skip(entryType)
                        }
                    }
                    result.parameters[key] = value
                case 3: try reader.expect(type, .lengthDelimited, field: 3); result.fallback = try reader.string()
                case 4: try reader.expect(type, .lengthDelimited, field: 4); result.content = try reader.lengthDelimited()
                case 5:
                    try reader.expect(type, .varint, field: 5)
                    result.compression = XMTPCompression(rawValue: Int32(truncatingIfNeeded: try reader.varint()))
                default: try reader.skip(type)
                }
            }
            return result
        } catch {
            throw .malformed(error)
        }
    }

    /// This content with `content` inflated and `compression` cleared (unchanged when not compressed).
    public func decompressed() throws(XMTPCodecError) -> XMTPEncodedContent {
        guard let compression else { return self }
        var copy = self
        switch compression {
        case .deflate: copy.content = try Inflate.zlibOrRaw(content)
        case .gzip: copy.content = try Inflate.gzip(content)
        default: throw .unsupportedCompression(compression.rawValue)
        }
        copy.compression = nil
        return copy
    }
}
