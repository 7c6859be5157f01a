import SwitchboardCore
import Foundation
import SupabaseProtocol
import Testing

/// A hub state with two known tables and a token checker: "good-*" tokens are valid, "expired" is expired.
private func makeHub(limits: RealtimeHubState.Limits = RealtimeHubState.Limits()) -> RealtimeHubState {
    RealtimeHubState(knownTables: [RealtimeTableName(schema: "public", table: "messages"),
                                   RealtimeTableName(schema: "public", table: "members")],
                     limits: limits, makePresenceKey: { "generated-key" }) { token in
        switch token {
        case "good-alice": return .valid(JWTClaims(object: ["role": "authenticated", "sub": "alice", "exp": 4_000_000_000]))
        case "good-bob": return .valid(JWTClaims(object: ["role": "authenticated", "sub": "bob", "exp": 4_000_000_000]))
        case "good-soon": return .valid(JWTClaims(object: ["role": "authenticated", "sub": "alice", "exp": 120]))
        case "expired": return .invalid(reason: "InvalidJWTToken: Token has expired")
        default: return .invalid(reason: "InvalidJWTToken: The token provided is not a valid JWT")
        }
    }
}

private let now = Date(timeIntervalSince1970: 100)

/// Decodes the text deliveries for `socket` (v2 unless said otherwise).
private func messages(_ deliveries: [RealtimeDelivery], for socket: Int,
                      version: PhoenixTextCodec.Version = .v2) -> [PhoenixMessage] {
    deliveries.filter { $0.socket == socket }.compactMap { delivery in
        if case .text(let text) = delivery.frame { return try? PhoenixTextCodec.decode(text, version: version) }
        return nil
    }
}

/// A v2 `phx_join` frame.
private func joinV2(ref: String = "1", topic: String = "realtime:room", config: JSONValue, token: String = "good-alice") -> String {
    PhoenixTextCodec.encode(PhoenixMessage(joinRef: ref, ref: ref, topic: topic, event: "phx_join",
                                           payload: ["config": config, "access_token": .string(token)]), version: .v2)
}

private let plainConfig: JSONValue = ["broadcast": ["self": false, "ack": false], "presence": ["key": "", "enabled": false],
                                      "postgres_changes": [], "private": false]

