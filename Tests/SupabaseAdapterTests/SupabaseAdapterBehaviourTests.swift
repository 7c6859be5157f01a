import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet
import TestSupport
import Testing

/// The adapter against the real server (presence, expiring tokens) and against a misbehaving fake one.
@Suite("Supabase adapter behaviour", .serialized)
struct SupabaseAdapterBehaviourTests {
    private static func adapter(_ server: AdapterTestServer, _ user: UserID, lifetime: Int = 3600,
                                provider: Bool = false) -> SupabaseAdapter {
        let signer = JWTSigner(secret: AdapterTestServer.jwtSecret)
        let mint: @Sendable () -> String = {
            signer.sign(claims: ["role": "authenticated", "sub": .string(user.rawValue),
                                 "exp": .int(Int64(Date().timeIntervalSince1970) + Int64(lifetime))])
        }
        var configuration = SupabaseAdapter.Configuration(baseURL: server.baseURL,
                                                          apiKey: signer.sign(claims: ["role": "anon"]),
                                                          accessToken: mint(), localUser: user)
        if provider { configuration.tokenProvider = { mint() } }
        return SupabaseAdapter(configuration: configuration)
    }

    /// A value shared with escaping closures.
    final class Shared<Value: Sendable>: Sendable {
        let value: Locked<Value>
        init(_ value: Value) { self.value = Locked(value) }
        func withLock<R>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    }

    /// Collects a live stream's events in the background.
    final class Recorder: Sendable {
        let events = Shared<[AdapterEvent]>([])
        let task: Task<Void, Never>
        init(_ stream: AsyncStream<AdapterEvent>) {
            let events = self.events
            task = Task { for await event in stream { events.withLock { $0.append(event) } } }
        }
        var connects: Int { events.withLock { $0.filter { $0 == .connection(.connected) }.count } }
        var messages: [RemoteMessage] {
            events.withLock { $0.compactMap { if case .change(.message(let m)) = $0 { m } else { nil } } }
        }
    }

    private static func eventually(_ what: String, timeout: Duration = .seconds(15), _ condition: () async throws -> Bool) async throws {
        let deadline = TestTime.deadline(after: timeout)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out: \(what)")
    }

    private static func outgoing(_ text: String, _ conversation: ConversationID, _ sender: UserID) -> OutgoingMessage {
        OutgoingMessage(id: .make(), conversation: conversation, sender: sender, text: text, createdAt: Date())
    }

    /// Prepares and publishes `text` from `adapter`'s user in `conversation`; returns the row's remote ID.
    private static func send(_ adapter: SupabaseAdapter, _ text: String, in conversation: ConversationID) async throws -> RemoteID {
        let prepared = try await adapter.prepare(outgoing(text, conversation, adapter.localUser), noSend: false)
        return try #require(try await adapter.publish(prepared).remoteID)
    }

