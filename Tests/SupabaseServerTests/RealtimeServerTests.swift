import SwitchboardCore
import Foundation
import Synchronization
import SupabaseProtocol
import SupabaseServer
import SwitchboardNet
import Testing
import TestSupport

/// A v2 test socket that buffers every frame so tests can wait for one with a deadline.
final class RealtimeTestSocket: Sendable {
    let client = WebSocketClient()
    private let received = Mutex<[WebSocketFrame]>([])
    private let reader = Mutex<Task<Void, Never>?>(nil)
    private let refs = Atomic<Int>(100)

    /// Connects to the server's realtime endpoint with `apikey` and serializer `vsn`.
    static func connect(_ server: SupabaseTestServer, apiKey: String, vsn: String = "2.0.0") async throws -> RealtimeTestSocket {
        let socket = RealtimeTestSocket()
        let url = try #require(URL(string: "ws://127.0.0.1:\(server.port)/realtime/v1/websocket?apikey=\(apiKey)&vsn=\(vsn)"))
        try await socket.client.connect(url: url)
        let task = Task { [socket] in
            for await frame in socket.client.frames { socket.received.withLock { $0.append(frame) } }
        }
        socket.reader.withLock { $0 = task }
        return socket
    }

    /// Sends a v2 message.
    func send(_ joinRef: String?, _ topic: String, _ event: String, _ payload: JSONValue) async throws -> String {
        let ref = String(refs.add(1, ordering: .relaxed).newValue)
        let message = PhoenixMessage(joinRef: joinRef, ref: ref, topic: topic, event: event, payload: payload)
        try await client.send(text: PhoenixTextCodec.encode(message, version: .v2))
        return ref
    }

    /// Joins `topic` with `config` and `token`; returns the join reply.
    func join(_ topic: String, config: JSONValue, token: String) async throws -> PhoenixMessage {
        let ref = try await send("1", topic, "phx_join", ["config": config, "access_token": .string(token)])
        return try await next(timeout: 10) { $0.event == "phx_reply" && $0.ref == ref }
    }

    /// Waits for (and removes) the first message passing `match`.
    func next(timeout seconds: Double = 10, where match: (PhoenixMessage) -> Bool) async throws -> PhoenixMessage {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let found = received.withLock { frames -> PhoenixMessage? in
                for (index, frame) in frames.enumerated() {
                    guard case .text(let text) = frame, let message = try? PhoenixTextCodec.decode(text, version: .v2),
                          match(message) else { continue }
                    frames.remove(at: index)
                    return message
                }
                return nil
            }
            if let found { return found }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("no matching realtime message within \(seconds) s")
    }

    /// All messages received so far that pass `match` (not removed).
    func all(where match: (PhoenixMessage) -> Bool) -> [PhoenixMessage] {
        received.withLock { frames in
            frames.compactMap { frame in
                guard case .text(let text) = frame, let message = try? PhoenixTextCodec.decode(text, version: .v2) else { return nil }
                return match(message) ? message : nil
            }
        }
    }

    /// Whether the close frame has arrived.
    var closedCode: WebSocketCloseCode? {
        received.withLock { frames in
            for case .close(let code, _) in frames { return code }
            return nil
        }
    }

    /// Closes the connection.
    func close() async {
        await client.close()
        reader.withLock { $0?.cancel() }
    }
}

/// Realtime against the real server: row changes from PostgreSQL, RLS per subscriber, garbage, and the official client.
@Suite("Supabase realtime server", .serialized, .supabaseServer)
struct RealtimeServerTests {
    /// A conversation with `members`; returns its id.
    private func conversation(_ server: SupabaseTestServer, members: [String]) async throws -> String {
        let created = try await server.sql("INSERT INTO conversations (title) VALUES ('x') RETURNING id::text")
        let id = try #require(created.rows.first?.first ?? nil)
        for member in members {
            try await server.sql("INSERT INTO members (conversation_id, user_id) VALUES ($1, $2)", [id, member])
        }
        return id
    }