/// The pure realtime state machine: joins, broadcast, presence, tokens, garbage, changes.
@Suite struct RealtimeHubStateTests {
    /// Join replies with ids then system message.
    @Test func joinRepliesWithIdsThenSystemMessage() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        let config: JSONValue = ["broadcast": ["self": false, "ack": false], "presence": ["key": "u1", "enabled": false],
                                 "postgres_changes": [["event": "INSERT", "schema": "public", "table": "messages",
                                                       "filter": "conversation_id=eq.42"]], "private": false]
        let out = messages(hub.receive(socket: 1, text: joinV2(config: config), now: now), for: 1)
        #expect(out.count == 2)
        let reply = try #require(out.first)
        #expect(reply.event == "phx_reply" && reply.ref == "1" && reply.joinRef == "1")
        #expect(reply.payload["status"] == "ok")
        let binding = try #require(reply.payload["response"]?["postgres_changes"]?.arrayValue?.first)
        #expect(binding["event"] == "INSERT" && binding["table"] == "messages" && binding["filter"] == "conversation_id=eq.42")
        let id = try #require(binding["id"]?.intValue)
        #expect(id > 0 && id < 1 << 27)
        let system = out[1]
        #expect(system.event == "system" && system.ref == nil)
        #expect(system.payload == ["extension": "postgres_changes", "status": "ok", "message": "Subscribed to PostgreSQL",
                                   "channel": "room"])
    }

    /// Join without bindings replies empty list and no system.
    @Test func joinWithoutBindingsRepliesEmptyListAndNoSystem() {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        let out = messages(hub.receive(socket: 1, text: joinV2(config: plainConfig), now: now), for: 1)
        #expect(out.count == 1)
        #expect(out.first?.payload == ["status": "ok", "response": ["postgres_changes": []]])
    }

    /// Bad token and bad bindings are refused.
    @Test func badTokenAndBadBindingsAreRefused() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        let expired = messages(hub.receive(socket: 1, text: joinV2(config: plainConfig, token: "expired"), now: now), for: 1)
        #expect(expired.first?.payload == ["status": "error", "response": ["reason": "InvalidJWTToken: Token has expired"]])
        #expect(hub.joinedTopics(of: 1).isEmpty)

        for (index, (binding, expected)) in [
            (["event": "*", "schema": "public", "table": "messages", "filter": "body=foo.hey"] as JSONValue,
             #"Error parsing `filter` params: ["foo", "hey"]"#),
            (["event": "*", "schema": "public", "table": "nope"] as JSONValue, "Unable to subscribe to changes"),
        ].enumerated() {
            let config: JSONValue = ["postgres_changes": [binding]]
            let join = joinV2(ref: "9", topic: "realtime:bad\(index)", config: config)
            let out = messages(hub.receive(socket: 1, text: join, now: now), for: 1)
            let system = try #require(out.last)
            #expect(out.first?.payload["status"] == "ok")
            #expect(system.event == "system" && system.payload["status"] == "error")
            #expect(system.payload["message"]?.stringValue?.hasPrefix(expected) == true)
        }
    }

    /// Heartbeat replies ok.
    @Test func heartbeatRepliesOk() {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v1, apiKey: nil, now: now)
        let beat = #"{"topic":"phoenix","event":"heartbeat","payload":{},"ref":"7","join_ref":null}"#
        let out = messages(hub.receive(socket: 1, text: beat, now: now), for: 1, version: .v1)
        #expect(out == [PhoenixMessage(joinRef: nil, ref: "7", topic: "phoenix", event: "phx_reply",
                                       payload: ["status": "ok", "response": [:]])])
    }

    /// Broadcast honours self and ack.
    @Test func broadcastHonoursSelfAndAck() throws {
        var hub = makeHub()
        for socket in 1...3 { _ = hub.connect(socket: socket, version: .v2, apiKey: nil, now: now) }
        let selfConfig: JSONValue = ["broadcast": ["self": true, "ack": true]]
        _ = hub.receive(socket: 1, text: joinV2(config: selfConfig), now: now)
        _ = hub.receive(socket: 2, text: joinV2(config: plainConfig, token: "good-bob"), now: now)
        _ = hub.receive(socket: 3, text: joinV2(topic: "realtime:other", config: plainConfig), now: now)
        let push = #"["1","2","realtime:room","broadcast",{"type":"broadcast","event":"typing","payload":{"x":1}}]"#
        let out = hub.receive(socket: 1, text: push, now: now)
        let toSender = messages(out, for: 1), toPeer = messages(out, for: 2)
        #expect(messages(out, for: 3).isEmpty)
        #expect(toPeer.count == 1 && toPeer.first?.event == "broadcast" && toPeer.first?.payload["payload"]?["x"] == 1)
        #expect(toPeer.first?.ref == nil)
        #expect(toSender.map(\.event).sorted() == ["broadcast", "phx_reply"])

        // Socket 2 has self:false and ack:false: only socket 1 hears it, no reply.
        let back = hub.receive(socket: 2, text: push.replacingOccurrences(of: #""1","2""#, with: #""1","3""#), now: now)
        #expect(messages(back, for: 2).isEmpty)
        #expect(messages(back, for: 1).map(\.event) == ["broadcast"])
    }

    /// A REST API broadcast reaches every socket on the topic with the same privacy; binary goes to V2 sockets only.
    @Test("a broadcast from the REST API reaches the topic's sockets (same privacy); bytes only V2 sockets")
    func serverBroadcast() throws {
        var hub = makeHub()
        for socket in 1...2 { _ = hub.connect(socket: socket, version: .v2, apiKey: nil, now: now) }
        _ = hub.connect(socket: 3, version: .v1, apiKey: nil, now: now)
        _ = hub.connect(socket: 4, version: .v2, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(config: plainConfig), now: now)
        _ = hub.receive(socket: 2, text: joinV2(topic: "realtime:other", config: plainConfig), now: now)
        let v1Join = #"{"topic":"realtime:room","event":"phx_join","payload":{"config":{},"access_token":"good-bob"},"ref":"1","join_ref":"1"}"#
        _ = hub.receive(socket: 3, text: v1Join, now: now)
        let privateConfig: JSONValue = ["broadcast": ["self": false, "ack": false], "presence": ["key": "", "enabled": false],
                                        "postgres_changes": [], "private": true]
        _ = hub.receive(socket: 4, text: joinV2(config: privateConfig), now: now)

        let json = hub.serverBroadcast(topic: "realtime:room", isPrivate: false, event: "note", json: ["n": 1], binary: nil)
        #expect(Set(json.map(\.socket)) == [1, 3], "the topic's public sockets, v1 and v2")
        #expect(messages(json, for: 1).first?.payload == ["type": "broadcast", "event": "note", "payload": ["n": 1]])
        #expect(messages(json, for: 3, version: .v1).first?.payload == ["type": "broadcast", "event": "note", "payload": ["n": 1]])
        let bytes = hub.serverBroadcast(topic: "realtime:room", isPrivate: false, event: "blob", json: nil, binary: [1, 2, 3])
        #expect(bytes.map(\.socket) == [1], "a JSON client cannot take raw bytes")
        guard case .binary(let frame)? = bytes.first?.frame else { Issue.record("expected a binary frame"); return }
        #expect(try PhoenixUserBroadcast.decode(frame).payload == [1, 2, 3])
        #expect(hub.serverBroadcast(topic: "realtime:room", isPrivate: true, event: "x", json: [:], binary: nil).map(\.socket) == [4])
    }

    /// Binary broadcast relays as user broadcast.
    @Test func binaryBroadcastRelaysAsUserBroadcast() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.connect(socket: 2, version: .v2, apiKey: nil, now: now)
        _ = hub.connect(socket: 3, version: .v1, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(config: plainConfig), now: now)
        _ = hub.receive(socket: 2, text: joinV2(config: plainConfig), now: now)
        let v1Join = #"{"topic":"realtime:room","event":"phx_join","payload":{"config":{},"access_token":"good-bob"},"ref":"1","join_ref":"1"}"#
        _ = hub.receive(socket: 3, text: v1Join, now: now)
        let push = PhoenixUserBroadcastPush(joinRef: "1", ref: "5", topic: "realtime:room", userEvent: "typing",
                                            encoding: .json, payload: Array(#"{"a":1}"#.utf8))
        let out = hub.receive(socket: 1, binary: try push.encode(), now: now)
        let binary = try #require(out.first { $0.socket == 2 })
        guard case .binary(let bytes) = binary.frame else { Issue.record("expected binary"); return }
        let relayed = try PhoenixUserBroadcast.decode(bytes)
        #expect(relayed.userEvent == "typing" && relayed.payload == Array(#"{"a":1}"#.utf8))
        let v1 = messages(out, for: 3, version: .v1)
        #expect(v1.first?.payload == ["type": "broadcast", "event": "typing", "payload": ["a": 1]])
        #expect(out.allSatisfy { $0.socket != 1 })
    }

    /// Presence track sends diff to all and state to joiners.
    @Test func presenceTrackSendsDiffToAllAndStateToJoiners() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.connect(socket: 2, version: .v2, apiKey: nil, now: now)
        let presenceConfig: JSONValue = ["presence": ["key": "alice", "enabled": true]]
        let joined = messages(hub.receive(socket: 1, text: joinV2(config: presenceConfig), now: now), for: 1)
        #expect(joined.map(\.event) == ["phx_reply", "presence_state"])
        #expect(joined.last?.payload == [:])

        let track = #"["1","2","realtime:room","presence",{"type":"presence","event":"track","payload":{"online":true}}]"#
        let out = hub.receive(socket: 1, text: track, now: now)
        let diff = try #require(messages(out, for: 1).first { $0.event == "presence_diff" })
        let meta = try #require(diff.payload["joins"]?["alice"]?["metas"]?.arrayValue?.first)
        #expect(meta["online"] == true && meta["phx_ref"]?.stringValue?.isEmpty == false)
        #expect(diff.payload["leaves"] == [:])
        #expect(messages(out, for: 1).contains { $0.event == "phx_reply" && $0.ref == "2" })

        let second = messages(hub.receive(socket: 2, text: joinV2(config: ["presence": ["key": "", "enabled": true]],
                                                                 token: "good-bob"), now: now), for: 2)
        let state = try #require(second.last)
        #expect(state.event == "presence_state")
        #expect(state.payload["alice"]?["metas"]?.arrayValue?.first?["online"] == true)

        let track2 = #"["1","3","realtime:room","presence",{"event":"track","payload":{"k":1}}]"#
        let diff2 = messages(hub.receive(socket: 2, text: track2, now: now), for: 1).first
        #expect(diff2?.payload["joins"]?["generated-key"] != nil)

        // Socket 1 disconnects: socket 2 sees alice leave.
        let gone = messages(hub.disconnect(socket: 1), for: 2)
        #expect(gone.first?.event == "presence_diff")
        #expect(gone.first?.payload["leaves"]?["alice"]?["metas"]?.arrayValue?.count == 1)
    }

    /// Leave replies and closes.
    @Test func leaveRepliesAndCloses() {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(config: plainConfig), now: now)
        let out = messages(hub.receive(socket: 1, text: #"["1","2","realtime:room","phx_leave",{}]"#, now: now), for: 1)
        #expect(out.map(\.event) == ["phx_reply", "phx_close"])
        #expect(hub.joinedTopics(of: 1).isEmpty)
        let after = messages(hub.receive(socket: 1, text: #"["1","3","realtime:room","broadcast",{}]"#, now: now), for: 1)
        #expect(after.first?.payload == ["status": "error", "response": ["reason": "unmatched topic"]])
    }

    /// Access token refreshes or shuts the channel.
    @Test func accessTokenRefreshesOrShutsTheChannel() {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(config: plainConfig), now: now)
        let good = hub.receive(socket: 1, text: #"["1",null,"realtime:room","access_token",{"access_token":"good-bob"}]"#, now: now)
        #expect(good.isEmpty)
        let bad = messages(hub.receive(socket: 1, text: #"["1",null,"realtime:room","access_token",{"access_token":"expired"}]"#,
                                       now: now), for: 1)
        #expect(bad.map(\.event) == ["system", "phx_close"])
        #expect(bad.first?.payload == ["extension": "system", "status": "error", "message": "InvalidJWTToken: Token has expired",
                                       "channel": "room"])
        #expect(hub.joinedTopics(of: 1).isEmpty)
    }

    /// Tick expires tokens and silent sockets.
    @Test func tickExpiresTokensAndSilentSockets() {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(config: plainConfig, token: "good-soon"), now: now)
        let expired = messages(hub.tick(now: Date(timeIntervalSince1970: 130)), for: 1)
        #expect(expired.map(\.event) == ["system", "phx_close"])
        let silent = hub.tick(now: Date(timeIntervalSince1970: 2_000))
        #expect(silent == [RealtimeDelivery(socket: 1, frame: .close(code: 1000, reason: "heartbeat timeout"))])
    }

    /// Both serializers answer in their shape.
    @Test func bothSerializersAnswerInTheirShape() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v1, apiKey: "good-alice", now: now)
        let join = #"{"topic":"realtime:room","event":"phx_join","payload":{"config":{}},"ref":"1","join_ref":"1"}"#
        let out = hub.receive(socket: 1, text: join, now: now)
        guard case .text(let text)? = out.first?.frame else { Issue.record("no reply"); return }
        #expect(JSONValue.parseOrNil(text)?.objectValue?["event"] == "phx_reply")
        #expect(try PhoenixTextCodec.decode(text, version: .v1).payload["status"] == "ok")
    }

    /// Garbage closes only that socket.
    @Test func garbageClosesOnlyThatSocket() {
        var limits = RealtimeHubState.Limits()
        limits.maxFrameBytes = 64
        var hub = makeHub(limits: limits)
        for socket in 1...4 { _ = hub.connect(socket: socket, version: .v2, apiKey: nil, now: now) }
        #expect(hub.receive(socket: 1, text: "not json", now: now).first?.frame == .close(code: 1007, reason: "invalid JSON"))
        #expect(hub.receive(socket: 2, text: #"{"topic":"x"}"#, now: now).first?.frame == .close(code: 1003, reason: "invalid message shape"))
        #expect(hub.receive(socket: 3, text: String(repeating: "x", count: 100), now: now).first?.frame
            == .close(code: 1009, reason: "message too big"))
        #expect(hub.receive(socket: 4, binary: [9, 9], now: now).first?.frame == .close(code: 1003, reason: "unsupported binary frame"))
        // Closed sockets ignore further input; an invalid apikey closes at connect.
        #expect(hub.receive(socket: 1, text: #"["1","1","phoenix","heartbeat",{}]"#, now: now).isEmpty)
        #expect(hub.connect(socket: 5, version: .v2, apiKey: "bogus", now: now).first?.frame
            == .close(code: 1008, reason: "InvalidJWTToken: The token provided is not a valid JWT"))
    }

    /// The feed asks whether anyone listens to a table before building its changes.
    @Test func subscriptionCoverageFollowsBindingsAndSockets() {
        var hub = makeHub()
        let messagesTable = RealtimeTableName(schema: "public", table: "messages")
        let membersTable = RealtimeTableName(schema: "public", table: "members")
        #expect(!hub.hasSubscription(covering: messagesTable))
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.receive(socket: 1, text: joinV2(topic: "realtime:plain", config: plainConfig), now: now)
        #expect(!hub.hasSubscription(covering: messagesTable))  // a channel without postgres_changes bindings
        let config: JSONValue = ["postgres_changes": [["event": "INSERT", "schema": "public", "table": "messages",
                                                       "filter": "conversation_id=eq.c1"]]]
        _ = hub.receive(socket: 1, text: joinV2(ref: "2", config: config), now: now)
        #expect(hub.hasSubscription(covering: messagesTable))
        #expect(!hub.hasSubscription(covering: membersTable))
        _ = hub.connect(socket: 2, version: .v2, apiKey: nil, now: now)
        let wholeSchema: JSONValue = ["postgres_changes": [["event": "*", "schema": "public"]]]
        _ = hub.receive(socket: 2, text: joinV2(topic: "realtime:all", config: wholeSchema, token: "good-bob"), now: now)
        #expect(hub.hasSubscription(covering: membersTable))
        _ = hub.disconnect(socket: 2)
        #expect(!hub.hasSubscription(covering: membersTable))
        _ = hub.disconnect(socket: 1)
        #expect(!hub.hasSubscription(covering: messagesTable))
    }

    /// Changes reach matching channels with their ids.
    @Test func changesReachMatchingChannelsWithTheirIds() throws {
        var hub = makeHub()
        _ = hub.connect(socket: 1, version: .v2, apiKey: nil, now: now)
        _ = hub.connect(socket: 2, version: .v1, apiKey: nil, now: now)
        let config: JSONValue = ["postgres_changes": [["event": "*", "schema": "public", "table": "messages",
                                                       "filter": "conversation_id=eq.c1"],
                                                      ["event": "DELETE", "schema": "public", "table": "messages"]]]
        _ = hub.receive(socket: 1, text: joinV2(config: config), now: now)
        let other: JSONValue = ["postgres_changes": [["event": "INSERT", "schema": "public", "table": "messages",
                                                      "filter": "conversation_id=eq.c2"]]]
        let v1 = JSONValue.object(["topic": "realtime:x", "event": "phx_join", "ref": "1", "join_ref": "1",
                                   "payload": ["config": other, "access_token": "good-bob"]]).serialized
        _ = hub.receive(socket: 2, text: v1, now: now)
        let table = RealtimeTableName(schema: "public", table: "messages")
        let insert = RealtimeChange(table: table, type: "INSERT", commitTimestamp: "2024-01-01T00:00:00.000Z",
                                    columns: [RealtimeColumn(name: "id", type: "uuid")],
                                    record: ["id": "m1", "conversation_id": "c1"], oldRecord: nil,
                                    primaryKey: [(column: "id", value: "m1")])
        let targets = hub.targets(for: insert)
        #expect(targets.map(\.socket) == [1])
        #expect(targets.first?.ids.count == 1)
        let delivery = RealtimeHubState.changeDelivery(insert, to: try #require(targets.first))
        let message = try #require(messages([delivery], for: 1).first)
        #expect(message.event == "postgres_changes" && message.payload["data"]?["type"] == "INSERT")
        #expect(message.payload["data"]?["record"]?["id"] == "m1" && message.payload["data"]?["errors"] == .null)
        #expect(message.payload["data"]?["old_record"] == nil)

        var delete = insert
        delete.type = "DELETE"
        delete.record = nil
        delete.oldRecord = ["id": "m1"]
        #expect(hub.targets(for: delete).first?.ids.count == 2)
    }
}

