import Foundation
import SwitchboardCore

/// Hand-written JSON codecs for the values the stores keep as JSON, readable by and reading `JSONEncoder`'s output.
///
/// Metadata and remote parameters (`[String: String]`), ID lists (`[String]`) and prepared messages are coded on every
/// message write and read; `JSONEncoder`/`JSONDecoder` cost tens of microseconds per value there, these a fraction.
/// The decoders accept any valid JSON of the right shape (what `JSONEncoder` wrote, `\/` and `\uXXXX` escapes
/// included) and return nil for anything else, which the stores report as corruption.
public enum StoreJSON {
    // MARK: [String: String]

    /// JSON object text of `dictionary`, keys sorted so equal dictionaries give equal text.
    public static func encode(_ dictionary: [String: String]) -> String {
        if dictionary.isEmpty { return "{}" }
        var out: [UInt8] = []
        out.reserveCapacity(dictionary.reduce(2) { $0 + $1.key.utf8.count + $1.value.utf8.count + 6 })
        out.append(UInt8(ascii: "{"))
        for (index, member) in dictionary.sorted(by: { $0.key < $1.key }).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONStringLiteral.append(member.key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSONStringLiteral.append(member.value, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The dictionary in JSON object text whose values are all strings, or nil when the text is anything else.
    ///
    /// A repeated key keeps its last value.
    public static func decodeStringDictionary(_ text: String) -> [String: String]? {
        guard case .object(let members)? = JSONValue.parseOrNil(text) else { return nil }
        var dictionary: [String: String] = [:]
        dictionary.reserveCapacity(members.count)
        for member in members {
            guard case .string(let value) = member.value else { return nil }
            dictionary[member.key] = value
        }
        return dictionary
    }

    // MARK: [String]

    /// JSON array text of `strings`, in order.
    public static func encode(_ strings: [String]) -> String {
        if strings.isEmpty { return "[]" }
        var out: [UInt8] = []
        out.reserveCapacity(strings.reduce(2) { $0 + $1.utf8.count + 3 })
        out.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONStringLiteral.append(string, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// The strings of JSON array text whose elements are all strings, or nil when the text is anything else.
    public static func decodeStringArray(_ text: String) -> [String]? {
        guard case .array(let elements)? = JSONValue.parseOrNil(text) else { return nil }
        var strings: [String] = []
        strings.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let string) = element else { return nil }
            strings.append(string)
        }
        return strings
    }

    // MARK: PreparedMessage

    /// The JSON form `JSONEncoder` (sorted keys) gives a prepared message: `conversation`, `id`, `payload` as
    /// padded base64 and `remoteID` unless nil, as UTF-8 bytes.
    public static func encode(_ prepared: PreparedMessage) -> Data {
        let payload = prepared.payload.base64EncodedString()
        var out: [UInt8] = []
        out.reserveCapacity(64 + prepared.conversation.rawValue.utf8.count + prepared.id.rawValue.utf8.count
                            + (prepared.remoteID?.rawValue.utf8.count ?? 0) + payload.utf8.count)
        out.append(contentsOf: #"{"conversation":"#.utf8)
        JSONStringLiteral.append(prepared.conversation.rawValue, to: &out)
        out.append(contentsOf: #","id":"#.utf8)
        JSONStringLiteral.append(prepared.id.rawValue, to: &out)
        // Base64 digits need no escaping (`JSONEncoder` escaped the slashes; either form reads back the same).
        out.append(contentsOf: #","payload":""#.utf8)
        out.append(contentsOf: payload.utf8)
        out.append(UInt8(ascii: "\""))
        if let remoteID = prepared.remoteID {
            out.append(contentsOf: #","remoteID":"#.utf8)
            JSONStringLiteral.append(remoteID.rawValue, to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return Data(out)
    }

    /// The prepared message in its JSON form, or nil when the bytes are not that form.
    ///
    /// Reads what `JSONDecoder` reads: `id`, `conversation` and a padded base64 `payload` are required strings,
    /// `remoteID` a string, null or absent; other members are ignored.
    public static func decodePreparedMessage(_ bytes: Data) -> PreparedMessage? {
        guard case .object(let members)? = JSONValue.parseOrNil(bytes) else { return nil }
        var id: String?
        var conversation: String?
        var remoteID: String?
        var payload: Data?
        for member in members {
            switch member.key {
            case "id":
                guard case .string(let value) = member.value else { return nil }
                id = value
            case "conversation":
                guard case .string(let value) = member.value else { return nil }
                conversation = value
            case "remoteID":
                switch member.value {
                case .string(let value): remoteID = value
                case .null: remoteID = nil
                default: return nil
                }
            case "payload":
                guard case .string(let value) = member.value, let data = Data(base64Encoded: value) else { return nil }
                payload = data
            default:
                continue
            }
        }
        guard let id, let conversation, let payload else { return nil }
        return PreparedMessage(id: MessageID(id), conversation: ConversationID(conversation),
                               remoteID: remoteID.map(RemoteID.init), payload: payload)
    }
}
