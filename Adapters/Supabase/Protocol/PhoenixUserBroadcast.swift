import SwitchboardCore
/// A server→client binary "user broadcast" frame (kind 0x04) of Supabase Realtime's V2 serializer.
///
/// Layout: `04 topic_size user_event_size metadata_size encoding`
/// then topic, user_event, metadata (JSON, may be empty), payload (rest).
public struct PhoenixUserBroadcast: Sendable, Hashable {
    /// The frame kind byte.
    public static let kind: UInt8 = 4

    /// The channel topic.
    public var topic: String
    /// The user's broadcast event name.
    public var userEvent: String
    /// Metadata object, nil for none (size 0).
    public var metadata: [String: JSONValue]?
    /// How `payload` is encoded.
    public var encoding: PhoenixPayloadEncoding
    /// The user payload bytes.
    public var payload: [UInt8]

    /// A frame with every field given.
    public init(topic: String, userEvent: String, metadata: [String: JSONValue]? = nil,
                encoding: PhoenixPayloadEncoding, payload: [UInt8]) {
        self.topic = topic
        self.userEvent = userEvent
        self.metadata = metadata
        self.encoding = encoding
        self.payload = payload
    }

    /// The frame relaying `push` to other subscribers (metadata dropped when empty).
    public init(relaying push: PhoenixUserBroadcastPush) {
        self.init(topic: push.topic, userEvent: push.userEvent, metadata: push.metadata.isEmpty ? nil : push.metadata,
                  encoding: push.encoding, payload: push.payload)
    }

    /// Encodes the 0x04 frame.
    public func encode() throws(PhoenixFrameError) -> [UInt8] {
        let topicBytes = Array(topic.utf8), eventBytes = Array(userEvent.utf8)
        let metadataBytes = metadata.map { Array(JSONValue.object($0).serialized.utf8) } ?? []
        var out: [UInt8] = [Self.kind,
                            try PhoenixByteReader.length(topicBytes, "topic"),
                            try PhoenixByteReader.length(eventBytes, "user_event"),
                            try PhoenixByteReader.length(metadataBytes, "metadata"),
                            encoding.rawValue]
        out += topicBytes + eventBytes + metadataBytes + payload
        return out
    }

    /// Decodes a 0x04 frame (as a client would).
    public static func decode(_ bytes: [UInt8]) throws(PhoenixFrameError) -> PhoenixUserBroadcast {
        var reader = PhoenixByteReader(bytes)
        guard try reader.byte() == kind else { throw .invalidBinary("expected user broadcast (0x04)") }
        let topicSize = Int(try reader.byte()), eventSize = Int(try reader.byte()), metadataSize = Int(try reader.byte())
        let encoding: PhoenixPayloadEncoding = try reader.byte() == 0 ? .binary : .json
        let topic = try reader.text(topicSize, "topic")
        let userEvent = try reader.text(eventSize, "user_event")
        var metadata: [String: JSONValue]?
        if metadataSize > 0 {
            guard let object = JSONValue.parseOrNil(try reader.take(metadataSize))?.objectValue else {
                throw .invalidBinary("metadata is not a JSON object")
            }
            metadata = object
        }
        return PhoenixUserBroadcast(topic: topic, userEvent: userEvent, metadata: metadata, encoding: encoding,
                                    payload: reader.rest())
    }
}
