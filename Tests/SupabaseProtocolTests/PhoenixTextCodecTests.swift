import SwitchboardCore
import SupabaseProtocol
import Testing

@Suite struct PhoenixTextCodecTests {
    static let joinV2 = #"["1","1","realtime:room:42","phx_join",{"config":{"broadcast":{"ack":false,"self":false},"presence":{"key":"u1","enabled":true},"postgres_changes":[{"event":"INSERT","schema":"public","table":"messages","filter":"room_id=eq.42"}],"private":false},"access_token":"<jwt>"}]"#

    @Test func decodesProtocolJoin() throws {
        let message = try PhoenixTextCodec.decode(Self.joinV2, version: .v2)
        #expect(message.joinRef == "1")
        #expect(message.ref == "1")
        #expect(message.topic == "realtime:room:42")
        #expect(message.event == "phx_join")
        let config = message.payload["config"]
        #expect(config?["broadcast"]?["self"] == false)
        #expect(config?["presence"]?["key"] == "u1")
        #expect(config?["private"] == false)
        #expect(config?["postgres_changes"]?.arrayValue?.first?["filter"] == "room_id=eq.42")
        #expect(message.payload["access_token"] == "<jwt>")
    }

    @Test func encodesProtocolReplyExactly() {
        let join = PhoenixMessage(joinRef: "1", ref: "1", topic: "realtime:room:42", event: "phx_join", payload: [:])
        let response: JSONValue = ["postgres_changes": [["event": "INSERT", "schema": "public", "table": "messages",
                                                           "filter": "room_id=eq.42", "id": 31_339_845]]]
        let reply = PhoenixMessage.reply(to: join, response: response)
        #expect(PhoenixTextCodec.encode(reply, version: .v2)
            == #"["1","1","realtime:room:42","phx_reply",{"status":"ok","response":{"postgres_changes":[{"event":"INSERT","schema":"public","table":"messages","filter":"room_id=eq.42","id":31339845}]}}]"#)
        #expect(PhoenixTextCodec.encode(reply, version: .v1)
            == #"{"event":"phx_reply","join_ref":"1","payload":{"status":"ok","response":{"postgres_changes":[{"event":"INSERT","schema":"public","table":"messages","filter":"room_id=eq.42","id":31339845}]}},"ref":"1","topic":"realtime:room:42"}"#)
        let system = PhoenixMessage(joinRef: "1", ref: nil, topic: "realtime:room:42", event: "system",
                                    payload: ["extension": "postgres_changes", "status": "ok",
                                              "message": "Subscribed to PostgreSQL", "channel": "room:42"])
        #expect(PhoenixTextCodec.encode(system, version: .v2)
            == #"["1",null,"realtime:room:42","system",{"extension":"postgres_changes","status":"ok","message":"Subscribed to PostgreSQL","channel":"room:42"}]"#)
    }

    @Test func encodesPostgresChangeExactly() throws {
        let data: JSONValue = [
            "schema": "public", "table": "messages", "commit_timestamp": "2026-11-30T06:55:00.123Z", "type": "INSERT",
            "columns": [["name": "id", "type": "int8"], ["name": "body", "type": "text"]],
            "record": ["id": 7, "body": "héllo \"q\"\n/"], "old_record": [:], "errors": nil,
        ]
        let change = PhoenixMessage(joinRef: nil, ref: nil, topic: "realtime:room:42", event: "postgres_changes",
                                    payload: ["ids": [31_339_845], "data": data])
        let text = PhoenixTextCodec.encode(change, version: .v2)
        #expect(text == #"[null,null,"realtime:room:42","postgres_changes",{"ids":[31339845],"data":{"schema":"public","table":"messages","commit_timestamp":"2026-11-30T06:55:00.123Z","type":"INSERT","columns":[{"name":"id","type":"int8"},{"name":"body","type":"text"}],"record":{"id":7,"body":"héllo \"q\"\n/"},"old_record":{},"errors":null}}]"#)
        #expect(try PhoenixTextCodec.decode(text, version: .v2) == change)
    }

    @Test func roundTripsBothVersions() throws {
        let messages = [
            PhoenixMessage(joinRef: nil, ref: "5", topic: "phoenix", event: "heartbeat", payload: [:]),
            PhoenixMessage(joinRef: "3", ref: "9", topic: "realtime:x", event: "broadcast",
                           payload: ["type": "broadcast", "event": "typing", "payload": ["n": 1.5, "ok": true, "big": 9_007_199_254_740_993, "neg": -2]]),
            PhoenixMessage(joinRef: nil, ref: nil, topic: "realtime:x", event: "presence_diff",
                           payload: ["joins": [:], "leaves": [:]]),
        ]
        for message in messages {
            for version in [PhoenixTextCodec.Version.v1, .v2] {
                #expect(try PhoenixTextCodec.decode(PhoenixTextCodec.encode(message, version: version), version: version) == message)
            }
        }
    }

    @Test func decodesV1Heartbeat() throws {
        let message = try PhoenixTextCodec.decode(#"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":12}"#, version: .v1)
        #expect(message == PhoenixMessage(joinRef: nil, ref: "12", topic: "phoenix", event: "heartbeat", payload: [:]))
        #expect(PhoenixTextCodec.Version(vsn: "2.0.0") == .v2)
        #expect(PhoenixTextCodec.Version(vsn: "1.0.0") == .v1)
        #expect(PhoenixTextCodec.Version(vsn: nil) == .v1)
    }

    @Test func rejectsMalformedFrames() {
        let v2Bad = ["", "not json", "{}", #"["1","1","t","e"]"#, #"["1","1",3,"e",{}]"#, #"["1","1","t",null,{}]"#,
                     #"[{},"1","t","e",{}]"#, #"["1",true,"t","e",{}]"#, "[1,2"]
        for text in v2Bad {
            #expect(throws: PhoenixFrameError.self) { try PhoenixTextCodec.decode(text, version: .v2) }
        }
        let v1Bad = ["[]", #"{"event":"e","payload":{}}"#, #"{"topic":"t","payload":{}}"#, #"{"topic":"t","event":"e"}"#,
                     #"{"topic":"t","event":"e","payload":{},"ref":[1]}"#]
        for text in v1Bad {
            #expect(throws: PhoenixFrameError.self) { try PhoenixTextCodec.decode(text, version: .v1) }
        }
        #expect(throws: PhoenixFrameError.invalidJSON) { try PhoenixTextCodec.decode("{", version: .v1) }
    }

    @Test func jsonValueParsing() {
        #expect(JSONValue.parseOrNil("[true,1,1.5,null,\"s\"]") == [true, 1, 1.5, nil, "s"])
        #expect(JSONValue.parseOrNil("\"a\\u0001b\"")?.serialized == "\"a\\u0001b\"")
        #expect(JSONValue.parseOrNil("{\"a\":") == nil)
    }
}
