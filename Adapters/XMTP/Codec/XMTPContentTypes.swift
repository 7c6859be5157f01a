import SwitchboardCore

/// A content type with libxmtp's codec: encodes to and decodes from `EncodedContent`.
public protocol XMTPContentCodable: Sendable, Hashable {
    /// The content type this codec writes.
    static var contentType: XMTPContentTypeID { get }
    /// The `EncodedContent` libxmtp would produce for this value (parameters, fallback and content bytes).
    func encoded() -> XMTPEncodedContent
    /// Decodes content whose type ID and major version match `contentType` (compressed content is inflated first).
    static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> Self
}

extension XMTPContentCodable {
    /// Checks the type (type ID and major version, the authority ignored as libxmtp does) and inflates the content.
    static func prepared(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPEncodedContent {
        guard let type = content.type, type.typeID == contentType.typeID, type.versionMajor == contentType.versionMajor else {
            throw .typeMismatch(expected: contentType, actual: content.type)
        }
        return try content.decompressed()
    }

    /// Decodes `EncodedContent` protobuf bytes as this type.
    public static func decode(bytes: [UInt8]) throws(XMTPCodecError) -> Self {
        try decode(XMTPEncodedContent.decode(bytes))
    }
}

/// Runs a protobuf read, turning its error into `XMTPCodecError.malformed`.
func readProtobuf<T>(_ body: () throws(ProtobufError) -> T) throws(XMTPCodecError) -> T {
    do { return try body() } catch { throw .malformed(error) }
}

/// `xmtp.org/text:1.0`: UTF-8 text, parameter `encoding=UTF-8`, no fallback.
public struct XMTPText: XMTPContentCodable {
    /// `xmtp.org/text:1.0`.
    public static let contentType = XMTPContentTypeID.text
    /// The text.
    public var text: String
    /// A text value.
    public init(_ text: String) { self.text = text }

    /// Text content as libxmtp's `TextCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        XMTPEncodedContent(type: Self.contentType, parameters: ["encoding": "UTF-8"], content: Array(text.utf8))
    }

    /// Decodes text; the `encoding` parameter defaults to UTF-8 and must be UTF-8.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPText {
        let content = try prepared(content)
        let encoding = content.parameters["encoding"] ?? "UTF-8"
        guard encoding == "UTF-8" else { throw .invalidContent(type: "text", reason: "unsupported text encoding \(encoding)") }
        guard let text = String(validating: content.content, as: UTF8.self) else {
            throw .invalidContent(type: "text", reason: "content is not valid UTF-8")
        }
        return XMTPText(text)
    }
}

/// `xmtp.org/reply:1.0`: parameters `reference`, `referenceInboxId` (optional), `contentType`; content is the
/// nested `EncodedContent` bytes.
public struct XMTPReply: XMTPContentCodable {
    /// `xmtp.org/reply:1.0`.
    public static let contentType = XMTPContentTypeID.reply
    /// The ID (hex) of the message replied to.
    public var reference: String
    /// The inbox ID of the replied-to message's sender.
    public var referenceInboxID: String?
    /// The reply's own content.
    public var content: XMTPEncodedContent

    /// A reply from its parts.
    public init(reference: String, referenceInboxID: String? = nil, content: XMTPEncodedContent) {
        self.reference = reference
        self.referenceInboxID = referenceInboxID
        self.content = content
    }

    /// libxmtp's fallback: quotes the text when the nested content is `text` that decodes.
    public var fallback: String {
        if content.type?.typeID == XMTPText.contentType.typeID, let text = try? textOfNested() {
            return "Replied with \"\(text)\" to an earlier message"
        }
        return "Replied to an earlier message"
    }

    /// Decodes the nested content as text the way libxmtp's fallback does (no type check beyond the type ID).
    private func textOfNested() throws(XMTPCodecError) -> String {
        let encoding = content.parameters["encoding"] ?? "UTF-8"
        guard encoding == "UTF-8", let text = String(validating: content.content, as: UTF8.self) else {
            throw .invalidContent(type: "text", reason: "not UTF-8 text")
        }
        return text
    }

