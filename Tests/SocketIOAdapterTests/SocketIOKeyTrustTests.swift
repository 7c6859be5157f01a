import Foundation
import SocketIOAdapter
import SocketIOConformance
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
import SwitchboardFaults
import SwitchboardStore
import Testing

/// The Socket-style server scopes `clientMessageId` per conversation and sender, so any member can post under the
/// key of someone else's message. An app on the engine must never show one party's message changed by another's
/// (DESIGN §2): the forged message stands apart, under an ID of its own.
@Suite("Socket.IO: a member who carries another's key changes nothing of theirs", .serialized)
struct SocketIOKeyTrustTests {
    @Test("bob posts, edits and deletes under the key of alice's message: both apps show alice's message as she wrote it")
    func forgedKeyInApps() async throws {
        try await SocketIOTestServer.with { server in
            let fixture = try await SocketIOHarness(baseURL: server.baseURL).makeFixture()
            let conversation = fixture.conversation
            /// An app of `user` on a store of its own, with the conversation open.
            func app(_ user: UserID, _ name: String) async throws -> (ChatClient, SQLiteStore) {
                let store = try SQLiteStore(path: server.root.appendingPathComponent("\(name).sqlite").path)
                let configuration = EngineConfiguration(stagingDirectory: server.root.appendingPathComponent("staging-\(name)"))
                let client = ChatClient(adapter: try await fixture.makeAdapter(user), store: store, configuration: configuration)
                try await client.start()
                _ = try await client.open(conversation)
                return (client, store)
            }
            let (alicesApp, alicesStore) = try await app(fixture.alice, "alice")
            let sent = try await alicesApp.send("alice's words", in: conversation)
            #expect(try await waitUntil { try await alicesApp.message(sent.id)?.delivery.isPublished == true })

            // Bob, through his own adapter, posts under alice's MessageID, then edits and deletes his message.
            let bob = try #require((try await fixture.makeAdapter(fixture.bob) as? FaultInjectingAdapter<SocketIOAdapter>)?.inner)
            let forged = OutgoingMessage(id: sent.id, conversation: conversation, sender: fixture.bob,
                                         text: "bob's words", createdAt: Date())
            let remote = try #require(try await bob.publish(try await bob.prepare(forged, noSend: false)).remoteID)
            try await bob.edit(remote, in: conversation, text: "bob's edit")
            try await bob.delete(remote, in: conversation)

            // A second app (alice's other device, a fresh store) learns everything from history and delta sync.
            let (secondApp, secondStore) = try await app(fixture.alice, "alice-2")
            for client in [alicesApp, secondApp] {
                try await client.synchronize(conversation)
                #expect(await waitUntil { await client.keyCollisions >= 1 }, "the forged key is counted")
                let timeline: [Message] = try await client.timeline(of: conversation)
                let alices = try #require(timeline.first { $0.sender == fixture.alice })
                #expect(alices.id == sent.id)
                #expect(alices.content.text == "alice's words")
                #expect(alices.editedAt == nil && alices.deletedAt == nil)
                let bobs = timeline.filter { $0.sender == fixture.bob }
                #expect(bobs.count <= 1)
                #expect(bobs.allSatisfy { $0.id != sent.id })
                let stored: Message? = try await (client === alicesApp ? alicesStore : secondStore).read { try $0.message(sent.id) }
                #expect(stored?.content.text == "alice's words", "the store agrees")
            }
            await alicesApp.stop()
            await secondApp.stop()
            alicesStore.close()
            secondStore.close()
            await fixture.tearDown()
        }
    }

    /// The Socket-style server scopes `clientMessageId` per (conversation, sender), and clients that number their
    /// messages are honest: two users who both send "1", "2", "3" in one room sent six messages. Every app shows
    /// all six, each under its sender with its text, none merged, and none counted as a collision.
    @Test("two honest users who both number their messages 1, 2, 3 in one room: every app shows all six, none merged")
    func perSenderCountersInOneRoom() async throws {
        try await SocketIOTestServer.with { server in
            let harness = SocketIOHarness(baseURL: server.baseURL)
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
            let tokens = [alice: try await harness.register(alice), bob: try await harness.register(bob)]
            let room = ConversationID("room-\(suffix)")
            try await harness.createConversation(room, members: [bob], token: tokens[alice]!)
            var apps: [KeyTrustApp] = []
            do {
                apps.append(try await KeyTrustApp.start(alice, "alice", token: tokens[alice]!, rooms: [room], server: server))
                apps.append(try await KeyTrustApp.start(bob, "bob", token: tokens[bob]!, rooms: [room], server: server))
                // Their other clients (not on Switchboard) number the messages, interleaved.
                let clients = [alice: KeyTrustApp.adapter(alice, token: tokens[alice]!, server: server),
                               bob: KeyTrustApp.adapter(bob, token: tokens[bob]!, server: server)]
                var expected: Set<String> = []
                for number in 1...3 {
                    for user in [alice, bob] {
                        let text = "\(user.rawValue.prefix(while: { $0 != "-" })) \(number)"
                        let message = OutgoingMessage(id: MessageID("\(number)"), conversation: room, sender: user, text: text,
                                                      createdAt: Date())
                        let client = try #require(clients[user])
                        _ = try await client.publish(try await client.prepare(message, noSend: false))
                        expected.insert("\(user.rawValue): \(text)")
                    }
                }
                // Alice's second device learns them all from history.
                apps.append(try await KeyTrustApp.start(alice, "alice-2", token: tokens[alice]!, rooms: [room], server: server))
                for app in apps {
                    try await app.client.synchronize(room)
                    let shown = await waitUntil(timeout: .seconds(30)) {
                        (try? await app.client.timeline(of: room)).map { Set($0.map { "\($0.sender.rawValue): \($0.content.text)" }) } == expected
                    }
                    #expect(shown, "\(app.name) shows the six messages")
                    let timeline: [Message] = try await app.client.timeline(of: room)
                    #expect(timeline.count == 6, "\(app.name): \(timeline.map(\.content.text))")
                    #expect(Set(timeline.map(\.id)).count == 6, "\(app.name): six messages, six IDs")
                    #expect(await app.client.keyCollisions == 0, "\(app.name): honest counters are no collision")
                }
            } catch {
                await KeyTrustApp.stop(apps)
                throw error
            }
            await KeyTrustApp.stop(apps)
        }
    }

