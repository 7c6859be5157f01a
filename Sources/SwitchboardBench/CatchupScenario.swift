import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// `catchup`: delta sync of 10 new messages with a small vs a huge history on the memory backend.
enum CatchupScenario {
    /// New messages per sync.
    static let newMessages = 10

    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let small = options.size(quick: 1000, full: 1000, floor: 5)
        let large = options.size(quick: 100_000, full: 1_000_000, floor: 10)
        let syncs = options.runs * 5
        let directory = try BenchDirectory("catchup")
        defer { directory.remove() }
        let smallSide = try await Side(history: small, store: directory.path("small.sqlite"))
        let largeSide = try await Side(history: large, store: directory.path("large.sqlite"))
        var smallTimes: [Double] = [], largeTimes: [Double] = []
        for round in 0..<(syncs + 1) {  // round 0 warms up
            // Which side goes first alternates, so neither always runs right after the other's setup work.
            var s = 0.0, l = 0.0
            if round % 2 == 0 {
                s = try await smallSide.syncTen(round: round)
                l = try await largeSide.syncTen(round: round)
            } else {
                l = try await largeSide.syncTen(round: round)
                s = try await smallSide.syncTen(round: round)
            }
            if round > 0 {
                smallTimes.append(s * 1000)
                largeTimes.append(l * 1000)
            }
        }
        await smallSide.client.stop()
        await largeSide.client.stop()
        var notes: [String] = []
        if options.quick && options.scale == 1 { notes.append("catchup --quick: history \(large) instead of 1,000,000") }
        return ([
            BenchFigure(scenario: "catchup", figure: "delta sync of \(newMessages), \(large) in history", unit: "ms",
                        summary: BenchSummary(largeTimes),
                        baseline: BenchBaseline(name: "same with \(small) in history", unit: "ms",
                                                summary: BenchSummary(smallTimes)),
                        goal: .ratioAtMost(1.2), note: "\(syncs) syncs per side, alternating; live stream silenced"),
        ], notes)
    }

    /// One backend with a history and one client that has opened it, its live stream silent.
    final class Side {
        /// The backend.
        let backend: MemoryBackend
        /// The client under test.
        let client: ChatClient
        /// The conversation.
        let conversation: ConversationID = "bench-catchup"

        /// Fills a backend with `history` messages from bob, then opens the conversation as alice.
        init(history: Int, store path: String) async throws {
            backend = try MemoryBackend(scheme: .clientAssigned)
            try backend.createConversation(conversation, members: ["alice", "bob"])
            let start = Date().addingTimeInterval(-Double(history))
            for index in 0..<history {
                _ = try await backend.publish(OutgoingMessage(
                    id: MessageID.make(), conversation: conversation, sender: "bob", text: "history message \(index)",
                    createdAt: start.addingTimeInterval(Double(index))), as: "bob")
            }
            let store = try SQLiteStore(path: path)
            client = ChatClient(adapter: ScriptedAdapter(backend.makeAdapter(for: "alice")), store: store)
            try await client.start()
            _ = try await client.open(conversation)
        }

        /// Publishes ten messages from bob, then times one delta sync and checks the newest arrived.
        func syncTen(round: Int) async throws -> Double {
            var last = ""
            for index in 0..<CatchupScenario.newMessages {
                last = "round \(round) new message \(index)"
                _ = try await backend.publish(OutgoingMessage(id: MessageID.make(), conversation: conversation,
                                                              sender: "bob", text: last, createdAt: Date()), as: "bob")
            }
            let conversation = self.conversation
            let (_, seconds) = try await measure { try await client.synchronize(conversation) }
            guard try await client.timeline(of: conversation).last?.content.text == last else {
                throw BenchError("delta sync did not bring '\(last)' into the timeline")
            }
            return seconds
        }
    }
}