    /// Reply content as libxmtp's `ReplyCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var parameters = ["reference": reference]
        if let type = content.type { parameters["contentType"] = type.description }
        if let referenceInboxID { parameters["referenceInboxId"] = referenceInboxID }
        return XMTPEncodedContent(type: Self.contentType, parameters: parameters, fallback: fallback, content: content.encoded())
    }

    /// Decodes a reply; a missing `reference` reads as empty, as in libxmtp.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPReply {
        let content = try prepared(content)
        let nested = try XMTPEncodedContent.decode(content.content)
        return XMTPReply(reference: content.parameters["reference"] ?? "",
                         referenceInboxID: content.parameters["referenceInboxId"], content: nested)
    }
}

/// A reaction's action (`ReactionAction` in xmtp/proto; `added`/`removed` in the legacy JSON).
public enum XMTPReactionAction: String, Sendable, Hashable, CaseIterable {
    /// `REACTION_ACTION_UNSPECIFIED = 0` (also any unknown value or string).
    case unspecified
    /// `REACTION_ACTION_ADDED = 1`.
    case added
    /// `REACTION_ACTION_REMOVED = 2`.
    case removed

    /// The protobuf enum value.
    public var wireValue: UInt64 {
        switch self {
        case .unspecified: 0
        case .added: 1
        case .removed: 2
        }
    }

    /// The action for a protobuf enum value (unknown values read as `.unspecified`).
    public init(wireValue: UInt64) {
        switch wireValue {
        case 1: self = .added
        case 2: self = .removed
        default: self = .unspecified
        }
    }
}

/// A reaction's schema (`ReactionSchema` in xmtp/proto; `unicode`/`shortcode`/`custom` in the legacy JSON).
public enum XMTPReactionSchema: String, Sendable, Hashable, CaseIterable {
    /// `REACTION_SCHEMA_UNSPECIFIED = 0` (also any unknown value or string).
    case unspecified
    /// `REACTION_SCHEMA_UNICODE = 1`.
    case unicode
    /// `REACTION_SCHEMA_SHORTCODE = 2`.
    case shortcode
    /// `REACTION_SCHEMA_CUSTOM = 3`.
    case custom

    /// The protobuf enum value.
    public var wireValue: UInt64 {
        switch self {
        case .unspecified: 0
        case .unicode: 1
        case .shortcode: 2
        case .custom: 3
        }
    }

    /// The schema for a protobuf enum value (unknown values read as `.unspecified`).
    public init(wireValue: UInt64) {
        switch wireValue {
        case 1: self = .unicode
        case 2: self = .shortcode
        case 3: self = .custom
        default: self = .unspecified
        }
    }
}

/// The fallback libxmtp writes for both reaction versions.
func reactionFallback(removed: Bool, content: String) -> String {
    removed ? "Removed \"\(content)\" from an earlier message" : "Reacted with \"\(content)\" to an earlier message"
}

/// `xmtp.org/reaction:2.0`: protobuf `ReactionV2 { 1: string reference, 2: string reference_inbox_id,
/// 3: ReactionAction action, 4: string content, 5: ReactionSchema schema }`, no parameters, with a fallback.
public struct XMTPReaction: XMTPContentCodable {
    /// `xmtp.org/reaction:2.0`.
    public static let contentType = XMTPContentTypeID.reaction
    /// The ID (hex) of the message reacted to.
    public var reference: String
    /// The inbox ID of that message's sender (empty when unknown).
    public var referenceInboxID: String
    /// Added or removed.
    public var action: XMTPReactionAction
    /// The emoji, shortcode or custom value.
    public var content: String
    /// How to read `content`.
    public var schema: XMTPReactionSchema

    /// A reaction from its parts.
    public init(reference: String, referenceInboxID: String = "", action: XMTPReactionAction, content: String,
                schema: XMTPReactionSchema) {
        self.reference = reference
        self.referenceInboxID = referenceInboxID
        self.action = action
        self.content = content
        self.schema = schema
    }

