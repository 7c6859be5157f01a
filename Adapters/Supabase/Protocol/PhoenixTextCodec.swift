import SwitchboardCore
/// Encodes and decodes Phoenix text frames for serializer versions 1.0.0 and 2.0.0.
public enum PhoenixTextCodec {
    /// The `vsn` query parameter's serializer version.
    public enum Version: Sendable, Hashable {
        /// `1.0.0`: `{"topic","event","payload","ref","join_ref"}`.
        case v1
        /// `2.0.0`: `[join_ref, ref, topic, event, payload]`.
        case v2

        /// The version for a `vsn` value (`2.0.0` → v2, anything else → v1, as Phoenix defaults).
        public init(vsn: String?) { self = vsn?.hasPrefix("2.") == true ? .v2 : .v1 }
    }

    /// Decodes one text frame.
    public static func decode(_ text: String, version: Version) throws(PhoenixFrameError) -> PhoenixMessage {
        guard let json = JSONValue.parseOrNil(text) else { throw .invalidJSON }
        switch version {
        case .v1:
            guard let object = json.objectValue else { throw .invalidShape("expected a JSON object") }
            guard let topic = object["topic"]?.stringValue else { throw .invalidShape("topic must be a string") }
            guard let event = object["event"]?.stringValue else { throw .invalidShape("event must be a string") }
            guard let payload = object["payload"] else { throw .invalidShape("payload is missing") }
            return PhoenixMessage(joinRef: try ref(object["join_ref"], "join_ref"), ref: try ref(object["ref"], "ref"),
                                  topic: topic, event: event, payload: payload)
        case .v2:
            guard let elements = json.arrayValue, elements.count >= 5 else {
                throw .invalidShape("expected [join_ref, ref, topic, event, payload]")
            }
            guard let topic = elements[2].stringValue else { throw .invalidShape("topic must be a string") }
            guard let event = elements[3].stringValue else { throw .invalidShape("event must be a string") }
            return PhoenixMessage(joinRef: try ref(elements[0], "join_ref"), ref: try ref(elements[1], "ref"),
                                  topic: topic, event: event, payload: elements[4])
        }
    }

    /// Encodes one text frame (object keys sorted).
    public static func encode(_ message: PhoenixMessage, version: Version) -> String {
        let joinRef = message.joinRef.map(JSONValue.string) ?? .null
        let ref = message.ref.map(JSONValue.string) ?? .null
        switch version {
        case .v1:
            return JSONValue.object(["join_ref": joinRef, "ref": ref, "topic": .string(message.topic),
                                       "event": .string(message.event), "payload": message.payload]).serialized
        case .v2:
            return JSONValue.array([joinRef, ref, .string(message.topic), .string(message.event), message.payload]).serialized
        }
    }

    /// A ref: a string, null/absent as nil, or an integer taken as its decimal text.
    private static func ref(_ value: JSONValue?, _ name: String) throws(PhoenixFrameError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?: return text
        case .number(let text)? where Int64(text) != nil: return text
        default: throw .invalidShape("\(name) must be a string or null")
        }
    }
}