/// postgres_changes filter parsing and matching.
@Suite struct RealtimeFilterTests {
    /// Parses operators and lists.
    @Test func parsesOperatorsAndLists() throws {
        let filter = try RealtimeFilter.parse("n=gte.2,name=in.(a,\"b,c\"),flag=not.eq.true")
        #expect(filter.conditions == [
            RealtimeFilterCondition(column: "n", op: .gte, values: ["2"]),
            RealtimeFilterCondition(column: "name", op: .in, values: ["a", "b,c"]),
            RealtimeFilterCondition(column: "flag", op: .eq, values: ["true"], negated: true),
        ])
        #expect(try RealtimeFilter.parse("  ").conditions.isEmpty)
        #expect(throws: RealtimeFilterError.self) { try RealtimeFilter.parse("undefined") }
        #expect(throws: RealtimeFilterError.self) { try RealtimeFilter.parse("a=in.1,2") }
        #expect(throws: RealtimeFilterError.self) { try RealtimeFilter.parse("a=eq.1,,b=eq.2") }
    }

    /// Matches numbers text and nulls.
    @Test func matchesNumbersTextAndNulls() throws {
        let record: [String: JSONValue] = ["n": 10, "s": "b", "z": nil, "flag": true,
                                           "u": "6f1c2d3e-0000-4000-8000-00000000abcd"]
        func check(_ text: String) throws -> Bool { try RealtimeFilter.parse(text).matches(record) }
        #expect(try check("n=gt.9") && check("n=lt.10.5") && check("n=eq.10.0") && !check("n=neq.10"))
        #expect(try check("n=lte.10") && !check("n=gte.11"))
        #expect(try check("s=in.(a,b)") && !check("s=in.(c)") && check("s=gt.a") && check("s=lt.c"))
        #expect(try !check("z=eq.x") && !check("z=neq.x") && !check("missing=eq.1"))
        #expect(try check("flag=eq.true") && !check("flag=eq.false"))
        #expect(try check("u=eq.6F1C2D3E-0000-4000-8000-00000000ABCD"))
        #expect(try RealtimeFilter.parse("gone=eq.1").matches(record, ignoringMissingColumns: true))
    }

    /// Subscription ids are stable and non zero.
    @Test func subscriptionIdsAreStableAndNonZero() throws {
        let params: JSONValue = ["event": "INSERT", "schema": "public", "table": "messages"]
        let reordered: JSONValue = ["table": "messages", "event": "INSERT", "schema": "public"]
        #expect(RealtimeSubscription.id(of: params) == RealtimeSubscription.id(of: reordered))
        #expect(RealtimeSubscription.id(of: params) != 0)
        let wildcard = try RealtimeSubscription(params: ["schema": "public"])
        #expect(wildcard.table == "*" && wildcard.event == "*")
        #expect(throws: RealtimeFilterError.self) { try RealtimeSubscription(params: ["event": "*"]) }
    }
}
