import SwitchboardCore
/// A client→server binary "user broadcast push" frame (kind 0x03) of Supabase Realtime's V2 serializer.
///
/// Layout: `03 join_ref_size ref_size topic_size user_event_size metadata_size encoding`
/// then join_ref, ref, topic, user_event, metadata (JSON, may be empty), payload (rest).
public struct PhoenixUserBroadcastPush: Sendable, Hashable {
    /// The frame kind byte.
    public static let kind: UInt8 = 3

    /// The channel's join ref.
    public var joinRef: String
    /// This push's ref.
    public var ref: String
    /// The channel topic.
    public var topic: String
    /// The user's broadcast event name (the frame's Phoenix event is `broadcast`).
    public var userEvent: String
    /// Metadata object (empty when the frame carries none).
    public var metadata: [String: JSONValue]
    /// How `payload` is encoded.
    public var encoding: PhoenixPayloadEncoding
    /// The user payload bytes.
    public var payload: [UInt8]

    /// A frame with every field given.
    public init(joinRef: String, ref: String, topic: String, userEvent: String,
                metadata: [String: JSONValue] = [:], encoding: PhoenixPayloadEncoding, payload: [UInt8]) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.userEvent = userEvent
        self.metadata = metadata
        self.encoding = encoding
        self.payload = payload
    }

    /// The payload parsed as JSON when `encoding` is `.json`.
    public var jsonPayload: JSONValue? { encoding == .json ? JSONValue.parseOrNil(payload) : nil }

    /// Decodes a 0x03 frame.
    public static func decode(_ bytes: [UInt8]) throws(PhoenixFrameError) -> PhoenixUserBroadcastPush {
        var reader = PhoenixByteReader(bytes)
        guard try reader.byte() == kind else { throw .invalidBinary("expected user broadcast push (0x03)") }
        let joinRefSize = Int(try reader.byte()), refSize = Int(try reader.byte()), topicSize = Int(try reader.byte())
        let eventSize = Int(try reader.byte()), metadataSize = Int(try reader.byte())
        // The server treats any non-zero encoding byte as JSON.
        let encoding: PhoenixPayloadEncoding = try reader.byte() == 0 ? .binary : .json
        let joinRef = try reader.text(joinRefSize, "join_ref")
        let ref = try reader.text(refSize, "ref")
        let topic = try reader.text(topicSize, "topic")
        let userEvent = try reader.text(eventSize, "user_event")
        var metadata: [String: JSONValue] = [:]
        if metadataSize > 0 {
            guard let object = JSONValue.parseOrNil(try reader.take(metadataSize))?.objectValue else {
                throw .invalidBinary("metadata is not a JSON object")
            }
            metadata = object
        }
        let payload = reader.rest()
        if encoding == .json, JSONValue.parseOrNil(payload) == nil { throw .invalidBinary("payload is not JSON") }
        return PhoenixUserBroadcastPush(joinRef: joinRef, ref: ref, topic: topic, userEvent: userEvent,
                                        metadata: metadata, encoding: encoding, payload: payload)
    }

    /// Encodes the 0x03 frame (as a client would).
    public func encode() throws(PhoenixFrameError) -> [UInt8] {
        let joinRefBytes = Array(joinRef.utf8), refBytes = Array(ref.utf8), topicBytes = Array(topic.utf8)
        let eventBytes = Array(userEvent.utf8)
        let metadataBytes = metadata.isEmpty ? [] : Array(JSONValue.object(metadata).serialized.utf8)
        var out: [UInt8] = [Self.kind,
                            try PhoenixByteReader.length(joinRefBytes, "join_ref"),
                            try PhoenixByteReader.length(refBytes, "ref"),
                            try PhoenixByteReader.length(topicBytes, "topic"),
                            try PhoenixByteReader.length(eventBytes, "user_event"),
                            try PhoenixByteReader.length(metadataBytes, "metadata"),
                            encoding.rawValue]
        out += joinRefBytes + refBytes + topicBytes + eventBytes + metadataBytes + payload
        return out
    }
}
