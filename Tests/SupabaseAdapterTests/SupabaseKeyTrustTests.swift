import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseProtocol
import SwitchboardCore
import SwitchboardEngine
import SwitchboardNet
import SwitchboardStore
import TestSupport
import Testing

/// Any member of a Supabase-like conversation can write any `metadata.switchboard.key` into his own rows, at insert
/// or later by PATCH, in any spelling. An app on the engine must never show one party's message changed by
/// another's (DESIGN §2): a row speaks for its own ID, so the attacker's message stands apart, under his name.
@Suite("Supabase: a member who claims another's key changes nothing of theirs", .serialized)
struct SupabaseKeyTrustTests {
    /// How bob makes his row claim the key of alice's message.
    enum Claim: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// `metadata.switchboard.key` is alice's key from the insert on.
        case atInsert
        /// Bob's row is plain at insert; he PATCHes alice's key into its metadata afterwards.
        case byLaterPatch
        /// The upper-case form of alice's UUID key, at insert (and a row under that ID itself, refused).
        case upperCaseAtInsert

        /// The case as the test report names it.
        var testDescription: String {
            switch self {
            case .atInsert: "claimed at insert"
            case .byLaterPatch: "claimed by a later PATCH"
            case .upperCaseAtInsert: "claimed in upper case"
            }
        }
    }

    /// What bob's message shows at a step of the attack.
    enum BobsMessage: Equatable {
        /// A message of his with this text.
        case text(String)
        /// Deleted (a tombstone) or not shown at all.
        case deleted
    }

    /// The people of one test: alice writes, bob attacks, carol only reads.
    struct People {
        let alice: UserID
        let bob: UserID
        let carol: UserID
        let conversation: ConversationID
    }

    /// One app: an engine client on a store of its own with the conversation open.
    struct App {
        let name: String
        let client: ChatClient
        let store: SQLiteStore
    }

    @Test("bob claims the key of alice's message, edits and deletes his row: every app shows alice's message as she wrote it",
          arguments: Claim.allCases)
    func claimedKeyInApps(claim: Claim) async throws {
        try await AdapterTestServer.run { server in
            let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)"), carol = UserID("carol-\(suffix)")
            let people = People(alice: alice, bob: bob, carol: carol,
                                conversation: try await harness.createConversation(members: [alice, bob, carol]))
            var apps: [App] = []
            do {
                try await attack(claim, people: people, server: server, harness: harness, apps: &apps)
            } catch {
                await Self.close(apps)
                throw error
            }
            await Self.close(apps)
        }
    }

    /// The attack of one `claim`, with alice's and carol's apps live from the start and a fresh app of carol's
    /// (another device) that learns everything from history once bob has done.
    private func attack(_ claim: Claim, people: People, server: AdapterTestServer, harness: SupabaseHarness,
                        apps: inout [App]) async throws {
        let conversation = people.conversation
        let alicesApp = try await Self.app(people.alice, "alice", people: people, server: server, harness: harness)
        apps.append(alicesApp)
        let readersApp = try await Self.app(people.carol, "carol", people: people, server: server, harness: harness)
        apps.append(readersApp)
        let sent = try await alicesApp.client.send("alice's words", in: conversation)
        #expect(try await Self.eventually { try await alicesApp.client.message(sent.id)?.delivery.isPublished == true })
        #expect(try await Self.eventually { try await readersApp.client.message(sent.id) != nil })
        let key = sent.id.rawValue
        #expect(UUIDText.isCanonical(key), "alice's key is a canonical UUID, the row's ID")

        let rest = RawREST(baseURL: server.baseURL, harness: harness)
        if claim == .upperCaseAtInsert {
            // A row under the upper-case form of alice's ID is the same UUID: her row's, which bob cannot take.
            let squat = try await rest.insert(["id": .string(key.uppercased()), "conversation_id": .string(conversation.rawValue),
                                               "sender_id": .string(people.bob.rawValue), "body": "bob squats"],
                                              as: people.bob)
            #expect(squat.status == 409, "\(squat.status) \(String(decoding: squat.body, as: UTF8.self))")
        }

        // Bob, through his own adapter, posts a row of his own that claims alice's key.
        let claimed = claim == .upperCaseAtInsert ? key.uppercased() : key
        let bobs = Self.adapter(people.bob, server: server, harness: harness)
        let outgoing = OutgoingMessage(id: .make(), conversation: conversation, sender: people.bob, text: "bob's words",
                                       metadata: claim == .byLaterPatch ? [:] : [SupabaseRows.keyMetadata: claimed],
                                       createdAt: Date())
        let remote = try #require(try await bobs.publish(try await bobs.prepare(outgoing, noSend: false)).remoteID)
        #expect(remote.rawValue != key)
        if claim == .byLaterPatch {
            let patched = try await rest.patchMetadata(of: remote, [SupabaseRows.keyMetadata: .string(claimed)], as: people.bob)
            #expect(patched.status == 200, "\(patched.status) \(String(decoding: patched.body, as: UTF8.self))")
        }
        // The server keeps the claim as bob wrote it: every reader really gets it.
        #expect(try await rest.metadata(of: remote, as: people.carol)?[SupabaseRows.keyMetadata]?.stringValue == claimed)

        for app in [alicesApp, readersApp] {
            try await Self.expectAliceIntact(in: app, bobs: .text("bob's words"), sent: sent, people: people)
        }
        try await bobs.edit(remote, in: conversation, text: "bob's edit")
        for app in [alicesApp, readersApp] {
            try await Self.expectAliceIntact(in: app, bobs: .text("bob's edit"), sent: sent, people: people)
        }
        try await bobs.delete(remote, in: conversation)
        for app in [alicesApp, readersApp] {
            try await Self.expectAliceIntact(in: app, bobs: .deleted, sent: sent, people: people)
        }
        // Carol's other device meets bob's row, claim and all, only in history and delta sync.
        let lateApp = try await Self.app(people.carol, "carol-2", people: people, server: server, harness: harness)
        apps.append(lateApp)
        try await lateApp.client.synchronize(conversation)
        try await Self.expectAliceIntact(in: lateApp, bobs: .deleted, sent: sent, people: people)
    }

    /// Waits until `app` shows bob's message as `bobs`, then checks that alice's message is exactly as she wrote
    /// it, once, under her name, not edited, not deleted, and that bob's is a separate message of his.
    private static func expectAliceIntact(in app: App, bobs: BobsMessage, sent: Message, people: People,
                                          sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let conversation = people.conversation
        let shown = try await eventually {
            let timeline = try await app.client.timeline(of: conversation)
            let his = timeline.filter { $0.sender == people.bob && $0.id != sent.id }
            switch bobs {
            case .text(let text): return his.contains { $0.content.text == text && $0.deletedAt == nil }
            case .deleted: return his.allSatisfy { $0.deletedAt != nil }
            }
        }
        #expect(shown, "\(app.name) shows bob's message as \(bobs)", sourceLocation: sourceLocation)
        let timeline = try await app.client.timeline(of: conversation)
        #expect(timeline.filter { $0.id == sent.id }.count == 1, "\(app.name): alice's message once", sourceLocation: sourceLocation)
        let alices = timeline.filter { $0.sender == people.alice }
        #expect(alices.map(\.id) == [sent.id], "\(app.name): alice has exactly her one message", sourceLocation: sourceLocation)
        let hers = try #require(alices.first, sourceLocation: sourceLocation)
        #expect(hers.content.text == "alice's words", "\(app.name)", sourceLocation: sourceLocation)
        #expect(hers.editedAt == nil && hers.deletedAt == nil, "\(app.name): not edited, not deleted", sourceLocation: sourceLocation)
        let his = timeline.filter { $0.sender == people.bob }
        #expect(his.count <= 1 && his.allSatisfy { $0.id != sent.id }, "\(app.name): bob's message is his own",
                sourceLocation: sourceLocation)
        if case .text(let text) = bobs {
            #expect(his.map(\.content.text) == [text], "\(app.name)", sourceLocation: sourceLocation)
        }
        #expect(timeline.allSatisfy { $0.sender == people.alice || $0.sender == people.bob }, "\(app.name)",
                sourceLocation: sourceLocation)
        let stored = try await app.client.message(sent.id)
        #expect(stored?.sender == people.alice && stored?.content.text == "alice's words", "\(app.name): the store agrees",
                sourceLocation: sourceLocation)
    }

    /// A Supabase adapter for `user` with a token signed by the test server's secret.
    private static func adapter(_ user: UserID, server: AdapterTestServer, harness: SupabaseHarness) -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: server.baseURL, apiKey: harness.token(role: "anon"),
            accessToken: harness.token(role: "authenticated", sub: user.rawValue), localUser: user))
    }

    /// An app of `user` on a fresh store named `name`, started, with the conversation open.
    private static func app(_ user: UserID, _ name: String, people: People, server: AdapterTestServer,
                            harness: SupabaseHarness) async throws -> App {
        let store = try SQLiteStore(path: server.root.appendingPathComponent("\(name).sqlite").path)
        let configuration = EngineConfiguration(stagingDirectory: server.root.appendingPathComponent("staging-\(name)"))
        let client = ChatClient(adapter: adapter(user, server: server, harness: harness), store: store,
                                configuration: configuration)
        do {
            try await client.start()
            _ = try await client.open(people.conversation)
        } catch {
            await client.stop()
            store.close()
            throw error
        }
        return App(name: name, client: client, store: store)
    }

    /// Stops every app and closes its store.
    private static func close(_ apps: [App]) async {
        for app in apps {
            await app.client.stop()
            app.store.close()
        }
    }

    /// Checks `condition` until it holds; the bound only catches "never". Whether it held.
    private static func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = TestTime.deadline(after: .seconds(30))
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }
}