    /// Reaction content as libxmtp's `ReactionCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var writer = ProtobufWriter()
        writer.string(1, reference)
        writer.string(2, referenceInboxID)
        writer.uint64(3, action.wireValue)
        writer.string(4, content)
        writer.uint64(5, schema.wireValue)
        return XMTPEncodedContent(type: Self.contentType, fallback: reactionFallback(removed: action == .removed, content: content),
                                  content: writer.bytes)
    }

    /// Decodes a `ReactionV2`.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPReaction {
        let bytes = try prepared(content).content
        return try readProtobuf { () throws(ProtobufError) -> XMTPReaction in
            var reader = ProtobufReader(bytes)
            var reaction = XMTPReaction(reference: "", action: .unspecified, content: "", schema: .unspecified)
            while let (field, type) = try reader.nextField() {
                switch field {
                case 1: try reader.expect(type, .lengthDelimited, field: 1); reaction.reference = try reader.string()
                case 2: try reader.expect(type, .lengthDelimited, field: 2); reaction.referenceInboxID = try reader.string()
                case 3: try reader.expect(type, .varint, field: 3); reaction.action = XMTPReactionAction(wireValue: try reader.varint())
                case 4: try reader.expect(type, .lengthDelimited, field: 4); reaction.content = try reader.string()
                case 5: try reader.expect(type, .varint, field: 5); reaction.schema = XMTPReactionSchema(wireValue: try reader.varint())
                default: try reader.skip(type)
                }
            }
            return reaction
        }
    }
}

/// `xmtp.org/reaction:1.0`: the legacy JSON reaction
/// `{"action","reference","referenceInboxId"?,"schema","content"}` (serde_json's compact form, in that order).
public struct XMTPLegacyReaction: XMTPContentCodable {
    /// `xmtp.org/reaction:1.0`.
    public static let contentType = XMTPContentTypeID.legacyReaction
    /// The ID (hex) of the message reacted to.
    public var reference: String
    /// The inbox ID of that message's sender, when given.
    public var referenceInboxID: String?
    /// `added` or `removed` (any other string is kept as is).
    public var action: String
    /// The emoji, shortcode or custom value.
    public var content: String
    /// `unicode`, `shortcode` or `custom` (any other string is kept as is).
    public var schema: String

    /// A legacy reaction from its parts.
    public init(reference: String, referenceInboxID: String? = nil, action: String, content: String, schema: String) {
        self.reference = reference
        self.referenceInboxID = referenceInboxID
        self.action = action
        self.content = content
        self.schema = schema
    }

    /// The same reaction as `reaction:2.0` (unknown strings become `.unspecified`, as libxmtp converts them).
    public var v2: XMTPReaction {
        XMTPReaction(reference: reference, referenceInboxID: referenceInboxID ?? "",
                     action: XMTPReactionAction(rawValue: action) ?? .unspecified,
                     content: content,
                     schema: XMTPReactionSchema(rawValue: schema) ?? .unspecified)
    }

    /// Legacy reaction content as libxmtp's `LegacyReactionCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var fields: [(key: String, value: JSONValue)] = [("action", .string(action)), ("reference", .string(reference))]
        if let referenceInboxID { fields.append(("referenceInboxId", .string(referenceInboxID))) }
        fields += [("schema", .string(schema)), ("content", .string(content))]
        return XMTPEncodedContent(type: Self.contentType, fallback: reactionFallback(removed: action == "removed", content: content),
                                  content: Array(JSONValue.object(fields).serialized.utf8))
    }

    /// Decodes the JSON; `action`, `reference`, `schema` and `content` must be strings, `referenceInboxId` may be absent.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPLegacyReaction {
        let bytes = try prepared(content).content
        guard let text = String(validating: bytes, as: UTF8.self), let json = try? JSONValue.parse(text, maximumDepth: XMTPContent.maximumJSONDepth) else {
            throw .invalidContent(type: "reaction:1.0", reason: "content is not JSON")
        }
        /// A required string field of the JSON object.
        func field(_ name: String) throws(XMTPCodecError) -> String {
            guard case .string(let value)? = json[name] else {
                throw .invalidContent(type: "reaction:1.0", reason: "missing string field \(name)")
            }
            return value
        }
        var inbox: String?
        switch json["referenceInboxId"] {
        case nil, .null?: inbox = nil
        case .string(let value)?: inbox = value
        default: throw .invalidContent(type: "reaction:1.0", reason: "referenceInboxId is not a string")
        }
        return XMTPLegacyReaction(reference: try field("reference"), referenceInboxID: inbox, action: try field("action"),
                                  content: try field("content"), schema: try field("schema"))
    }
}

