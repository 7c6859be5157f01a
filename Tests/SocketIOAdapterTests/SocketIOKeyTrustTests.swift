import Foundation
import SocketIOAdapter
import SocketIOConformance
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
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
            let bob = try #require(try await fixture.makeAdapter(fixture.bob) as? SocketIOAdapter)
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
                let stored: Message? = try (client === alicesApp ? alicesStore : secondStore).read { try $0.message(sent.id) }
                #expect(stored?.content.text == "alice's words", "the store agrees")
            }
            await alicesApp.stop()
            await secondApp.stop()
            alicesStore.close()
            secondStore.close()
            await fixture.tearDown()
        }
    }
}