    /// Joins `topic` with a postgres_changes binding on the conversation; returns its id.
    private func subscribeMessages(_ socket: RealtimeTestSocket, topic: String, conversation: String,
                                   token: String) async throws -> Int64 {
        let binding: JSONValue = ["event": "*", "schema": "public", "table": "messages",
                                  "filter": .string("conversation_id=eq.\(conversation)")]
        let reply = try await socket.join(topic, config: ["broadcast": ["self": false, "ack": false],
                                                          "presence": ["key": "", "enabled": false],
                                                          "postgres_changes": [binding], "private": false], token: token)
        #expect(reply.payload["status"] == "ok")
        let system = try await socket.next { $0.event == "system" && $0.topic == topic }
        #expect(system.payload["status"] == "ok")
        return try #require(reply.payload["response"]?["postgres_changes"]?.arrayValue?.first?["id"]?.intValue)
    }

    /// INSERT, UPDATE and DELETE reach a v2 subscriber, a large row arrives whole.
    @Test("INSERT, UPDATE and DELETE reach a v2 subscriber, a large row arrives whole")
    func changesReachSubscriber() async throws {
        let server = try SupabaseTestServer.required()
        let conversationID = try await conversation(server, members: ["alice"])
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await socket.close() } }
        let id = try await subscribeMessages(socket, topic: "realtime:conv", conversation: conversationID,
                                             token: server.token(role: "authenticated", sub: "alice"))
        let messageID = UUID().uuidString.lowercased()
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'alice', 'hello')",
                             [messageID, conversationID])
        let insert = try await socket.next { $0.event == "postgres_changes" && $0.payload["data"]?["type"] == "INSERT" }
        #expect(insert.payload["ids"] == [.int(id)])
        let data = try #require(insert.payload["data"])
        #expect(data["record"]?["body"] == "hello" && data["record"]?["id"] == .string(messageID))
        #expect(data["schema"] == "public" && data["table"] == "messages" && data["errors"] == .null)
        #expect(data["columns"]?.arrayValue?.contains(["name": "body", "type": "text"]) == true)
        #expect(data["commit_timestamp"]?.stringValue?.hasSuffix("Z") == true)

        let big = String(repeating: "0123456789", count: 1_200)
        try await server.sql("UPDATE messages SET body = $1 WHERE id = $2", [big, messageID])
        let update = try await socket.next { $0.event == "postgres_changes" && $0.payload["data"]?["type"] == "UPDATE" }
        #expect(update.payload["data"]?["record"]?["body"]?.stringValue == big)
        #expect(update.payload["data"]?["old_record"] == ["id": .string(messageID)])

        try await server.sql("DELETE FROM messages WHERE id = $1", [messageID])
        let delete = try await socket.next { $0.event == "postgres_changes" && $0.payload["data"]?["type"] == "DELETE" }
        #expect(delete.payload["data"]?["old_record"] == ["id": .string(messageID)])
        #expect(delete.payload["data"]?["record"] == nil)

        // Another conversation's rows do not pass the filter.
        let other = try await conversation(server, members: ["alice"])
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'alice', 'no')",
                             [UUID().uuidString.lowercased(), other])
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'alice', 'marker')",
                             [UUID().uuidString.lowercased(), conversationID])
        let marker = try await socket.next { $0.event == "postgres_changes" && $0.payload["data"]?["record"]?["body"] == "marker" }
        #expect(marker.payload["data"]?["type"] == "INSERT")
        let leaked = socket.all { $0.payload["data"]?["record"]?["body"] == "no" }
        #expect(leaked.isEmpty)
    }

    /// Row-level security: a non-member receives nothing of another conversation.
    @Test("row-level security: a non-member receives nothing of another conversation")
    func rlsHidesOtherConversations() async throws {
        let server = try SupabaseTestServer.required()
        let conversationID = try await conversation(server, members: ["alice"])
        let bob = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        let alice = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await bob.close(); await alice.close() } }
        _ = try await subscribeMessages(bob, topic: "realtime:spy", conversation: conversationID,
                                        token: server.token(role: "authenticated", sub: "bob"))
        _ = try await subscribeMessages(alice, topic: "realtime:mine", conversation: conversationID,
                                        token: server.token(role: "authenticated", sub: "alice"))
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'alice', 'secret')",
                             [UUID().uuidString.lowercased(), conversationID])
        _ = try await alice.next { $0.event == "postgres_changes" && $0.payload["data"]?["record"]?["body"] == "secret" }
        try await Task.sleep(for: .milliseconds(500))
        let seen = bob.all { $0.event == "postgres_changes" }
        #expect(seen.isEmpty)
    }

    /// A garbage frame closes only that socket; broadcast still flows between the others.
    @Test("a garbage frame closes only that socket; broadcast still flows between the others")
    func garbageClosesOnlyThatSocket() async throws {
        let server = try SupabaseTestServer.required()
        let token = server.token(role: "authenticated", sub: "alice")
        let bad = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        let one = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        let two = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await bad.close(); await one.close(); await two.close() } }
        let plain: JSONValue = ["broadcast": ["self": false, "ack": true], "presence": ["key": "", "enabled": false]]
        _ = try await one.join("realtime:room", config: plain, token: token)
        _ = try await two.join("realtime:room", config: plain, token: token)
        try await bad.client.send(text: "{this is not json")
        for _ in 0..<100 where bad.closedCode == nil { try await Task.sleep(for: .milliseconds(50)) }
        #expect(bad.closedCode == .invalidPayloadData)

        let ref = try await one.send("1", "realtime:room", "broadcast", ["type": "broadcast", "event": "typing", "payload": ["n": 1]])
        _ = try await one.next { $0.event == "phx_reply" && $0.ref == ref }
        let got = try await two.next { $0.event == "broadcast" }
        #expect(got.payload["payload"]?["n"] == 1)
        let beat = try await two.send(nil, "phoenix", "heartbeat", [:])
        _ = try await two.next { $0.event == "phx_reply" && $0.ref == beat }
    }

    /// The official Python client receives inserts, updates and deletes.
    @Test("the official Python client receives inserts, updates and deletes")
    func officialClientReceivesChanges() async throws {
        let server = try SupabaseTestServer.required()
        let conversationID = try await conversation(server, members: ["alice"])
        let ready = server.root.appendingPathComponent("realtime-ready-\(UUID().uuidString)").path
        let url = "ws://127.0.0.1:\(server.port)/realtime/v1"
        let token = server.token(role: "authenticated", sub: "alice")
        async let fixture = PythonFixture.run("realtime_client.py", ["changes", url, token, conversationID, ready])
        var isReady = false
        for _ in 0..<300 where !isReady {
            try await Task.sleep(for: .milliseconds(50))
            isReady = FileManager.default.fileExists(atPath: ready)
        }
        let messageID = UUID().uuidString.lowercased()
        if isReady {
            // Each statement waits until the change was dispatched (seen by a Swift subscriber with the same claims):
            // visibility is checked against the live row, so a row deleted before dispatch is invisible (as in Supabase).
            let watcher = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
            _ = try await subscribeMessages(watcher, topic: "realtime:watch", conversation: conversationID, token: token)
            try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'alice', 'py')",
                                 [messageID, conversationID])
            _ = try await watcher.next { $0.payload["data"]?["type"] == "INSERT" }
            try await server.sql("UPDATE messages SET body = 'py2' WHERE id = $1", [messageID])
            _ = try await watcher.next { $0.payload["data"]?["type"] == "UPDATE" }
            try await server.sql("DELETE FROM messages WHERE id = $1", [messageID])
            await watcher.close()
        }
        let result = try await fixture
        #expect(isReady, "the Python client never subscribed: \(result.stderr)")
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap { JSONValue.parseOrNil(String($0)) }
        #expect(lines.map { $0["type"]?.stringValue ?? "" } == ["INSERT", "UPDATE", "DELETE"])
        #expect(lines.first?["record"]?["body"] == "py")
        #expect(lines.last?["old_record"] == ["id": .string(messageID)])
    }

    /// The official Python client: presence sync/join and broadcast between two clients.
    @Test("the official Python client: presence sync/join and broadcast between two clients")
    func officialClientBroadcastAndPresence() async throws {
        let server = try SupabaseTestServer.required()
        let url = "ws://127.0.0.1:\(server.port)/realtime/v1"
        let result = try await PythonFixture.run("realtime_client.py",
                                                 ["broadcast_presence", url, server.token(role: "authenticated", sub: "alice")])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try #require(JSONValue.parseOrNil(String(result.stdout.split(separator: "\n").last ?? "")))
        #expect(summary["presence"] == ["alice"])
        #expect(summary["broadcast"]?["who"] == "alice")
    }
}
