import SwitchboardCore

/// Why a JSON description of content could not be turned into content.
public struct XMTPContentJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// The JSON shapes of content values (field names as libxmtp's: `reference`, `referenceInboxId`, `action`, `content`,
/// `schema`, `url`, `contentDigest`, `secret`/`salt`/`nonce` in hex, `scheme`, `contentLength`, `filename`,
/// `mimeType`, `data` in base64, `messageId`, `editedContent`), used by `switchboard xmtp codec` and the tests.
extension XMTPContent {
    /// The deepest JSON nesting the codecs accept in content and on the command line.
    public static let maximumJSONDepth = 128

    /// The content type a name stands for: `text`, `reaction` (2.0), `reaction:1.0`, `xmtp.org/reply:1.0`, …
    public static func contentType(named name: String) -> XMTPContentTypeID? {
        if let parsed = XMTPContentTypeID(parsing: name) { return parsed }
        if let parsed = XMTPContentTypeID(parsing: "xmtp.org/" + name) { return parsed }
        let known: [XMTPContentTypeID] = [.text, .reply, .reaction, .readReceipt, .attachment, .remoteAttachment,
                                          .multiRemoteAttachment, .deleteMessage, .editMessage]
        return known.first { $0.typeID == name }
    }

    /// The content this value wraps: a reply's content or an edit's new content; nil for every other type.
    var nested: XMTPEncodedContent? {
        switch self {
        case .reply(let value): value.content
        case .editMessage(let value): value.editedContent
        default: nil
        }
    }

    /// The value as JSON (without type, parameters or fallback).
    public var json: JSONValue { json(depth: 1) }

    /// `json` for content nested at `depth` (1 for the outermost); nested content is described at `depth + 1`.
    func json(depth: Int) -> JSONValue {
        switch self {
        case .text(let value): return .string(value.text)
        case .reply(let value):
            var fields: [(key: String, value: JSONValue)] = [("reference", .string(value.reference))]
            if let inbox = value.referenceInboxID { fields.append(("referenceInboxId", .string(inbox))) }
            fields.append(("content", value.content.decodedJSON(depth: depth + 1)))
            return .object(fields)
        case .reaction(let value):
            return .object([("reference", .string(value.reference)), ("referenceInboxId", .string(value.referenceInboxID)),
                            ("action", .string(value.action.rawValue)), ("content", .string(value.content)),
                            ("schema", .string(value.schema.rawValue))])
        case .legacyReaction(let value):
            var fields: [(key: String, value: JSONValue)] = [("reference", .string(value.reference))]
            if let inbox = value.referenceInboxID { fields.append(("referenceInboxId", .string(inbox))) }
            fields += [("action", .string(value.action)), ("content", .string(value.content)), ("schema", .string(value.schema))]
            return .object(fields)
        case .readReceipt: return .object([])
        case .attachment(let value):
            var fields: [(key: String, value: JSONValue)] = []
            if let filename = value.filename { fields.append(("filename", .string(filename))) }
            fields += [("mimeType", .string(value.mimeType)), ("data", .string(Base64.encode(value.data)))]
            return .object(fields)
        case .remoteAttachment(let value): return Self.remoteJSON(value)
        case .multiRemoteAttachment(let value): return .object([("attachments", .array(value.attachments.map(Self.remoteJSON)))])
        case .deleteMessage(let value): return .object([("messageId", .string(value.messageID))])
        case .editMessage(let value):
            return .object([("messageId", .string(value.messageID)),
                            ("editedContent", value.editedContent?.decodedJSON(depth: depth + 1) ?? .null)])
        case .unknown(let content): return .object([("raw", .string(Base64.encode(content.content)))])
        }
    }

