import Foundation
import SocketIOAdapter
import SocketIOConformance
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
import SwitchboardFaults
import SwitchboardStore
import Testing

/// Reactions changed while an app was away reach it by delta sync alone: the server keeps tombstones
/// (`removedReactions`), so a fresh adapter after a restart learns removals it never saw happen.
@Suite("Socket.IO reactions across an app restart", .serialized)
struct SocketIOReactionSyncTests {
    /// Alice's app sees bob's 👍, stops; while it is away bob runs `away` through his adapter; alice's app restarts
    /// (new client on the same store file, fresh adapter) and opens the conversation. Returns bob's reactions on
    /// the message as alice's store then holds them, sorted.
    private func bobsReactionsAfterRestart(
        _ away: @escaping @Sendable (SocketIOAdapter, RemoteID, ConversationID) async throws -> Void
    ) async throws -> [String] {
        var result: [String] = []
        try await SocketIOTestServer.with { server in
            let fixture = try await SocketIOHarness(baseURL: server.baseURL).makeFixture()
            let conversation = fixture.conversation
            let bobAdapter = try #require((try await fixture.makeAdapter(fixture.bob) as? FaultInjectingAdapter<SocketIOAdapter>)?.inner)
            let outgoing = OutgoingMessage(id: MessageID(UUID().uuidString), conversation: conversation, sender: fixture.bob,
                                           text: "react to me", createdAt: Date())
            let receipt = try await bobAdapter.publish(try await bobAdapter.prepare(outgoing, noSend: false))
            let remote = try #require(receipt.remoteID)
            try await bobAdapter.setReaction("👍", isActive: true, on: remote, in: conversation)

            let storePath = server.root.appendingPathComponent("alice.sqlite").path
            /// Starts alice's app: a new client on the store file with a fresh adapter, the conversation opened.
            func launch() async throws -> (ChatClient, SQLiteStore) {
                let store = try SQLiteStore(path: storePath)
                let configuration = EngineConfiguration(stagingDirectory: server.root.appendingPathComponent("staging-alice"))
                let client = ChatClient(adapter: try await fixture.makeAdapter(fixture.alice), store: store,
                                        configuration: configuration)
                try await client.start()
                _ = try await client.open(conversation)
                return (client, store)
            }
            /// Bob's symbols on the message in `store`, sorted (nil while the message is not there).
            func bobs(_ store: SQLiteStore) async throws -> [String]? {
                let messages: [Message] = try await store.read { tx in try tx.messages(in: conversation, before: nil, limit: 50) }
                guard let message = messages.first(where: { $0.content.text == "react to me" }) else { return nil }
                return message.reactions.filter { $0.user == fixture.bob }.map(\.symbol).sorted()
            }

            let (first, firstStore) = try await launch()
            #expect(try await waitUntil { try await bobs(firstStore) == ["👍"] }, "alice never saw bob's 👍")
            await first.stop()
            firstStore.close()

            try await away(bobAdapter, remote, conversation)

            let (second, secondStore) = try await launch()
            let afterRestart = try await bobs(secondStore)
            result = try #require(afterRestart, "alice's store lost the message")
            await second.stop()
            secondStore.close()
            await fixture.tearDown()
        }
        return result
    }

    /// The reported bug: a removal that happened while the app was away used to be lost.
    @Test("bob replaces 👍 with ❤️ and then removes ❤️ while alice's app is away: after the restart none of his remain")
    func replacedThenRemovedWhileAway() async throws {
        let reactions = try await bobsReactionsAfterRestart { bob, remote, conversation in
            try await bob.setReaction("❤️", isActive: true, on: remote, in: conversation)
            try await bob.setReaction("❤️", isActive: false, on: remote, in: conversation)
        }
        #expect(reactions == [], "bob's reactions at alice after the restart: \(reactions)")
    }

    /// A replacement while away leaves exactly the new emoji, not both.
    @Test("bob replaces 👍 with ❤️ while alice's app is away: after the restart exactly his ❤️ remains")
    func replacedWhileAway() async throws {
        let reactions = try await bobsReactionsAfterRestart { bob, remote, conversation in
            try await bob.setReaction("❤️", isActive: true, on: remote, in: conversation)
        }
        #expect(reactions == ["❤️"], "bob's reactions at alice after the restart: \(reactions)")
    }
}