    @Test("an adapter signed in with email and password refreshes its token before it expires, and signs in again after a sign-out")
    func passwordSession() async throws {
        try await AdapterTestServer.run({ $0.authTokenLifetime = .seconds(32) }) { server in
            let signer = JWTSigner(secret: AdapterTestServer.jwtSecret)
            let anonKey = signer.sign(claims: ["role": "anon"])
            let http = HTTPClient()
            func auth(_ path: String, token: String? = nil, _ body: JSONValue) async throws -> HTTPResponse {
                var headers: HTTPHeaders = ["apikey": anonKey, "Content-Type": "application/json"]
                if let token { headers["Authorization"] = "Bearer \(token)" }
                let url = try #require(URL(string: server.baseURL.absoluteString + "/auth/v1/\(path)"))
                return try await http.send(HTTPRequest(method: .post, url: url, headers: headers, body: Data(body.serialized.utf8)))
            }
            let signUp = try await auth("signup", ["email": "ivy@example.com", "password": "ivy-password"])
            #expect(signUp.status == 200)
            let wrong = SupabasePasswordSession(baseURL: server.baseURL, apiKey: anonKey, email: "ivy@example.com", password: "nope-nope")
            let refused = await #expect(throws: SwitchboardError.self) { try await wrong.signIn() }
            #expect(refused?.code == .unauthorized)
            #expect(refused?.message.contains("Invalid login credentials") == true)

            let session = SupabasePasswordSession(baseURL: server.baseURL, apiKey: anonKey, email: "ivy@example.com", password: "ivy-password")
            let (token, user) = try await session.signIn()
            #expect(UUIDText.isUUID(user.rawValue))
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let conversation = try await harness.createConversation(members: [user, "bob"])
            var configuration = SupabaseAdapter.Configuration(baseURL: server.baseURL, apiKey: anonKey, accessToken: token, localUser: user)
            configuration.tokenProvider = { try await session.freshToken() }
            let adapter = SupabaseAdapter(configuration: configuration)
            _ = try await Self.send(adapter, "before the refresh", in: conversation)
            // The token expires in 32 s and the adapter refreshes 30 s ahead: after 3 s it must have rotated.
            try await Task.sleep(for: .seconds(3))
            _ = try await Self.send(adapter, "after the refresh", in: conversation)
            let rotated = try await server.server.context!.pool.withConnection {
                try $0.query("SELECT count(*) FROM auth.refresh_tokens t JOIN auth.sessions s ON s.id = t.session_id "
                             + "WHERE s.user_id = $1::uuid AND t.revoked", [user.rawValue])
            }
            #expect((Int(rotated.rows.first?.first.flatMap { $0 } ?? "0") ?? 0) >= 1, "the refresh token was used")
            // Every session ended on the server: the next refresh falls back to the password.
            #expect(try await auth("logout?scope=global", token: try await session.freshToken(), .object([])).status == 204)
            try await Task.sleep(for: .seconds(3))
            _ = try await Self.send(adapter, "after a sign-out", in: conversation)
            #expect(try await adapter.messageCount(in: conversation) == 3)
            let sessions = try await server.server.context!.pool.withConnection {
                try $0.query("SELECT count(*) FROM auth.sessions WHERE user_id = $1::uuid", [user.rawValue])
            }
            #expect(sessions.rows.first?.first == "1", "the refused refresh was followed by a new password sign-in")
        }
    }