    /// A remote attachment's JSON object.
    private static func remoteJSON(_ value: XMTPRemoteAttachment) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [
            ("url", .string(value.url)), ("contentDigest", .string(value.contentDigest)), ("secret", .string(Digest.hex(value.secret))),
            ("salt", .string(Digest.hex(value.salt))), ("nonce", .string(Digest.hex(value.nonce))), ("scheme", .string(value.scheme)),
        ]
        if let length = value.contentLength { fields.append(("contentLength", .int(Int64(length)))) }
        if let filename = value.filename { fields.append(("filename", .string(filename))) }
        return .object(fields)
    }

    /// Builds content of type `typeName` (see `contentType(named:)`) from its JSON value.
    public static func fromJSON(type typeName: String, _ json: JSONValue) throws(XMTPContentJSONError) -> XMTPContent {
        guard let type = contentType(named: typeName) else { throw XMTPContentJSONError("unknown content type '\(typeName)'") }
        let reader = JSONFields(json: json, type: type.description)
        switch (type.typeID, type.versionMajor) {
        case ("text", 1):
            guard case .string(let text) = json else { throw XMTPContentJSONError("text content must be a JSON string") }
            return .text(XMTPText(text))
        case ("reply", 1):
            guard let nested = json["content"] else { throw XMTPContentJSONError("reply needs \"content\"") }
            return .reply(XMTPReply(reference: try reader.string("reference"), referenceInboxID: try reader.optionalString("referenceInboxId"),
                                    content: try encodedContent(fromJSON: nested)))
        case ("reaction", 1):
            return .legacyReaction(XMTPLegacyReaction(
                reference: try reader.string("reference"), referenceInboxID: try reader.optionalString("referenceInboxId"),
                action: try reader.string("action"), content: try reader.string("content"), schema: try reader.string("schema")))
        case ("reaction", 2):
            let action = try reader.string("action"), schema = try reader.string("schema")
            guard let parsedAction = XMTPReactionAction(rawValue: action) else {
                throw XMTPContentJSONError("action must be added, removed or unspecified (got '\(action)')")
            }
            guard let parsedSchema = XMTPReactionSchema(rawValue: schema) else {
                throw XMTPContentJSONError("schema must be unicode, shortcode, custom or unspecified (got '\(schema)')")
            }
            return .reaction(XMTPReaction(reference: try reader.string("reference"),
                                          referenceInboxID: try reader.optionalString("referenceInboxId") ?? "",
                                          action: parsedAction, content: try reader.string("content"), schema: parsedSchema))
        case ("readReceipt", 1):
            guard case .object = json else { throw XMTPContentJSONError("readReceipt content must be {}") }
            return .readReceipt
        case ("attachment", 1):
            guard let data = Base64.decode(try reader.string("data")) else { throw XMTPContentJSONError("data is not valid base64") }
            return .attachment(XMTPAttachment(filename: try reader.optionalString("filename"), mimeType: try reader.string("mimeType"),
                                              data: data))
        case ("remoteStaticAttachment", 1): return .remoteAttachment(try remote(fromJSON: json))
        case ("multiRemoteStaticAttachment", 1):
            guard case .array(let items)? = json["attachments"] else { throw XMTPContentJSONError("\"attachments\" must be an array") }
            var attachments: [XMTPRemoteAttachment] = []
            for item in items { attachments.append(try remote(fromJSON: item)) }
            return .multiRemoteAttachment(XMTPMultiRemoteAttachment(attachments: attachments))
        case ("deleteMessage", 1): return .deleteMessage(XMTPDeleteMessage(messageID: try reader.string("messageId")))
        case ("editMessage", 1):
            var edited: XMTPEncodedContent?
            if let nested = json["editedContent"], nested != .null { edited = try encodedContent(fromJSON: nested) }
            return .editMessage(XMTPEditMessage(messageID: try reader.string("messageId"), editedContent: edited))
        default:
            throw XMTPContentJSONError("no codec for \(type)")
        }
    }

    /// A remote attachment from its JSON object.
    private static func remote(fromJSON json: JSONValue) throws(XMTPContentJSONError) -> XMTPRemoteAttachment {
        let reader = JSONFields(json: json, type: "remote attachment")
        /// A required hex field's bytes.
        func hex(_ name: String) throws(XMTPContentJSONError) -> [UInt8] {
            guard let bytes = Hex.decode(try reader.string(name)) else { throw XMTPContentJSONError("\(name) is not hex") }
            return bytes
        }
        var length: UInt32?
        switch json["contentLength"] {
        case nil, .null?: length = nil
        case .number(let text)?:
            guard let number = Double(text), number >= 0, number <= Double(UInt32.max), number.rounded() == number else {
                throw XMTPContentJSONError("contentLength must be an integer from 0 to \(UInt32.max)")
            }
            length = UInt32(number)
        default: throw XMTPContentJSONError("contentLength must be a number")
        }
        return XMTPRemoteAttachment(url: try reader.string("url"), contentDigest: try reader.string("contentDigest"),
                                    secret: try hex("secret"), salt: try hex("salt"), nonce: try hex("nonce"),
                                    scheme: try reader.string("scheme"), contentLength: length,
                                    filename: try reader.optionalString("filename"))
    }

    /// Nested content (a reply's or an edit's): `{"type": T, "content": value}` encoded with T's codec, or
    /// `{"hex": "…"}` holding `EncodedContent` bytes as they are.
    public static func encodedContent(fromJSON json: JSONValue) throws(XMTPContentJSONError) -> XMTPEncodedContent {
        if case .string(let hex)? = json["hex"] {
            guard let bytes = Hex.decode(hex) else { throw XMTPContentJSONError("nested hex is not hex") }
            do { return try XMTPEncodedContent.decode(bytes) } catch { throw XMTPContentJSONError("nested content: \(error)") }
        }
        guard case .string(let type)? = json["type"], let value = json["content"] else {
            throw XMTPContentJSONError("nested content must be {\"type\": T, \"content\": value} or {\"hex\": H}")
        }
        if case .string(let raw)? = value["raw"] {
            // Content of a type without a codec, as `decodedJSON()` prints it: rebuilt as it was.
            guard let typeID = XMTPContentTypeID(parsing: type) else { throw XMTPContentJSONError("bad content type '\(type)'") }
            guard let bytes = Base64.decode(raw) else { throw XMTPContentJSONError("raw is not valid base64") }
            var parameters: [String: String] = [:]
            if case .object(let fields)? = json["parameters"] {
                for (key, entry) in fields {
                    guard case .string(let text) = entry else { throw XMTPContentJSONError("parameter \(key) is not a string") }
                    parameters[key] = text
                }
            }
            let reader = JSONFields(json: json, type: "nested content")
            return XMTPEncodedContent(type: typeID, parameters: parameters, fallback: try reader.optionalString("fallback"), content: bytes)
        }
        return try fromJSON(type: type, value).encoded()
    }
}