    /// A `clientMessageId` is unique only in its conversation: one user who uses "1" in two rooms sent two messages.
    /// An app with both rooms open shows each room's own message in that room, and nothing of the other.
    @Test("one user reuses key 1 in two rooms: each room's timeline shows its own message")
    func keyReusedInTwoRooms() async throws {
        try await SocketIOTestServer.with { server in
            let harness = SocketIOHarness(baseURL: server.baseURL)
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
            let tokens = [alice: try await harness.register(alice), bob: try await harness.register(bob)]
            let rooms = [ConversationID("one-\(suffix)"), ConversationID("two-\(suffix)")]
            for room in rooms { try await harness.createConversation(room, members: [bob], token: tokens[alice]!) }
            var apps: [KeyTrustApp] = []
            do {
                apps.append(try await KeyTrustApp.start(alice, "alice", token: tokens[alice]!, rooms: rooms, server: server))
                apps.append(try await KeyTrustApp.start(bob, "bob", token: tokens[bob]!, rooms: rooms, server: server))
                let client = KeyTrustApp.adapter(alice, token: tokens[alice]!, server: server)
                for room in rooms {
                    let message = OutgoingMessage(id: "1", conversation: room, sender: alice, text: "alice in \(room)",
                                                  createdAt: Date())
                    _ = try await client.publish(try await client.prepare(message, noSend: false))
                }
                apps.append(try await KeyTrustApp.start(bob, "bob-2", token: tokens[bob]!, rooms: rooms, server: server))
                for app in apps {
                    var ids: [MessageID] = []
                    for room in rooms {
                        try await app.client.synchronize(room)
                        let shown = await waitUntil(timeout: .seconds(30)) { (try? await app.client.timeline(of: room))?.isEmpty == false }
                        #expect(shown, "\(app.name) shows the message of \(room)")
                        let timeline: [Message] = try await app.client.timeline(of: room)
                        #expect(timeline.map(\.content.text) == ["alice in \(room)"], "\(app.name), \(room)")
                        #expect(timeline.allSatisfy { $0.sender == alice && $0.conversation == room }, "\(app.name), \(room)")
                        ids += timeline.map(\.id)
                    }
                    #expect(Set(ids).count == 2, "\(app.name): two messages, two IDs")
                    #expect(await app.client.keyCollisions == 0, "\(app.name): a key reused in another room is no collision")
                }
            } catch {
                await KeyTrustApp.stop(apps)
                throw error
            }
            await KeyTrustApp.stop(apps)
        }
    }
}

/// An app of one user for the key trust tests: an engine client on a store of its own with its rooms open.
struct KeyTrustApp {
    /// The app's name (its store's file name).
    let name: String
    /// The engine client.
    let client: ChatClient
    /// Its store.
    let store: SQLiteStore

    /// A Socket-style adapter signed in as `user` with `token`.
    static func adapter(_ user: UserID, token: String, server: SocketIOTestServer) -> SocketIOAdapter {
        SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: server.baseURL, token: token, localUser: user))
    }

    /// Starts an app of `user` on a fresh store named `name`, with `rooms` open.
    static func start(_ user: UserID, _ name: String, token: String, rooms: [ConversationID],
                      server: SocketIOTestServer) async throws -> KeyTrustApp {
        let store = try SQLiteStore(path: server.root.appendingPathComponent("\(name).sqlite").path)
        let configuration = EngineConfiguration(stagingDirectory: server.root.appendingPathComponent("staging-\(name)"))
        let client = ChatClient(adapter: adapter(user, token: token, server: server), store: store, configuration: configuration)
        do {
            try await client.start()
            for room in rooms { _ = try await client.open(room) }
        } catch {
            await client.stop()
            store.close()
            throw error
        }
        return KeyTrustApp(name: name, client: client, store: store)
    }

    /// Stops every app and closes its store.
    static func stop(_ apps: [KeyTrustApp]) async {
        for app in apps {
            await app.client.stop()
            app.store.close()
        }
    }
}
