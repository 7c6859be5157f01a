import Foundation
import MemoryAdapter
import SupabaseAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardNet
import SwitchboardStore
import TestSupport
import Testing

/// One worker bridging two pairs over one store, one of them towards a hostile server: the other pair goes on.
@Suite("Bridge with a hostile peer")
struct HostilePeerBridgeTests {
    @Test("a pair whose backend answers 429 forever backs off as asked; the other pair keeps bridging")
    func otherPairsUnaffected() async throws {
        let healthy = try BridgeTests.Pair()
        defer { healthy.remove() }
        let doomed = try MemoryBackend(scheme: .clientAssigned, backendID: "doomed")
        try doomed.createConversation("room-doomed", members: ["carol", "bridge"])
        let carol = doomed.makeAdapter(for: "carol")
        let hostileRoom = ConversationID("0e6a9d4c-1b2f-4c3d-8e5f-00000000abcd")

        try await HostileServer.with { hostile, url in
            // Reads work (an empty conversation); every write is rate limited, forever.
            hostile.on(.get, "/rest/v1/conversations", .json(#"[{"id":"\#(hostileRoom.rawValue)"}]"#))
            hostile.on(.get, "/rest/v1", .json("[]"))
            hostile.on(.head, "/rest/v1", .json("[]"))
            hostile.on(.post, "/rest/v1", .rateLimited(retryAfter: "1"))
            let left = healthy.left, right = healthy.right
            let general = BridgeWorkerPair(name: "general") {
                (a: BridgeSide(name: "left", adapter: left.makeAdapter(for: "bridge"), conversation: "room-left"),
                 b: BridgeSide(name: "right", adapter: right.makeAdapter(for: "bridge"), conversation: "room-right"))
            }
            let stuck = BridgeWorkerPair(name: "hostile") {
                var configuration = SupabaseAdapter.Configuration(baseURL: url, apiKey: "k", accessToken: "t", localUser: "bridge")
                configuration.backend = "hostile"
                configuration.maximumResponseBytes = 1 << 20
                return (a: BridgeSide(name: "doomed", adapter: doomed.makeAdapter(for: "bridge"), conversation: "room-doomed"),
                        b: BridgeSide(name: "hostile", adapter: SupabaseAdapter(configuration: configuration),
                                      conversation: hostileRoom))
            }
            var configuration = BridgeWorkerConfiguration(worker: "one")
            configuration.leaseSeconds = 3
            configuration.leaseRetry = .milliseconds(100)
            configuration.stopGrace = .seconds(1)
            configuration.bridge.pollInterval = .milliseconds(100)
            let worker = BridgeWorker(store: healthy.store, pairs: [stuck, general], configuration: configuration)
            let running = Task { await worker.run() }

            for index in 0..<3 { try await carol.sendNow("to nowhere \(index)", in: "room-doomed") }
            let started = ContinuousClock.now
            for index in 0..<5 { try await healthy.alice.sendNow("alice \(index)", in: "room-left") }
            for index in 0..<5 { try await healthy.bob.sendNow("bob \(index)", in: "room-right") }
            let crossed = try await conditionHolds(within: .seconds(30)) {
                let onRight = try await healthy.messages(healthy.right, "room-right", as: "bob").count
                let onLeft = try await healthy.messages(healthy.left, "room-left", as: "alice").count
                return onRight == 10 && onLeft == 10
            }
            #expect(crossed, "the healthy pair stalled behind the hostile one")
            // The hostile pair was tried, and more than once, but never faster than its Retry-After allows.
            let retried = await conditionHolds(within: .seconds(30)) { hostile.requestCount("/rest/v1/messages", method: .post) >= 2 }
            #expect(retried, "the hostile pair was not retried: \(hostile.requestCount(method: .post)) writes")
            let elapsed = started.duration(to: .now)
            let writes = hostile.requestCount(method: .post)
            #expect(Double(writes) <= Double(elapsed.components.seconds) + 3,
                    "\(writes) writes in \(elapsed) despite Retry-After: 1")
            #expect(await conditionHolds { await worker.status().first { $0.name == "general" }?.stats.messagesAToB == 5 })
            #expect(await worker.status().first { $0.name == "hostile" }?.stats.messagesAToB == 0)
            #expect(try await doomed.makeAdapter(for: "carol").allMessages(in: "room-doomed").count == 3)
            await worker.stop()
            await running.value
        }
        #expect(try await healthy.messages(healthy.right, "room-right", as: "bob").count == 10)
    }
}