extension XMTPEncodedContent {
    /// The deepest chain of nested content (a reply to a reply of an edit…) `decodedJSON()` follows: each level costs
    /// a few bytes on the wire but a stack frame and a copy of the rest here, and its JSON must stay within
    /// `XMTPContent.maximumJSONDepth` (two JSON levels per nesting) so `fromJSON` can read it back.
    public static let maximumNestingDepth = 32

    /// `{"type": "authority/type:major.minor", "parameters": {…}, "fallback": …, "content": value}` (plus
    /// `"compression"` when set, and `"error"` with `content: null` when a known type fails to decode or nests
    /// deeper than `maximumNestingDepth`).
    public func decodedJSON() -> JSONValue {
        decodedJSON(depth: 1)
    }

    /// `decodedJSON()` for content nested at `depth` (1 for the outermost).
    func decodedJSON(depth: Int) -> JSONValue {
        var fields: [(key: String, value: JSONValue)] = [
            ("type", type.map { .string($0.description) } ?? .null),
            ("parameters", .object(parameters.mapValues { JSONValue.string($0) })),
            ("fallback", fallback.map { .string($0) } ?? .null),
        ]
        if let compression { fields.append(("compression", .string(compression.description))) }
        do throws(XMTPCodecError) {
            let content = try XMTPContent.decode(self)
            if depth >= Self.maximumNestingDepth, content.nested != nil {
                throw XMTPCodecError.invalidContent(type: type?.typeID ?? "unknown",
                                                    reason: "nested content deeper than \(Self.maximumNestingDepth) levels")
            }
            fields.append(("content", content.json(depth: depth)))
        } catch {
            fields += [("content", .null), ("error", .string(error.description))]
        }
        return .object(fields)
    }
}

/// Typed field access on a JSON object, with errors naming the field.
struct JSONFields {
    /// The object.
    let json: JSONValue
    /// What the object describes, for messages.
    let type: String

    /// A required string field.
    func string(_ name: String) throws(XMTPContentJSONError) -> String {
        guard case .object = json else { throw XMTPContentJSONError("\(type) content must be a JSON object") }
        guard case .string(let value)? = json[name] else { throw XMTPContentJSONError("\(type) needs a string \"\(name)\"") }
        return value
    }

    /// An optional string field (absent or null gives nil).
    func optionalString(_ name: String) throws(XMTPContentJSONError) -> String? {
        switch json[name] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        default: throw XMTPContentJSONError("\"\(name)\" must be a string")
        }
    }
}