/// `xmtp.org/readReceipt:1.0`: empty content, no parameters, no fallback.
public struct XMTPReadReceipt: XMTPContentCodable {
    /// `xmtp.org/readReceipt:1.0`.
    public static let contentType = XMTPContentTypeID.readReceipt
    /// A read receipt.
    public init() {}
    /// An empty read receipt.
    public func encoded() -> XMTPEncodedContent { XMTPEncodedContent(type: Self.contentType) }
    /// Any read receipt content decodes (the bytes are ignored, as in libxmtp).
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPReadReceipt {
        _ = try prepared(content)
        return XMTPReadReceipt()
    }
}

/// `xmtp.org/attachment:1.0`: parameters `mimeType` and `filename` (optional), content = the file's bytes.
public struct XMTPAttachment: XMTPContentCodable {
    /// `xmtp.org/attachment:1.0`.
    public static let contentType = XMTPContentTypeID.attachment
    /// The file name, when known.
    public var filename: String?
    /// The MIME type.
    public var mimeType: String
    /// The file's bytes.
    public var data: [UInt8]

    /// An attachment from its parts.
    public init(filename: String?, mimeType: String, data: [UInt8]) {
        self.filename = filename
        self.mimeType = mimeType
        self.data = data
    }

    /// Attachment content as libxmtp's `AttachmentCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var parameters = ["mimeType": mimeType]
        if let filename { parameters["filename"] = filename }
        return XMTPEncodedContent(type: Self.contentType, parameters: parameters,
                                  fallback: "Can't display \(filename ?? "this content"). This app doesn't support attachments.",
                                  content: data)
    }

    /// Decodes an attachment; a missing `mimeType` reads as empty, as in libxmtp.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPAttachment {
        let content = try prepared(content)
        return XMTPAttachment(filename: content.parameters["filename"], mimeType: content.parameters["mimeType"] ?? "",
                              data: content.content)
    }
}

/// `xmtp.org/remoteStaticAttachment:1.0`: parameters `contentDigest`, `secret`, `salt`, `nonce` (hex), `scheme`,
/// `contentLength` and `filename` (both optional); content = the URL. Also `RemoteAttachmentInfo` in protobuf.
public struct XMTPRemoteAttachment: XMTPContentCodable {
    /// `xmtp.org/remoteStaticAttachment:1.0`.
    public static let contentType = XMTPContentTypeID.remoteAttachment
    /// Where the encrypted payload is.
    public var url: String
    /// Lowercase hex SHA-256 of the encrypted payload.
    public var contentDigest: String
    /// The 32-byte secret.
    public var secret: [UInt8]
    /// The HKDF salt.
    public var salt: [UInt8]
    /// The AES-GCM nonce.
    public var nonce: [UInt8]
    /// The URL scheme, `https://`.
    public var scheme: String
    /// The encrypted payload's size, when given.
    public var contentLength: UInt32?
    /// The file name, when given.
    public var filename: String?

    /// A remote attachment from its parts.
    public init(url: String, contentDigest: String, secret: [UInt8], salt: [UInt8], nonce: [UInt8], scheme: String,
                contentLength: UInt32? = nil, filename: String? = nil) {
        self.url = url
        self.contentDigest = contentDigest
        self.secret = secret
        self.salt = salt
        self.nonce = nonce
        self.scheme = scheme
        self.contentLength = contentLength
        self.filename = filename
    }

