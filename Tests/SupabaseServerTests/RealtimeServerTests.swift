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
    private let received = Locked<[WebSocketFrame]>([])
    private let reader = Locked<Task<Void, Never>?>(nil)
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

    /// Joins `topic` with a postgres_changes binding on the conversation's messages; returns its id.
    private func subscribeMessages(_ socket: RealtimeTestSocket, topic: String, conversation: String,
                                   token: String) async throws -> Int64 {
        try await subscribeTable(socket, topic: topic, table: "messages", filter: "conversation_id=eq.\(conversation)",
                                 token: token)
    }

    /// INSERT, UPDATE and DELETE reach a v2 subscriber, a large row arrives whole.
    @Test("a socket without a valid apikey is refused with 401 before the upgrade, as the gateway does")
    func unauthenticatedUpgradeRefused() async throws {
        let server = try SupabaseTestServer.required()
        let upgrade: HTTPHeaders = ["Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                                    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="]
        let base = "http://127.0.0.1:\(server.port)/realtime/v1/websocket?vsn=2.0.0"
        let forged = server.anonKey.dropLast(4) + "AAAA"
        for (url, message) in [(base, "No API key found in request"), (base + "&apikey=", "No API key found in request"),
                               (base + "&apikey=\(forged)", "Invalid API key"), (base + "&apikey=sb_anything", "Invalid API key")] {
            let reply = try await HTTPClient().send(HTTPRequest(url: try #require(URL(string: url)), headers: upgrade))
            #expect(reply.status == 401, "\(url)")
            #expect(String(decoding: reply.body, as: UTF8.self).contains(message), "\(url)")
        }
        // The same request with the anon key upgrades.
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        await socket.close()
    }

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

    /// Joins `topic` with one postgres_changes binding on `table` (filtered when `filter` is given); returns its id.
    @discardableResult
    private func subscribeTable(_ socket: RealtimeTestSocket, topic: String, table: String, filter: String? = nil,
                                token: String) async throws -> Int64 {
        var binding: [(key: String, value: JSONValue)] = [("event", "*"), ("schema", "public"), ("table", .string(table))]
        if let filter { binding.append(("filter", .string(filter))) }
        let reply = try await socket.join(topic, config: ["broadcast": ["self": false, "ack": false],
                                                          "presence": ["key": "", "enabled": false],
                                                          "postgres_changes": [.object(binding)], "private": false], token: token)
        #expect(reply.payload["status"] == "ok")
        let system = try await socket.next { $0.event == "system" && $0.topic == topic }
        #expect(system.payload["status"] == "ok")
        return try #require(reply.payload["response"]?["postgres_changes"]?.arrayValue?.first?["id"]?.intValue)
    }

    /// One INSERT statement of messages (one transaction, so the listener reads them as one batch).
    private func insertMessages(_ server: SupabaseTestServer, _ rows: [(conversation: String, body: String)]) async throws {
        let values = rows.indices.map { "($\($0 * 2 + 1)::uuid, 'someone', $\($0 * 2 + 2))" }.joined(separator: ", ")
        try await server.sql("INSERT INTO messages (conversation_id, sender_id, body) SELECT c, s, b FROM (VALUES \(values)) AS v(c, s, b)",
                             rows.flatMap { [$0.conversation, $0.body] })
    }

    /// The bodies of the `postgres_changes` messages `socket` received on `topic`, in arrival order.
    private func bodies(_ socket: RealtimeTestSocket, topic: String) -> [String] {
        socket.all { $0.event == "postgres_changes" && $0.topic == topic }
            .compactMap { $0.payload["data"]?["record"]?["body"]?.stringValue }
    }

    /// A batch mixing visible and invisible rows delivers exactly the visible ones, in order.
    @Test("row-level security in a batch: exactly the visible rows arrive, in order")
    func rlsBatchMixed() async throws {
        let server = try SupabaseTestServer.required()
        let user = "carol-\(UUID().uuidString.prefix(8))"
        let mine = try await conversation(server, members: [user])
        let theirs = try await conversation(server, members: ["someone-else"])
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await socket.close() } }
        try await subscribeTable(socket, topic: "realtime:batch", table: "messages",
                                 token: server.token(role: "authenticated", sub: user))
        let tag = UUID().uuidString.prefix(8)
        try await insertMessages(server, [(mine, "\(tag)-1"), (theirs, "\(tag)-x1"), (theirs, "\(tag)-x2"), (mine, "\(tag)-2"),
                                          (theirs, "\(tag)-x3"), (mine, "\(tag)-3"), (mine, "\(tag)-4")])
        try await insertMessages(server, [(mine, "\(tag)-end")])
        _ = try await socket.next { $0.payload["data"]?["record"]?["body"]?.stringValue == "\(tag)-end" }
        let seen = bodies(socket, topic: "realtime:batch").filter { $0.hasPrefix(tag) }
        #expect(seen == ["\(tag)-1", "\(tag)-2", "\(tag)-3", "\(tag)-4"])
    }

    /// Change-log ids crossing a power of ten inside one batch (…998, …999, 1…000) keep their order: the batch is
    /// ordered by the numeric id, not by its text.
    @Test("a batch whose log ids cross a power of ten arrives in commit order")
    func batchAcrossPowerOfTen() async throws {
        let server = try SupabaseTestServer.required()
        let user = "ines-\(UUID().uuidString.prefix(8))"
        let room = try await conversation(server, members: [user])
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await socket.close() } }
        _ = try await subscribeMessages(socket, topic: "realtime:decade", conversation: room,
                                    token: server.token(role: "authenticated", sub: user))
        let next = try await server.sql("SELECT last_value::text FROM realtime.change_log_id_seq")
        let current = Int64(try #require(next.rows.first?.first ?? nil)) ?? 0
        var power: Int64 = 10
        while power - 5 <= current { power *= 10 }
        try await server.sql("SELECT setval('realtime.change_log_id_seq', $1::bigint)", [String(power - 5)])
        let tag = UUID().uuidString.prefix(8)
        try await insertMessages(server, (0..<10).map { (room, "\(tag)-\($0)") })
        try await insertMessages(server, [(room, "end-\(tag)")])
        _ = try await socket.next { $0.payload["data"]?["record"]?["body"]?.stringValue == "end-\(tag)" }
        #expect(bodies(socket, topic: "realtime:decade").filter { $0.hasPrefix(tag) } == (0..<10).map { "\(tag)-\($0)" })
    }

    /// Two subscribers with different identities (and a service-role one) on one batch each get their own rows.
    @Test("row-level security in a batch: two identities and the service role each get their own rows, in order")
    func rlsBatchTwoIdentities() async throws {
        let server = try SupabaseTestServer.required()
        let dave = "dave-\(UUID().uuidString.prefix(8))", erin = "erin-\(UUID().uuidString.prefix(8))"
        let davesConversation = try await conversation(server, members: [dave])
        let erinsConversation = try await conversation(server, members: [erin])
        let daveSocket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        let erinSocket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        let serviceSocket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await daveSocket.close(); await erinSocket.close(); await serviceSocket.close() } }
        try await subscribeTable(daveSocket, topic: "realtime:dave", table: "messages",
                                 token: server.token(role: "authenticated", sub: dave))
        // A second channel of the same identity on the same socket shares the identity's check.
        try await subscribeTable(daveSocket, topic: "realtime:dave2", table: "messages",
                                 token: server.token(role: "authenticated", sub: dave))
        try await subscribeTable(erinSocket, topic: "realtime:erin", table: "messages",
                                 token: server.token(role: "authenticated", sub: erin))
        try await subscribeTable(serviceSocket, topic: "realtime:all", table: "messages", token: server.serviceKey)
        let tag = UUID().uuidString.prefix(8)
        try await insertMessages(server, [(davesConversation, "\(tag)-d1"), (erinsConversation, "\(tag)-e1"),
                                          (erinsConversation, "\(tag)-e2"), (davesConversation, "\(tag)-d2"),
                                          (davesConversation, "\(tag)-d3"), (erinsConversation, "\(tag)-e3")])
        try await insertMessages(server, [(davesConversation, "\(tag)-end"), (erinsConversation, "\(tag)-end")])
        _ = try await daveSocket.next { $0.topic == "realtime:dave" && $0.payload["data"]?["record"]?["body"]?.stringValue == "\(tag)-end" }
        _ = try await daveSocket.next { $0.topic == "realtime:dave2" && $0.payload["data"]?["record"]?["body"]?.stringValue == "\(tag)-end" }
        _ = try await erinSocket.next { $0.payload["data"]?["record"]?["body"]?.stringValue == "\(tag)-end" }
        for _ in 0..<2 { _ = try await serviceSocket.next { $0.payload["data"]?["record"]?["body"]?.stringValue == "\(tag)-end" } }
        #expect(bodies(daveSocket, topic: "realtime:dave").filter { $0.hasPrefix(tag) } == ["\(tag)-d1", "\(tag)-d2", "\(tag)-d3"])
        #expect(bodies(daveSocket, topic: "realtime:dave2").filter { $0.hasPrefix(tag) } == ["\(tag)-d1", "\(tag)-d2", "\(tag)-d3"])
        #expect(bodies(erinSocket, topic: "realtime:erin").filter { $0.hasPrefix(tag) } == ["\(tag)-e1", "\(tag)-e2", "\(tag)-e3"])
        #expect(bodies(serviceSocket, topic: "realtime:all").filter { $0.hasPrefix(tag) }
                == ["\(tag)-d1", "\(tag)-e1", "\(tag)-e2", "\(tag)-d2", "\(tag)-d3", "\(tag)-e3"])
    }

    /// A composite-key table (reactions) in a batch: each key column is compared, only visible rows arrive, in order.
    @Test("row-level security in a batch: composite-key reactions arrive only where visible, in order")
    func rlsBatchCompositeKey() async throws {
        let server = try SupabaseTestServer.required()
        let user = "frank-\(UUID().uuidString.prefix(8))"
        let mine = try await conversation(server, members: [user])
        let theirs = try await conversation(server, members: ["someone-else"])
        let mineMessage = UUID().uuidString.lowercased(), theirMessage = UUID().uuidString.lowercased()
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'x', 'm'), ($3, $4, 'x', 't')",
                             [mineMessage, mine, theirMessage, theirs])
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        defer { Task { await socket.close() } }
        try await subscribeTable(socket, topic: "realtime:reactions", table: "reactions",
                                 token: server.token(role: "authenticated", sub: user))
        // Same message and user, different symbols: only the full key tells the rows apart.
        let rows: [(message: String, user: String, symbol: String)] = [
            (mineMessage, user, "a"), (theirMessage, user, "b"), (mineMessage, "other", "c"), (theirMessage, "other", "d"),
            (mineMessage, user, "e"), (theirMessage, user, "f"),
        ]
        let values = rows.indices.map { "($\($0 * 3 + 1)::uuid, $\($0 * 3 + 2), $\($0 * 3 + 3))" }.joined(separator: ", ")
        try await server.sql("INSERT INTO reactions (message_id, user_id, symbol) VALUES \(values)",
                             rows.flatMap { [$0.message, $0.user, $0.symbol] })
        try await server.sql("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, $2, 'end')", [mineMessage, user])
        _ = try await socket.next { $0.payload["data"]?["record"]?["symbol"] == "end" } // (taken out of the buffer)
        let seen = socket.all { $0.event == "postgres_changes" && $0.payload["data"]?["type"] == "INSERT" }
            .compactMap { message -> String? in
                guard let record = message.payload["data"]?["record"] else { return nil }
                return "\(record["message_id"]?.stringValue ?? "")/\(record["user_id"]?.stringValue ?? "")/\(record["symbol"]?.stringValue ?? "")"
            }
        #expect(seen == ["\(mineMessage)/\(user)/a", "\(mineMessage)/other/c", "\(mineMessage)/\(user)/e"])

        // A batch of updates (UPDATE is checked too) across both messages.
        try await server.sql("UPDATE reactions SET created_at = now() WHERE message_id IN ($1, $2) AND symbol <> 'end'",
                             [mineMessage, theirMessage])
        try await server.sql("UPDATE reactions SET created_at = now() WHERE message_id = $1 AND symbol = 'end'", [mineMessage])
        _ = try await socket.next { $0.payload["data"]?["type"] == "UPDATE" && $0.payload["data"]?["record"]?["symbol"] == "end" }
        let updated = socket.all { $0.event == "postgres_changes" && $0.payload["data"]?["type"] == "UPDATE" }
            .compactMap { $0.payload["data"]?["record"]?["message_id"]?.stringValue }
        #expect(updated.count == 3 && updated.allSatisfy { $0 == mineMessage })
    }

    /// The batched queries themselves (not a per-change fallback) answer exactly as row-level security decides.
    @Test("batched visibility queries run as a subscriber return exactly its visible rows")
    func batchedVisibilityQueries() async throws {
        let server = try SupabaseTestServer.required()
        let user = "gina-\(UUID().uuidString.prefix(8))"
        let mine = try await conversation(server, members: [user])
        let theirs = try await conversation(server, members: ["someone-else"])
        let ids = (0..<4).map { _ in UUID().uuidString.lowercased() }
        try await server.sql("INSERT INTO messages (id, conversation_id, sender_id, body) VALUES ($1, $2, 'x', 'a'), ($3, $4, 'x', 'b'), "
                             + "($5, $2, 'x', 'c'), ($6, $4, 'x', 'd')", [ids[0], mine, ids[1], theirs, ids[2], ids[3]])
        try await server.sql("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'u', 's'), ($2, 'u', 's')", [ids[0], ids[1]])
        let messages = RealtimeTableName(schema: "public", table: "messages")
        let reactions = RealtimeTableName(schema: "public", table: "reactions")
        func message(_ id: String) -> RealtimeChange {
            RealtimeChange(table: messages, type: "INSERT", commitTimestamp: "", columns: [RealtimeColumn(name: "id", type: "uuid")],
                           record: ["id": .string(id)], oldRecord: nil, primaryKey: [(column: "id", value: .string(id))])
        }
        func reaction(_ id: String, _ symbol: String) -> RealtimeChange {
            RealtimeChange(table: reactions, type: "INSERT", commitTimestamp: "",
                           columns: [RealtimeColumn(name: "message_id", type: "uuid"), RealtimeColumn(name: "user_id", type: "text"),
                                     RealtimeColumn(name: "symbol", type: "text")],
                           record: [:], oldRecord: nil,
                           primaryKey: [(column: "message_id", value: .string(id)), (column: "user_id", value: "u"),
                                        (column: "symbol", value: .string(symbol))])
        }
        // A missing row (ids[0] with another symbol, a random message id) is not visible either.
        let changes = [message(ids[0]), reaction(ids[0], "s"), message(ids[1]), reaction(ids[1], "s"), message(ids[2]),
                       reaction(ids[0], "other"), message(ids[3]), message(UUID().uuidString.lowercased())]
        let queries = RealtimeVisibility.queries(for: Array(changes.indices), of: changes, chunkSize: 3)
        #expect(queries.map(\.changes.count) == [3, 3, 2])
        let claims = JWTClaims(object: ["role": "authenticated", "sub": .string(user)])
        let visible = try await server.context.transaction(as: RequestIdentity(claims: claims)) { connection in
            try queries.flatMap { query in query.visibleChanges(in: try connection.query(query.sql, query.parameters).rows) }
        }
        #expect(Set(visible) == [0, 1, 4])
        let serviceVisible = try await server.context.transaction(as: RequestIdentity(claims: JWTClaims(object: ["role": "service_role"]))) {
            connection in try queries.flatMap { query in query.visibleChanges(in: try connection.query(query.sql, query.parameters).rows) }
        }
        #expect(Set(serviceVisible) == [0, 1, 2, 3, 4, 6])
    }

    /// A batch's visibility query probes the primary key per change: its cost follows the batch, not the table.
    @Test("a batched visibility query probes the primary key instead of scanning the table")
    func batchedVisibilityUsesTheKey() async throws {
        let server = try SupabaseTestServer.required()
        let user = "hana-\(UUID().uuidString.prefix(8))"
        let room = try await conversation(server, members: [user])
        try await server.sql("INSERT INTO messages (conversation_id, sender_id, body) SELECT $1::uuid, 'x', 'm' || n "
                             + "FROM generate_series(1, 5000) AS n", [room])
        try await server.sql("ANALYZE messages")
        let keys = try await server.sql("SELECT id::text FROM messages WHERE conversation_id = $1::uuid LIMIT 200", [room])
        let table = RealtimeTableName(schema: "public", table: "messages")
        let changes = keys.rows.compactMap { $0.first ?? nil }.map { id in
            RealtimeChange(table: table, type: "INSERT", commitTimestamp: "", columns: [RealtimeColumn(name: "id", type: "uuid")],
                           record: ["id": .string(id)], oldRecord: nil, primaryKey: [(column: "id", value: .string(id))])
        }
        let query = try #require(RealtimeVisibility.queries(for: Array(changes.indices), of: changes).first)
        #expect(query.changes.count == 200)
        let claims = JWTClaims(object: ["role": "authenticated", "sub": .string(user)])
        let (plan, visible) = try await server.context.transaction(as: RequestIdentity(claims: claims)) { connection in
            let plan = try connection.query("EXPLAIN " + query.sql, query.parameters).rows.compactMap { $0.first ?? nil }
            return (plan.joined(separator: "\n"), query.visibleChanges(in: try connection.query(query.sql, query.parameters).rows))
        }
        #expect(visible.count == 200)
        #expect(plan.contains("Index Scan"), "\(plan)")
        #expect(!plan.contains("Seq Scan on messages"), "\(plan)")
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
        #expect(summary["rest_broadcast"]?["who"] == "rest", "http_send through /realtime/v1/api/broadcast")
    }

    /// The REST broadcast API over HTTP: both request shapes reach joined sockets; keys and privacy are checked.
    @Test("POST /realtime/v1/api/broadcast (messages list and /<topic>/events/<event>) reaches joined sockets; keys checked")
    func restBroadcastAPI() async throws {
        let server = try SupabaseTestServer.required()
        let token = server.token(role: "authenticated", sub: "alice")
        let socket = try await RealtimeTestSocket.connect(server, apiKey: server.anonKey)
        _ = try await socket.join("realtime:api-room", config: ["broadcast": ["self": false]], token: token)
        let http = HTTPClient()
        func post(_ path: String, key: String?, contentType: String = "application/json", _ body: String) async throws -> Int {
            var headers = HTTPHeaders()
            if let key { headers.add("apikey", key) }
            headers.add("Content-Type", contentType)
            let url = try #require(URL(string: server.baseURL + "/realtime/v1/api/broadcast" + path))
            return try await http.send(HTTPRequest(method: .post, url: url, headers: headers, body: Data(body.utf8))).status
        }
        #expect(try await post("", key: server.anonKey,
                               #"{"messages":[{"topic":"api-room","event":"note","payload":{"n":1}}]}"#) == 202)
        let first = try await socket.next(where: { $0.event == "broadcast" })
        #expect(first.payload["event"] == "note")
        #expect(first.payload["payload"]?["n"] == 1)
        #expect(try await post("/api-room/events/ping", key: server.anonKey, #"{"n":2}"#) == 202)
        let second = try await socket.next(where: { $0.event == "broadcast" })
        #expect(second.payload["event"] == "ping")
        #expect(second.payload["payload"]?["n"] == 2)
        #expect(try await post("", key: nil, #"{"messages":[]}"#) == 401)
        #expect(try await post("", key: server.anonKey, #"{"nope":1}"#) == 400)
        #expect(try await post("/api-room/events/ping?private=true", key: server.anonKey, #"{"n":3}"#) == 403)
        #expect(try await post("/api-room/nothing", key: server.anonKey, "{}") == 404)
        await socket.close()
    }
}
