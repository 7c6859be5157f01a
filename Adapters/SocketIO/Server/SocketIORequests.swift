import Foundation
import SocketIOProtocol
import SwitchboardCore

/// A request body that must be one JSON object, with typed field access; failures are 400 `bad_request`.
struct SocketIOJSONBody: Sendable {
    /// The deepest nesting a body may have, so hostile input cannot exhaust the stack.
    static let maximumDepth = 32

    /// The object's members (the last one wins when a key repeats).
    let fields: [String: JSONValue]

    /// Parses `data` strictly; an empty body reads as `{}`.
    init(_ data: Data) throws(SocketIOServerError) {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) {
            fields = [:]
            return
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(data, maximumDepth: Self.maximumDepth)
        } catch {
            throw .badRequest("malformed JSON: \(error.message)")
        }
        guard case .object(let pairs) = value else { throw .badRequest("the body must be a JSON object") }
        var fields: [String: JSONValue] = [:]
        for (key, value) in pairs { fields[key] = value }
        self.fields = fields
    }

    /// The value of `name`; `null` counts as absent.
    func value(_ name: String) -> JSONValue? {
        guard let value = fields[name], !value.isNull else { return nil }
        return value
    }

    /// A string field.
    func string(_ name: String) throws(SocketIOServerError) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value else { throw .badRequest("\(name) must be a string") }
        return text
    }

    /// A required string field.
    func requiredString(_ name: String) throws(SocketIOServerError) -> String {
        guard let text = try string(name) else { throw .badRequest("\(name) is required") }
        return text
    }

    /// An array of strings.
    func strings(_ name: String) throws(SocketIOServerError) -> [String]? {
        guard let value = value(name) else { return nil }
        guard case .array(let items) = value else { throw .badRequest("\(name) must be an array of strings") }
        var out: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw .badRequest("\(name) must be an array of strings") }
            out.append(text)
        }
        return out
    }
}

/// Validation of the identifiers and fields of WIRE.md; pure, so it is tested without sockets.
enum SocketIOValidation {
    /// Whether `text` is a valid user or conversation ID (`SocketIOIdentifier`).
    static func isValidID(_ text: String) -> Bool { SocketIOIdentifier.isValid(text) }

    /// Checks an ID field, naming it in the error.
    static func id(_ text: String, field: String) throws(SocketIOServerError) -> String {
        guard isValidID(text) else { throw .badRequest("\(field) must be 1–128 characters of [A-Za-z0-9._@:-]") }
        return text
    }

    /// A list of user IDs, deduplicated in order.
    static func userIDs(_ list: [String], field: String) throws(SocketIOServerError) -> [String] {
        var seen = Set<String>(), out: [String] = []
        for text in list where seen.insert(try id(text, field: field)).inserted { out.append(text) }
        return out
    }

    /// A message ID: a positive decimal integer (as a string in paths and `replyTo`).
    static func messageID(_ text: String, field: String) throws(SocketIOServerError) -> Int64 {
        guard !text.isEmpty, text.utf8.count <= 19, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
              let value = Int64(text), value > 0 else {
            throw .badRequest("\(field) must be a message id (a positive decimal integer)")
        }
        return value
    }

    /// Whether `text` has no control characters.
    static func hasNoControlCharacters(_ text: String) -> Bool {
        !text.unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }

    /// Whether `byte` is an ASCII hex digit.
    static func isHexDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// A 64-digit hex SHA-256, lowercased.
    static func sha256(_ text: String) -> String? {
        guard text.utf8.count == 64, text.utf8.allSatisfy(isHexDigit) else { return nil }
        return text.lowercased()
    }

    /// Checks message text against the byte limit.
    static func text(_ text: String, maxBytes: Int) throws(SocketIOServerError) -> String {
        guard text.utf8.count <= maxBytes else {
            throw .badRequest("text is \(text.utf8.count) UTF-8 bytes; at most \(maxBytes) are allowed")
        }
        return text
    }

