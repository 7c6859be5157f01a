import SupabaseProtocol
import Testing

@Suite struct PhoenixBinaryTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    // Vectors from supabase/realtime test/realtime_web/socket/v2_serializer_test.exs.
    @Test func decodesBinaryUserBroadcastPush() throws {
        let frame: [UInt8] = [3, 2, 3, 5, 10, 0, 0] + bytes("12123topicuser_event") + [101, 102, 103]
        let push = try PhoenixUserBroadcastPush.decode(frame)
        #expect(push == PhoenixUserBroadcastPush(joinRef: "12", ref: "123", topic: "topic", userEvent: "user_event",
                                                 encoding: .binary, payload: [101, 102, 103]))
        #expect(try push.encode() == frame)
    }

    @Test func decodesJSONUserBroadcastPushWithMetadata() throws {
        let frame: [UInt8] = [3, 2, 3, 5, 10, 0, 1] + bytes("12123topicuser_event") + bytes(#"{"a":"b"}"#)
        let push = try PhoenixUserBroadcastPush.decode(frame)
        #expect(push.encoding == .json)
        #expect(push.jsonPayload == ["a": "b"])
        let withMetadata: [UInt8] = [3, 2, 3, 5, 10, 14, 0] + bytes("12123topicuser_event") + bytes(#"{"store":true}"#) + [101, 102, 103]
        let stored = try PhoenixUserBroadcastPush.decode(withMetadata)
        #expect(stored.metadata == ["store": true])
        #expect(stored.payload == [101, 102, 103])
        #expect(try stored.encode() == withMetadata)
    }

    @Test func encodesUserBroadcastExactly() throws {
        let withMetadata = PhoenixUserBroadcast(topic: "topic", userEvent: "user_event", metadata: ["replayed": true],
                                                encoding: .binary, payload: [101, 102, 103])
        #expect(try withMetadata.encode() == [4, 5, 10, 17, 0] + bytes("topicuser_event") + bytes(#"{"replayed":true}"#) + [101, 102, 103])
        let plain = PhoenixUserBroadcast(topic: "topic", userEvent: "user_event", encoding: .binary, payload: [101, 102, 103])
        #expect(try plain.encode() == [4, 5, 10, 0, 0] + bytes("topicuser_event") + [101, 102, 103])
        let json = PhoenixUserBroadcast(topic: "topic", userEvent: "user_event", metadata: ["replayed": true],
                                        encoding: .json, payload: bytes(#"{"a":"b"}"#))
        let encoded = try json.encode()
        #expect(encoded[4] == 1)
        #expect(try PhoenixUserBroadcast.decode(encoded) == json)
    }

    @Test func relaysPushAsBroadcast() throws {
        let push = PhoenixUserBroadcastPush(joinRef: "1", ref: "2", topic: "realtime:room", userEvent: "typing",
                                            encoding: .json, payload: bytes(#"{"u":1}"#))
        let relay = PhoenixUserBroadcast(relaying: try PhoenixUserBroadcastPush.decode(push.encode()))
        #expect(try relay.encode() == [4, 13, 6, 0, 1] + bytes("realtime:roomtyping") + bytes(#"{"u":1}"#))
    }

    @Test func rejectsMalformedBinaryFrames() {
        let bad: [[UInt8]] = [
            [],
            [4, 5, 10, 0, 0] + bytes("topicuser_event"),  // wrong kind for a client push
            [0, 2, 3, 5, 5] + bytes("12123topicevent"),  // plain push is not accepted
            [3, 2, 3, 5],  // header truncated
            [3, 2, 3, 5, 10, 0, 0] + bytes("12123top"),  // fields truncated
            [3, 2, 3, 5, 10, 4, 0] + bytes("12123topicuser_event") + bytes("nope"),  // metadata not JSON
            [3, 2, 3, 5, 10, 0, 1] + bytes("12123topicuser_event") + bytes("{oops"),  // JSON payload not JSON
            [3, 2, 0, 0, 0, 0, 0] + [0xFF, 0xFE],  // join_ref not UTF-8
        ]
        for frame in bad {
            #expect(throws: PhoenixFrameError.self) { try PhoenixUserBroadcastPush.decode(frame) }
        }
        let longTopic = PhoenixUserBroadcast(topic: String(repeating: "t", count: 256), userEvent: "e", encoding: .binary, payload: [])
        #expect(throws: PhoenixFrameError.fieldTooLong("topic")) { try longTopic.encode() }
    }
}