    /// Remote attachment content as libxmtp's `RemoteAttachmentCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var parameters = ["contentDigest": contentDigest, "salt": Digest.hex(salt), "nonce": Digest.hex(nonce),
                          "secret": Digest.hex(secret), "scheme": scheme]
        if let contentLength { parameters["contentLength"] = String(contentLength) }
        if let filename { parameters["filename"] = filename }
        return XMTPEncodedContent(
            type: Self.contentType, parameters: parameters,
            fallback: "Can't display \(filename ?? "this content"). This app doesn't support remote attachments.",
            content: Array(url.utf8))
    }

    /// Decodes a remote attachment; bad hex, a bad `contentLength` or a non-UTF-8 URL is an error.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPRemoteAttachment {
        let content = try prepared(content)
        /// A hex parameter's bytes (absent reads as empty).
        func hexParameter(_ name: String) throws(XMTPCodecError) -> [UInt8] {
            guard let bytes = Hex.decode(content.parameters[name] ?? "") else {
                throw .invalidContent(type: "remoteStaticAttachment", reason: "invalid hex in \(name) parameter")
            }
            return bytes
        }
        var length: UInt32?
        if let text = content.parameters["contentLength"] {
            guard let parsed = UInt32(text.hasPrefix("+") ? String(text.dropFirst()) : text) else {
                throw .invalidContent(type: "remoteStaticAttachment", reason: "invalid contentLength parameter '\(text)'")
            }
            length = parsed
        }
        guard let url = String(validating: content.content, as: UTF8.self) else {
            throw .invalidContent(type: "remoteStaticAttachment", reason: "URL is not valid UTF-8")
        }
        return XMTPRemoteAttachment(url: url, contentDigest: content.parameters["contentDigest"] ?? "",
                                    secret: try hexParameter("secret"), salt: try hexParameter("salt"),
                                    nonce: try hexParameter("nonce"), scheme: content.parameters["scheme"] ?? "",
                                    contentLength: length, filename: content.parameters["filename"])
    }

    /// `RemoteAttachmentInfo` protobuf: `1: content_digest`, `2: secret`, `3: nonce`, `4: salt`, `5: scheme`,
    /// `6: url`, `7: optional uint32 content_length`, `8: optional string filename`.
    public func infoEncoded() -> [UInt8] {
        var writer = ProtobufWriter()
        writer.string(1, contentDigest)
        writer.bytes(2, secret)
        writer.bytes(3, nonce)
        writer.bytes(4, salt)
        writer.string(5, scheme)
        writer.string(6, url)
        if let contentLength { writer.uint64(7, UInt64(contentLength), always: true) }
        if let filename { writer.string(8, filename, always: true) }
        return writer.bytes
    }

    /// Decodes `RemoteAttachmentInfo` protobuf.
    public static func decodeInfo(_ bytes: [UInt8]) throws(ProtobufError) -> XMTPRemoteAttachment {
        var reader = ProtobufReader(bytes)
        var info = XMTPRemoteAttachment(url: "", contentDigest: "", secret: [], salt: [], nonce: [], scheme: "")
        while let (field, type) = try reader.nextField() {
            switch field {
            case 1: try reader.expect(type, .lengthDelimited, field: 1); info.contentDigest = try reader.string()
            case 2: try reader.expect(type, .lengthDelimited, field: 2); info.secret = try reader.lengthDelimited()
            case 3: try reader.expect(type, .lengthDelimited, field: 3); info.nonce = try reader.lengthDelimited()
            case 4: try reader.expect(type, .lengthDelimited, field: 4); info.salt = try reader.lengthDelimited()
            case 5: try reader.expect(type, .lengthDelimited, field: 5); info.scheme = try reader.string()
            case 6: try reader.expect(type, .lengthDelimited, field: 6); info.url = try reader.string()
            case 7: try reader.expect(type, .varint, field: 7); info.contentLength = UInt32(truncatingIfNeeded: try reader.varint())
            case 8: try reader.expect(type, .lengthDelimited, field: 8); info.filename = try reader.string()
            default: try reader.skip(type)
            }
        }
        return info
    }
}

/// `xmtp.org/multiRemoteStaticAttachment:1.0`: protobuf `MultiRemoteAttachment { repeated RemoteAttachmentInfo
/// attachments = 1; }`, no parameters, a fixed fallback.
public struct XMTPMultiRemoteAttachment: XMTPContentCodable {
    /// `xmtp.org/multiRemoteStaticAttachment:1.0`.
    public static let contentType = XMTPContentTypeID.multiRemoteAttachment
    /// The attachments, in order.
    public var attachments: [XMTPRemoteAttachment]
    /// A multi-attachment from its attachments.
    public init(attachments: [XMTPRemoteAttachment]) { self.attachments = attachments }

