import Foundation
import SocketIOAdapter
import SocketIOConformance
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
import SwitchboardFaults
import SwitchboardStore
import Testing
import TestSupport

/// The receiver's Socket.IO connection is cut again and again while the other user sends (the harness's fault
/// decorators end the live stream, closing its socket, and subscribe again on a new one): the receiving engine
/// must end with every message exactly once, in the server's order (live events plus the delta sync that runs
/// on every reconnect).
@Suite("Socket.IO adapter under socket cuts", .serialized)
struct SocketIOReconnectTests {
    @Test("repeated socket cuts while the peer sends 150 messages: every message arrives once, in server order")
    func cutsWhilePeerSends() async throws {
        try await SocketIOTestServer.with { server in
            var harness = SocketIOHarness(baseURL: server.baseURL)
            harness.reconnectInitialDelay = .milliseconds(100)
            let fixture = try await harness.makeFixture()
            let faults = try #require(fixture.faults as? InjectedFaults)
            let conversation = fixture.conversation

            let alice = try await fixture.openedClient(fixture.alice, under: server.root, syncBatchSize: 40)
            let bob = try await fixture.openedClient(fixture.bob, under: server.root, syncBatchSize: 40)

            let count = 150
            let cutter = Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(250))
                    faults.dropLiveStreams()
                }
            }
            var sent: [MessageID] = []
            for index in 0..<count {
                sent.append(try await bob.send("cut \(index)", in: conversation).id)
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(try await waitUntil(timeout: .seconds(20)) {
                var published = 0
                for id in sent where try await bob.message(id)?.delivery.isPublished == true { published += 1 }
                return published == count
            })
            cutter.cancel()
            let cuts = faults.liveStreamCuts
            #expect(cuts >= 8, "only \(cuts) socket cuts happened while bob was sending")

            #expect(await waitUntil(timeout: .seconds(20)) {
                (try? await alice.store.read { try $0.messageCount(in: conversation) }) == count
            }, "alice never held the \(count) messages bob sent")

            // The server's order, read back through a fresh adapter's history.
            let reader = try await fixture.makeAdapter(fixture.alice)
            let serverOrder = try await reader.allMessages(in: conversation).map(\.idempotencyKey)
            #expect(serverOrder == sent, "the server's order differs from bob's send order")
            let stored = try await alice.store.read { try $0.messages(in: conversation, before: nil, limit: count * 2) }
            let ids = stored.reversed().map(\.id)
            #expect(ids.count == Set(ids).count, "alice holds a message twice")
            #expect(ids == sent, "alice's timeline is not in the server's order")
            await alice.stop()
            await bob.stop()
            await fixture.tearDown()
        }
    }
}
