import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// `send`: optimistic send → visible in the engine's timeline (memory backend, SQLite store) vs one SQLite insert.
enum SendScenario {
    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let samples = options.size(quick: 1000, full: 2000, floor: 5)
        let warmup = max(2, samples / 20)
        var sendP50: [Double] = [], sendP99: [Double] = [], baseP50: [Double] = [], baseP99: [Double] = []
        for _ in 0..<options.runs {
            let directory = try BenchDirectory("send")
            defer { directory.remove() }
            let send = try await sendLatencies(samples: samples, warmup: warmup, store: directory.path("engine.sqlite"))
            let insert = try insertLatencies(samples: samples, warmup: warmup, path: directory.path("baseline.sqlite"))
            sendP50.append(BenchStatistics.percentile(send, 50) * 1000)
            sendP99.append(BenchStatistics.percentile(send, 99) * 1000)
            baseP50.append(BenchStatistics.percentile(insert, 50) * 1000)
            baseP99.append(BenchStatistics.percentile(insert, 99) * 1000)
        }
        let name = "one SQLite insert"
        let note = "\(samples) sends per run after \(warmup) warm-up, outbox idle between sends; \(options.runs) runs"
        return ([
            BenchFigure(scenario: "send", figure: "send → visible p50", unit: "ms", summary: BenchSummary(sendP50),
                        baseline: BenchBaseline(name: name + " p50", unit: "ms", summary: BenchSummary(baseP50))),
            BenchFigure(scenario: "send", figure: "send → visible p99", unit: "ms", summary: BenchSummary(sendP99),
                        baseline: BenchBaseline(name: name + " p99", unit: "ms", summary: BenchSummary(baseP99)),
                        goal: .atMost(1), note: note),
        ], [])
    }

    /// Seconds from calling `send` until it returns with the message in the timeline (checked after), per send.
    static func sendLatencies(samples: Int, warmup: Int, store path: String) async throws -> [Double] {
        let conversation: ConversationID = "bench-send"
        return try await withBenchClient(conversation, store: path) { client, handle in
            var latencies: [Double] = []
            latencies.reserveCapacity(samples)
            for index in 0..<(warmup + samples) {
                // `send` returns once the row is stored and its event emitted into the timeline window, so the
                // clock stops there; the check that it really is the newest row in the timeline runs untimed.
                let (message, seconds) = try await measure { () async throws -> Message in
                    try await handle.send("benchmark message number \(index)")
                }
                guard try await client.timeline(of: conversation).last?.id == message.id else {
                    throw BenchError("send \(index) was not the newest message in the timeline")
                }
                if index >= warmup { latencies.append(seconds) }
                await client.waitUntilIdle(timeout: 5)
            }
            return latencies
        }
    }

    /// Seconds per single-row autocommit INSERT of a message-like row on a plain connection.
    static func insertLatencies(samples: Int, warmup: Int, path: String) throws -> [Double] {
        let connection = try SQLiteBaseline.open(path, schema: SQLiteBaseline.messagesSchema)
        defer { connection.close() }
        let clock = ContinuousClock()
        var latencies: [Double] = []
        latencies.reserveCapacity(samples)
        let base = Int64(Date().timeIntervalSince1970 * 1_000_000)
        for index in 0..<(warmup + samples) {
            let id = MessageID.make().rawValue  // the kind of ID a send's row gets
            let start = clock.now
            try connection.execute("""
                INSERT INTO messages (id, conversation, sender, text, metadata, ts, has_server_ts, delivery, is_outgoing)
                VALUES (?, ?, ?, ?, '{}', ?, 0, 'pending', 1)
                """, [id, "bench-send", "alice", "benchmark message number \(index)", base + Int64(index)])
            let seconds = BenchStatistics.seconds(clock.now - start)
            if index >= warmup { latencies.append(seconds) }
        }
        return latencies
    }
}