/// PostgREST requests as a member, without the adapter: what any client of the server can send.
private struct RawREST {
    let baseURL: URL
    let harness: SupabaseHarness
    let http = HTTPClient()

    /// `POST /rest/v1/messages` of one row as `user`.
    func insert(_ row: JSONValue, as user: UserID) async throws -> HTTPResponse {
        try await send(.post, "/rest/v1/messages", body: row, as: user)
    }

    /// `PATCH /rest/v1/messages?id=eq.<remote>` setting the row's metadata to `metadata`, as `user`.
    func patchMetadata(of remote: RemoteID, _ metadata: [String: JSONValue], as user: UserID) async throws -> HTTPResponse {
        try await send(.patch, "/rest/v1/messages?id=eq.\(remote.rawValue)", body: ["metadata": .object(metadata)], as: user)
    }

    /// The stored metadata of row `remote`, as `user` reads it.
    func metadata(of remote: RemoteID, as user: UserID) async throws -> JSONValue? {
        let response = try await send(.get, "/rest/v1/messages?select=metadata&id=eq.\(remote.rawValue)", body: nil, as: user)
        return JSONValue.parseOrNil(response.body)?.arrayValue?.first?["metadata"]
    }

    private func send(_ method: HTTPMethod, _ path: String, body: JSONValue?, as user: UserID) async throws -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("apikey", harness.token(role: "anon"))
        headers.add("Authorization", "Bearer \(harness.token(role: "authenticated", sub: user.rawValue))")
        headers.add("Prefer", "return=representation")
        if body != nil { headers.add("Content-Type", "application/json") }
        let url = try #require(URL(string: baseURL.absoluteString + path))
        return try await http.send(HTTPRequest(method: method, url: url, headers: headers,
                                               body: body.map { Data($0.serialized.utf8) }))
    }
}