    /// Multi-attachment content as libxmtp's `MultiRemoteAttachmentCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var writer = ProtobufWriter()
        for attachment in attachments { writer.message(1, attachment.infoEncoded()) }
        return XMTPEncodedContent(
            type: Self.contentType,
            fallback: "Can't display this content. This app doesn't support multiple remote attachments.",
            content: writer.bytes)
    }

    /// Decodes a `MultiRemoteAttachment`.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPMultiRemoteAttachment {
        let bytes = try prepared(content).content
        return try readProtobuf { () throws(ProtobufError) -> XMTPMultiRemoteAttachment in
            var reader = ProtobufReader(bytes)
            var attachments: [XMTPRemoteAttachment] = []
            while let (field, type) = try reader.nextField() {
                if field == 1 {
                    try reader.expect(type, .lengthDelimited, field: 1)
                    attachments.append(try XMTPRemoteAttachment.decodeInfo(try reader.lengthDelimited()))
                } else {
                    try reader.skip(type)
                }
            }
            return XMTPMultiRemoteAttachment(attachments: attachments)
        }
    }
}

/// `xmtp.org/deleteMessage:1.0`: protobuf `DeleteMessage { string message_id = 1; }`, no parameters, no fallback.
public struct XMTPDeleteMessage: XMTPContentCodable {
    /// `xmtp.org/deleteMessage:1.0`.
    public static let contentType = XMTPContentTypeID.deleteMessage
    /// The ID (hex) of the message to delete.
    public var messageID: String
    /// A delete request for `messageID`.
    public init(messageID: String) { self.messageID = messageID }

    /// Delete content as libxmtp's `DeleteMessageCodec` writes it.
    public func encoded() -> XMTPEncodedContent {
        var writer = ProtobufWriter()
        writer.string(1, messageID)
        return XMTPEncodedContent(type: Self.contentType, content: writer.bytes)
    }

    /// Decodes a `DeleteMessage`.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPDeleteMessage {
        let bytes = try prepared(content).content
        return try readProtobuf { () throws(ProtobufError) -> XMTPDeleteMessage in
            var reader = ProtobufReader(bytes)
            var result = XMTPDeleteMessage(messageID: "")
            while let (field, type) = try reader.nextField() {
                if field == 1 {
                    try reader.expect(type, .lengthDelimited, field: 1)
                    result.messageID = try reader.string()
                } else {
                    try reader.skip(type)
                }
            }
            return result
        }
    }
}

/// `xmtp.org/editMessage:1.0`: protobuf `EditMessage { string message_id = 1; EncodedContent edited_content = 2; }`
/// (defined in xmtp/proto; libxmtp has no codec for it yet, so this follows `deleteMessage`: no parameters, no fallback).
public struct XMTPEditMessage: XMTPContentCodable {
    /// `xmtp.org/editMessage:1.0`.
    public static let contentType = XMTPContentTypeID.editMessage
    /// The ID (hex) of the message to edit.
    public var messageID: String
    /// The new content.
    public var editedContent: XMTPEncodedContent?

    /// An edit of `messageID` to `editedContent`.
    public init(messageID: String, editedContent: XMTPEncodedContent?) {
        self.messageID = messageID
        self.editedContent = editedContent
    }

    /// Edit content in the same style as libxmtp's delete codec.
    public func encoded() -> XMTPEncodedContent {
        var writer = ProtobufWriter()
        writer.string(1, messageID)
        if let editedContent { writer.message(2, editedContent.encoded()) }
        return XMTPEncodedContent(type: Self.contentType, content: writer.bytes)
    }

    /// Decodes an `EditMessage`.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPEditMessage {
        let bytes = try prepared(content).content
        var result = XMTPEditMessage(messageID: "", editedContent: nil)
        var nested: [UInt8]?
        try readProtobuf { () throws(ProtobufError) in
            var reader = ProtobufReader(bytes)
            while let (field, type) = try reader.nextField() {
                switch field {
                case 1: try reader.expect(type, .lengthDelimited, field: 1); result.messageID = try reader.string()
                case 2: try reader.expect(type, .lengthDelimited, field: 2); nested = try reader.lengthDelimited()
                default: try reader.skip(type)
                }
            }
        }
        if let nested { result.editedContent = try XMTPEncodedContent.decode(nested) }
        return result
    }
}