    @Test("presence: each member sees the other online; a member whose stream ends goes offline")
    func presence() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let conversation = try await harness.createConversation(members: ["alice", "bob"])
            let alice = Self.adapter(server, "alice"), bob = Self.adapter(server, "bob")
            let aliceLive = Recorder(alice.liveEvents(in: conversation))
            let bobLive = Recorder(bob.liveEvents(in: conversation))
            try await Self.eventually("alice sees bob online") { await alice.onlineMembers(in: conversation) == ["alice", "bob"] }
            try await Self.eventually("bob sees alice online") { await bob.onlineMembers(in: conversation) == ["alice", "bob"] }
            bobLive.task.cancel()
            try await Self.eventually("bob goes offline for alice") { await alice.onlineMembers(in: conversation) == ["alice"] }
            aliceLive.task.cancel()
        }
    }

    @Test("presence: members joining at the same moment all see each other (no diff overtakes a join's own state)")
    func presenceOfSimultaneousJoins() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let users: [UserID] = (0..<6).map { UserID("member-\($0)") }
            let everyone = Set(users.map(\.rawValue))
            for round in 0..<3 {
                let conversation = try await harness.createConversation(members: users)
                let adapters = users.map { Self.adapter(server, $0) }
                let recorders = adapters.map { Recorder($0.liveEvents(in: conversation)) }
                for (user, adapter) in zip(users, adapters) {
                    try await Self.eventually("round \(round): \(user) sees all \(users.count) members") {
                        Set(await adapter.onlineMembers(in: conversation).map(\.rawValue)) == everyone
                    }
                }
                for recorder in recorders { recorder.task.cancel() }
            }
        }
    }

    @Test("tokens expiring every 4 s are refreshed before they lapse: REST keeps working and no live change is lost")
    func expiringTokens() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let conversation = try await harness.createConversation(members: ["alice", "bob"])
            let alice = Self.adapter(server, "alice", lifetime: 4, provider: true)
            let bob = Self.adapter(server, "bob")
            let aliceLive = Recorder(alice.liveEvents(in: conversation))
            try await Self.eventually("alice joined") { aliceLive.connects >= 1 }
            var sent: [RemoteID] = []
            for index in 0..<20 {
                let prepared = try await bob.prepare(Self.outgoing("tick \(index)", conversation, "bob"), noSend: false)
                sent.append(try #require(try await bob.publish(prepared).remoteID))
                let mine = try await alice.prepare(Self.outgoing("ack \(index)", conversation, "alice"), noSend: false)
                _ = try await alice.publish(mine)
                try await Task.sleep(for: .milliseconds(500))
            }
            try await Self.eventually("alice received all of bob's messages live") {
                Set(aliceLive.messages.map(\.remoteID)).isSuperset(of: sent)
            }
            #expect(aliceLive.connects == 1, "the channel was rejoined \(aliceLive.connects - 1) times: the token lapsed")
            aliceLive.task.cancel()
        }
    }

    @Test("a server error body fails the publish with a typed, retryable error; a refusal is not retryable")
    func errorBodies() async throws {
        let status = Shared(500)
        let fake = HTTPServer()
        fake.route(.post, "/rest/v1/messages") { _ in
            let code = status.withLock { $0 }
            return .json(Data(#"{"code":"XX000","message":"boom","details":null,"hint":null}"#.utf8), status: code)
        }
        let port = try fake.start()
        var configuration = SupabaseAdapter.Configuration(baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiKey: "k",
                                                          accessToken: "t", localUser: "alice")
        configuration.backend = "fake"
        let adapter = SupabaseAdapter(configuration: configuration)
        let conversation = ConversationID(UUID().uuidString.lowercased())
        let prepared = try await adapter.prepare(Self.outgoing("hi", conversation, "alice"), noSend: false)
        let serverError = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
        #expect(serverError?.code == .transport && serverError?.isRetryable == true)
        #expect(serverError?.message.contains("boom") == true)
        status.withLock { $0 = 403 }
        let refusal = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
        #expect(refusal?.code == .refused && refusal?.isRetryable == false)
        await fake.stop()
    }

    /// `publishAll` sends the prepared row JSON as it is (in chunks, duplicates once); a prepared message without a
    /// remote ID publishes under the `id` its payload holds; a payload that is no row is refused before any request.
    @Test("publishAll sends prepared rows as they are; without a remote ID the payload's id is used; junk is refused")
    func publishAllRawRows() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let conversation = try await harness.createConversation(members: ["erin", "fred"])
            let erin = Self.adapter(server, "erin")
            var prepared: [PreparedMessage] = []
            for index in 0..<5 { prepared.append(try await erin.prepare(Self.outgoing("bulk \(index)", conversation, "erin"), noSend: true)) }
            var anonymous = prepared[4]
            anonymous.remoteID = nil
            let receipts = try await erin.publishAll(Array(prepared[0..<4]) + [anonymous, prepared[1]])
            #expect(receipts.map(\.remoteID) == (prepared[0..<4] + [prepared[4], prepared[1]]).map(\.remoteID))
            #expect(receipts.allSatisfy { $0.serverTime != nil })
            let fred = Self.adapter(server, "fred")
            let page = try await fred.history(in: conversation, before: nil, limit: 10)
            #expect(page.messages.map(\.text).sorted() == (0..<5).map { "bulk \($0)" })
            var junk = prepared[0]
            junk.payload = Data("not a row".utf8)
            let refusal = await #expect(throws: SwitchboardError.self) { _ = try await erin.publishAll([prepared[0], junk]) }
            #expect(refusal?.code == .invalidArgument)
        }
    }

    /// One publish sends the prepared row as it is and reads back only the ID and the server time: the receipt's
    /// time is the stored row's, a replay answers the same time, the same row ID from another sender is a
    /// conflict, and a payload that is not a row is refused before any request.
    @Test("publish: receipt time is the stored row's, a replay gives the same, another sender's ID is a conflict")
    func publishReceipts() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let conversation = try await harness.createConversation(members: ["gina", "hugo"])
            let gina = Self.adapter(server, "gina"), hugo = Self.adapter(server, "hugo")
            let prepared = try await gina.prepare(Self.outgoing("one publish", conversation, "gina"), noSend: true)
            let receipt = try await gina.publish(prepared)
            #expect(receipt.remoteID == prepared.remoteID)
            let time = try #require(receipt.serverTime)
            let page = try await hugo.history(in: conversation, before: nil, limit: 10)
            let stored = try #require(page.messages.first { $0.remoteID == prepared.remoteID })
            #expect(stored.text == "one publish")
            #expect(abs(stored.sentAt.timeIntervalSince(time)) < 0.000_001)
            let replay = try await gina.publish(prepared)
            #expect(replay.remoteID == prepared.remoteID)
            #expect(replay.serverTime.map { abs($0.timeIntervalSince(time)) < 0.000_001 } == true)
            let stolen = try await hugo.prepare(OutgoingMessage(id: prepared.id, conversation: conversation, sender: "hugo",
                                                                text: "same ID", createdAt: Date()), noSend: true)
            #expect(stolen.remoteID == prepared.remoteID)
            let conflict = await #expect(throws: SwitchboardError.self) { _ = try await hugo.publish(stolen) }
            #expect(conflict?.code == .conflict)
            var junk = prepared
            junk.payload = Data("not a row".utf8)
            let refusal = await #expect(throws: SwitchboardError.self) { _ = try await gina.publish(junk) }
            #expect(refusal?.code == .invalidArgument)
            #expect(try await hugo.history(in: conversation, before: nil, limit: 10).messages.count == 1)
        }
    }

    /// Every edit, delete, reaction and receipt names its conversation, and the server acts only on a message of
    /// that conversation: the PATCH filters on `conversation_id` as well as `id`, and a reaction or receipt row naming
    /// another conversation than its message's is refused. A member of both conversations cannot reach a message of
    /// one through the other; nothing changes, and the refusal says why.
    @Test("edit, delete, reaction and receipt naming another conversation than the message's are refused (notFound); nothing changes")
    func crossConversationRefused() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let room = try await harness.createConversation(members: ["ivy", "jon"])
            let elsewhere = try await harness.createConversation(members: ["ivy", "jon"])
            let ivy = Self.adapter(server, "ivy"), jon = Self.adapter(server, "jon")
            let target = try await Self.send(ivy, "ivy's words, elsewhere", in: elsewhere)
            let roomCursor = try await jon.latestCursor(in: room)
            let elsewhereCursor = try await jon.latestCursor(in: elsewhere)
            let attempts: [(String, () async throws -> Void)] = [
                ("edit", { try await ivy.edit(target, in: room, text: "moved") }),
                ("delete", { try await ivy.delete(target, in: room) }),
                ("reaction", { try await jon.setReaction("👍", isActive: true, on: target, in: room) }),
                ("receipt", { try await jon.sendReceipt(.read, for: target, in: room) }),
            ]
            for (what, attempt) in attempts {
                let error = await #expect(throws: SwitchboardError.self, "\(what)") { try await attempt() }
                #expect(error?.code == .notFound, "\(what): \(String(describing: error))")
                #expect(error?.message.contains("is not in conversation") == true, "\(what): \(String(describing: error))")
            }
            // Someone else's message in the right conversation is still refused as not theirs.
            let notYours = await #expect(throws: SwitchboardError.self) { try await jon.edit(target, in: elsewhere, text: "mine") }
            #expect(notYours?.code == .refused && notYours?.message.contains("not yours") == true, "\(String(describing: notYours))")
            #expect(try await jon.changes(in: room, after: roomCursor, limit: 10).changes.isEmpty)
            #expect(try await jon.changes(in: elsewhere, after: elsewhereCursor, limit: 10).changes.isEmpty)
            let page = try await jon.history(in: elsewhere, before: nil, limit: 10)
            #expect(page.messages.map(\.text) == ["ivy's words, elsewhere"])
            #expect(page.messages.allSatisfy { $0.editedAt == nil && $0.deletedAt == nil })
            #expect(page.reactions.isEmpty && page.receipts.isEmpty)
            // Named with their own conversation, the same calls go through.
            try await jon.setReaction("👍", isActive: true, on: target, in: elsewhere)
            try await jon.sendReceipt(.read, for: target, in: elsewhere)
            try await ivy.edit(target, in: elsewhere, text: "ivy's words, edited")
            let after = try await jon.history(in: elsewhere, before: nil, limit: 10)
            #expect(after.messages.map(\.text) == ["ivy's words, edited"])
            #expect(after.reactions.map(\.symbol) == ["👍"] && after.receipts.map(\.state) == [.read])
        }
    }

    /// The filtered live stream (a bridge's wake-up) never carries the reader's own messages, edited ones included,
    /// nor messages of its other conversations; others' messages and everyone's reactions arrive as before.
    @Test("live events skipping own messages: others' messages and all reactions arrive; own rows and other rooms do not")
    func liveEventsSkippingOwnMessages() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let me: UserID = "bridge \"two\", (c.d)\\"
            let room = try await harness.createConversation(members: [me, "dora"])
            let elsewhere = try await harness.createConversation(members: [me, "dora"])
            let mine = Self.adapter(server, me), dora = Self.adapter(server, "dora")
            let filtered = Recorder(mine.liveEventsSkippingOwnMessages(in: room))
            let everything = Recorder(mine.liveEvents(in: room))
            defer { filtered.task.cancel(); everything.task.cancel() }
            try await Self.eventually("both joined") { filtered.connects >= 1 && everything.connects >= 1 }
            let own = try await Self.send(mine, "own", in: room)
            let doras = try await Self.send(dora, "dora", in: room)
            _ = try await Self.send(dora, "dora elsewhere", in: elsewhere)
            try await mine.edit(own, in: room, text: "own (edited)")
            try await mine.setReaction("👍", isActive: true, on: doras, in: room)
            _ = try await Self.send(dora, "dora last", in: room)
            try await Self.eventually("the last message on both streams") {
                filtered.messages.contains { $0.text == "dora last" } && everything.messages.contains { $0.text == "dora last" }
            }
            // The unfiltered stream saw the own message and its edit: the filtered one left exactly those out.
            #expect(everything.messages.map(\.text) == ["own", "dora", "own (edited)", "dora last"])
            #expect(filtered.messages.map(\.text) == ["dora", "dora last"])
            let reactions = filtered.events.withLock { events in
                events.compactMap { if case .change(.reaction(let reaction)) = $0 { reaction } else { nil } }
            }
            #expect(reactions.map(\.user) == [me], "reactions keep the conversation filter")
        }
    }

    /// The filtered change read leaves out only the reader's own plain messages, pages without gaps, and moves its
    /// cursor past what it left out (also for a user ID that has to be quoted in the filter).
    @Test("messageCount is the server's count of the rows the user may read, deleted ones included, as history lists them")
    func messageCount() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let room = try await harness.createConversation(members: ["alice", "bob"])
            let other = try await harness.createConversation(members: ["alice", "carol"])
            let alice = Self.adapter(server, "alice"), bob = Self.adapter(server, "bob"), carol = Self.adapter(server, "carol")
            #expect(try await alice.messageCount(in: room) == 0)
            var sent: [RemoteID] = []
            for index in 0..<7 { sent.append(try await Self.send(index % 2 == 0 ? alice : bob, "m\(index)", in: room)) }
            _ = try await Self.send(carol, "elsewhere", in: other)
            try await alice.delete(sent[2], in: room)
            try await bob.setReaction("👍", isActive: true, on: sent[0], in: room)
            #expect(try await alice.messageCount(in: room) == 7)
            #expect(try await bob.messageCount(in: room) == 7)
            #expect(try await alice.allMessages(in: room, pageSize: 3).count == 7)
            #expect(try await alice.messageCount(in: other) == 1)
            #expect(try await carol.messageCount(in: room) == 0, "row-level security: carol reads none of the room's rows")
        }
    }

    @Test("changes skipping own plain messages: others', own edited and own deleted arrive; the cursor moves past the rest")
    func changesSkippingOwnPlainMessages() async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let me: UserID = "bridge \"one\", (a.b)\\"
            let conversation = try await harness.createConversation(members: [me, "dora"])
            let mine = Self.adapter(server, me), dora = Self.adapter(server, "dora")
            var expected: [String] = []
            var editedTarget: RemoteID?, deletedTarget: RemoteID?
            for index in 0..<12 {
                let own = try await Self.send(mine, "own \(index)", in: conversation)
                if index == 3 { editedTarget = own }
                if index == 7 { deletedTarget = own }
                _ = try await Self.send(dora, "dora \(index)", in: conversation)
                expected.append("dora \(index)")
            }
            try await mine.edit(try #require(editedTarget), in: conversation, text: "own 3 (edited)")
            try await mine.delete(try #require(deletedTarget), in: conversation)
            for index in 0..<3 { _ = try await Self.send(mine, "own tail \(index)", in: conversation) }
            // Pages of 5: every change but the own plain messages, in version order, without gaps or repeats.
            var cursor: Cursor?
            var messages: [RemoteMessage] = []
            var pages = 0
            while true {
                let batch = try await mine.changesSkippingOwnPlainMessages(in: conversation, after: cursor, limit: 5)
                pages += 1
                messages += batch.changes.compactMap { if case .message(let message) = $0 { message } else { nil } }
                cursor = batch.cursor
                if !batch.hasMore { break }
                #expect(pages < 20)
            }
            #expect(messages.filter { $0.sender == "dora" }.map(\.text) == expected)
            let own = messages.filter { $0.sender == me }
            #expect(own.count == 2, "only the edited and the deleted own message: \(own.map(\.text))")
            #expect(own.contains { $0.remoteID == editedTarget && $0.text == "own 3 (edited)" })
            #expect(own.contains { $0.remoteID == deletedTarget && $0.deletedAt != nil })
            // The messages cursor stands at the newest version, past the own messages left out, so the next read is empty.
            let newest = try await mine.latestCursor(in: conversation)
            #expect(cursor?.rawValue.split(separator: ",").first == newest?.rawValue.split(separator: ",").first)
            let again = try await mine.changesSkippingOwnPlainMessages(in: conversation, after: cursor, limit: 5)
            #expect(again.changes.isEmpty && !again.hasMore)
            // The unfiltered read sees everything: 24 sends and 3 more, the edit and the delete as updated rows.
            var all = 0
            var plain: Cursor?
            while true {
                let batch = try await mine.changes(in: conversation, after: plain, limit: 50)
                all += batch.changes.count
                plain = batch.cursor
                if !batch.hasMore { break }
            }
            #expect(all == 27)
        }
    }

    @Test("delta sync keeps a cursor per table: a message committed between the reads of two tables is not passed over")
    func perTableChangeCursor() async throws {
        // Versions commit in order, but the three tables are read at three moments. Here message v3 becomes
        // visible only after the first round read `messages`, while reaction v4 is already seen by that round.
        let conversation = UUID().uuidString.lowercased()
        let messageIDs = (1...3).map { _ in UUID().uuidString.lowercased() }
        let lateMessageVisible = Shared(false)
        @Sendable func messageRow(_ index: Int) -> JSONValue {
            ["id": .string(messageIDs[index]), "conversation_id": .string(conversation), "sender_id": "bob",
             "body": .string("m\(index + 1)"), "created_at": "2026-11-30T10:00:00.000000+00:00", "version": .int(Int64(index + 1))]
        }
        let reaction: JSONValue = ["message_id": .string(messageIDs[0]), "conversation_id": .string(conversation), "user_id": "bob",
                                   "symbol": "👍", "active": true, "created_at": "2026-11-30T10:00:01.000000+00:00", "version": 4]
        let after = Shared<[String: [String]]>([:])
        @Sendable func versionAfter(_ request: HTTPServerRequest) -> Int64 {
            Int64(request.queryValue("version")?.dropFirst(3) ?? "") ?? -1
        }
        let fake = HTTPServer()
        fake.route(.get, "/rest/v1/messages") { request in
            let floor = versionAfter(request)
            after.withLock { $0["messages", default: []].append(String(floor)) }
            let visible = lateMessageVisible.withLock { $0 } ? 3 : 2
            let rows = (0..<visible).map(messageRow).filter { ($0["version"]?.intValue ?? 0) > floor }
            lateMessageVisible.withLock { $0 = true }  // committed right after this read
            return .json(Data(JSONValue.array(rows).serialized.utf8))
        }
        fake.route(.get, "/rest/v1/reactions") { request in
            let floor = versionAfter(request)
            after.withLock { $0["reactions", default: []].append(String(floor)) }
            return .json(Data(JSONValue.array(floor < 4 ? [reaction] : []).serialized.utf8))
        }
        fake.route(.get, "/rest/v1/receipts") { _ in .json(Data("[]".utf8)) }
        let port = try fake.start()
        var configuration = SupabaseAdapter.Configuration(baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiKey: "k",
                                                          accessToken: "t", localUser: "alice")
        configuration.backend = "fake"
        let adapter = SupabaseAdapter(configuration: configuration)

        // The first round: messages read before v3 committed (so it may well run before or after the others).
        let first = try await adapter.changes(in: ConversationID(conversation), after: Cursor("v:0"), limit: 10)
        let second = try await adapter.changes(in: ConversationID(conversation), after: first.cursor, limit: 10)
        let third = try await adapter.changes(in: ConversationID(conversation), after: second.cursor, limit: 10)
        var seenMessages: [String] = []
        var reactions = 0
        for change in first.changes + second.changes + third.changes {
            switch change {
            case .message(let message): seenMessages.append(message.remoteID.rawValue)
            case .reaction: reactions += 1
            case .receipt: Issue.record("no receipts were served")
            }
        }
        #expect(seenMessages == messageIDs, "every message once, in version order")
        #expect(reactions == 1)
        #expect(third.changes.isEmpty && !third.hasMore)
        #expect(third.cursor == Cursor("v:3,4,0"))
        #expect(after.withLock { $0["messages"] } == ["0", "2", "3"])
        #expect(after.withLock { $0["reactions"] } == ["0", "4", "4"])

        // Malformed cursors are refused before any request.
        for bad in ["v:1,2", "v:-1", "v:a", "h:1:2", "v:1,2,3,4", "v:"] {
            await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.changes(in: ConversationID(conversation), after: Cursor(bad), limit: 10)
            }
        }
        await fake.stop()
    }

    @Test("a malformed realtime frame makes the adapter reconnect and rejoin (and the engine resync), never crash")
    func malformedFrame() async throws {
        let joins = Shared(0)
        let fake = HTTPServer()
        fake.webSocket("/realtime/v1/websocket") { connection in
            for await frame in connection.frames {
                guard case .text(let text) = frame, let message = try? PhoenixTextCodec.decode(text, version: .v2) else { continue }
                if message.event == "phx_join" {
                    let count = joins.withLock { $0 += 1; return $0 }
                    try? await connection.send(text: PhoenixTextCodec.encode(PhoenixMessage.reply(to: message), version: .v2))
                    if count == 1 { try? await connection.send(text: "[\"1\",null,\"realtime:x\",\"postgres_changes\",{") }
                }
            }
        }
        let port = try fake.start()
        let adapter = SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, apiKey: "k", accessToken: "t", localUser: "alice"))
        let live = Recorder(adapter.liveEvents(in: "c1"))
        try await Self.eventually("rejoined after the malformed frame") { live.connects >= 2 }
        let disconnects = live.events.withLock { $0.filter { if case .connection(.disconnected) = $0 { true } else { false } } }
        #expect(disconnects.count >= 1)
        live.task.cancel()
        await fake.stop()
    }
}