    /// The attachments array of a new message: objects with a `url` and optional `name`, `mimeType`, `size`,
    /// `sha256`; unknown keys are dropped.
    static func attachments(_ value: JSONValue?, max: Int) throws(SocketIOServerError) -> JSONValue {
        guard let value else { return .array([]) }
        guard case .array(let items) = value else { throw .badRequest("attachments must be an array") }
        guard items.count <= max else { throw .badRequest("at most \(max) attachments are allowed, got \(items.count)") }
        var out: [JSONValue] = []
        for (index, item) in items.enumerated() {
            let label = "attachments[\(index)]"
            guard case .object = item else { throw .badRequest("\(label) must be an object") }
            var fields: [(key: String, value: JSONValue)] = []
            guard case .string(let url)? = item["url"], !url.isEmpty, url.utf8.count <= 2048, hasNoControlCharacters(url) else {
                throw .badRequest("\(label).url is required (a string of at most 2048 bytes)")
            }
            fields.append((key: "url", value: .string(url)))
            for key in ["name", "mimeType"] {
                guard let field = item[key], !field.isNull else { continue }
                guard case .string(let text) = field, text.utf8.count <= 512 else {
                    throw .badRequest("\(label).\(key) must be a string of at most 512 bytes")
                }
                fields.append((key: key, value: .string(text)))
            }
            if let size = item["size"], !size.isNull {
                guard let number = size.intValue, number >= 0 else { throw .badRequest("\(label).size must be a non-negative integer") }
                fields.append((key: "size", value: .int(number)))
            }
            if let digest = item["sha256"], !digest.isNull {
                guard let text = digest.stringValue, let hex = sha256(text) else {
                    throw .badRequest("\(label).sha256 must be 64 hex digits")
                }
                fields.append((key: "sha256", value: .string(hex)))
            }
            out.append(.object(fields))
        }
        return .array(out)
    }

    /// The largest serialized `metadata` object.
    static let maxMetadataBytes = 16 << 10

    /// The metadata of a new message: an object of at most `maxMetadataBytes` when serialized.
    static func metadata(_ value: JSONValue?) throws(SocketIOServerError) -> JSONValue? {
        guard let value else { return nil }
        guard case .object = value else { throw .badRequest("metadata must be an object") }
        guard value.serialized.utf8.count <= maxMetadataBytes else {
            throw .badRequest("metadata is larger than \(maxMetadataBytes) bytes")
        }
        return value
    }

    /// A reaction emoji: 1–64 UTF-8 bytes, no control characters.
    static func emoji(_ text: String) throws(SocketIOServerError) -> String {
        guard (1...64).contains(text.utf8.count), hasNoControlCharacters(text),
              !text.unicodeScalars.allSatisfy({ $0.properties.isWhitespace }) else {
            throw .badRequest("emoji must be 1–64 UTF-8 bytes without control characters")
        }
        return text
    }

    /// The `clientMessageId` of a `POST …/messages` body: 1–128 UTF-8 bytes without control characters.
    static func clientMessageID(_ body: SocketIOJSONBody) throws(SocketIOServerError) -> String {
        let clientMessageID = try body.requiredString("clientMessageId")
        guard (1...128).contains(clientMessageID.utf8.count), hasNoControlCharacters(clientMessageID) else {
            throw .badRequest("clientMessageId must be 1–128 UTF-8 bytes without control characters")
        }
        return clientMessageID
    }

    /// A new message's fields from a `POST …/messages` body.
    static func messageInput(_ body: SocketIOJSONBody, maxTextBytes: Int, maxAttachments: Int) throws(SocketIOServerError)
        -> SocketIOMessageInput {
        let clientMessageID = try clientMessageID(body)
        let text = try Self.text(try body.string("text") ?? "", maxBytes: maxTextBytes)
        let replyTo = try body.string("replyTo").map { text throws(SocketIOServerError) in try messageID(text, field: "replyTo") }
        let attachments = try Self.attachments(body.value("attachments"), max: maxAttachments)
        if text.isEmpty, attachments.arrayValue?.isEmpty ?? true {
            throw .badRequest("a message needs text or at least one attachment")
        }
        return SocketIOMessageInput(clientMessageID: clientMessageID, text: text, replyTo: replyTo, attachments: attachments,
                                    metadata: try metadata(body.value("metadata")))
    }
}
