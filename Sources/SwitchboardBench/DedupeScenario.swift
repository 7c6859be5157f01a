import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// `dedupe`: a ChatClient's live stream delivers every change three times; events/s reconciled, each rendered once.
enum DedupeScenario {
    /// Deliveries per change.
    static let copies = 3

    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let count = options.size(quick: 20_000, full: 100_000, floor: 5)
        var rates: [Double] = [], worstRenders: [Double] = [], floors: [Double] = [], ceilings: [Double] = []
        var inMemoryRates: [Double] = []
        for _ in 0..<options.runs {
            let directory = try BenchDirectory("dedupe")
            defer { directory.remove() }
            let result = try await reconcile(count: count, store: directory.path("engine.sqlite"))
            rates.append(Double(count) / result.seconds)
            worstRenders.append(Double(result.maxRenders))
            let inMemory = try await reconcile(count: count, store: ":memory:")
            inMemoryRates.append(Double(count) / inMemory.seconds)
            worstRenders.append(Double(inMemory.maxRenders))
            floors.append(try persistenceFloor(count: count, path: directory.path("plain.sqlite")))
            ceilings.append(try persistenceFloor(count: count, path: ":memory:", perTransaction: count))
        }
        let note = "\(count) distinct messages per run, each delivered \(copies)× on the live stream "
            + "(repeats trail by 1 and 2 places); rate counts distinct events (deliveries/s = \(copies)× that); "
            + "the whole burst may queue for the reconciler (maxQueuedLiveChanges unlimited; by default more than "
            + "10,000 waiting changes are dropped and resynced); "
            + "the baseline is the storage floor: the two rows every new message needs, inserted by plain SQLite"
        return ([
            BenchFigure(scenario: "dedupe", figure: "events reconciled", unit: "events/s", summary: BenchSummary(rates),
                        baseline: BenchBaseline(name: "plain SQLite: message + ID-map row per event, 1,000 per tx",
                                                unit: "events/s", summary: BenchSummary(floors)),
                        goal: .atLeast(200_000), note: note),
            BenchFigure(scenario: "dedupe", figure: "renders per event (max)", unit: "renders",
                        summary: BenchSummary(worstRenders), goal: .atMost(1)),
            BenchFigure(scenario: "dedupe", figure: "events reconciled, in-memory store", unit: "events/s",
                        summary: BenchSummary(inMemoryRates), goal: .none,
                        note: "the same burst through the same engine with its store in memory (no file, no WAL, no "
                            + "checkpoints): what the engine itself costs; the gap to the figure above is the file's share"),
            BenchFigure(scenario: "dedupe", figure: "storage ceiling (in-memory SQLite)", unit: "events/s",
                        summary: BenchSummary(ceilings), goal: .none,
                        note: "the same two rows per event as the baseline, all \(count) in one transaction on an in-memory "
                            + "database: no file, no commit cost; an upper bound for anything that stores each new message "
                            + "and its ID mapping in SQLite on this machine"),
        ], [])
    }

    /// Events/s a bare SQLite loop reaches storing what reconciling a new message must store: its row and its
    /// ID-map row (same schemas and indexes as the store), `perTransaction` events per transaction (1,000 unless
    /// told), no reads, no events. `path` may be `:memory:`.
    static func persistenceFloor(count: Int, path: String, perTransaction: Int = 1000) throws -> Double {
        let connection = try SQLiteBaseline.open(path, schema: SQLiteBaseline.messagesSchema + SQLiteBaseline.idMapSchema)
        defer { connection.close() }
        let base = Int64(1_800_000_000_000_000)
        let ids = (0..<count).map { _ in UUID().uuidString.lowercased() }
        let clock = ContinuousClock()
        let start = clock.now
        for chunk in stride(from: 0, to: count, by: perTransaction) {
            try connection.execute("BEGIN IMMEDIATE")
            for index in chunk..<min(count, chunk + perTransaction) {
                try connection.execute("""
                    INSERT INTO messages (id, conversation, sender, text, metadata, ts, has_server_ts, delivery, is_outgoing)
                    VALUES (?, 'bench-dedupe', 'bob', ?, '{}', ?, 1, 'received', 0)
                    """, [ids[index], "incoming message \(index)", base + Int64(index) * 1000])
                try connection.execute("""
                    INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, 'memory', 'bench-dedupe', ?, 0)
                    """, [ids[index], "remote-\(index)"])
            }
            try connection.execute("COMMIT")
        }
        return Double(count) / BenchStatistics.seconds(clock.now - start)
    }

    /// Feeds `count` messages × `copies` through the live stream; returns the seconds until the last one rendered
    /// and the largest number of render events any message caused.
    static func reconcile(count: Int, store path: String) async throws -> (seconds: Double, maxRenders: Int) {
        let backend = try MemoryBackend(scheme: .clientAssigned)
        let conversation: ConversationID = "bench-dedupe"
        try backend.createConversation(conversation, members: ["alice", "bob"])
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let adapter = ScriptedAdapter(backend.makeAdapter(for: "alice"))
        // The whole burst waits for the reconciler (the default cap of 10,000 queued changes would drop most of it
        // and resync, which the scripted stream cannot serve): the figure is the reconciler's own rate.
        let client = ChatClient(adapter: adapter, store: store, configuration: EngineConfiguration(maxQueuedLiveChanges: .max))
        try await client.start()
        _ = try await client.open(conversation)
        let base = Date(timeIntervalSince1970: 1_800_000_000)
        let changes = (0..<count).map { index in
            AdapterEvent.change(.message(RemoteMessage(
                remoteID: RemoteID("remote-\(index)"), conversation: conversation, idempotencyKey: nil, sender: "bob",
                text: "incoming message \(index)", sentAt: base.addingTimeInterval(Double(index) / 1000))))
        }
        let deliveries = ScriptedAdapter.duplicated(changes, copies: copies)
        let events = try await client.events(in: conversation)
        let lastText = "incoming message \(count - 1)"
        let consumer = Task { () -> [MessageID: Int] in
            var renders: [MessageID: Int] = [:]
            renders.reserveCapacity(count)
            for await sequenced in events {
                guard let message = sequenced.event.message, message.sender == "bob" else { continue }
                renders[message.id, default: 0] += 1
                if renders.count == count && message.content.text == lastText { break }
            }
            return renders
        }
        let watchdog = Task {
            try await Task.sleep(for: .seconds(300))
            consumer.cancel()
        }
        let (renders, seconds) = await measure { () async -> [MessageID: Int] in
            // From a thread of its own, as a socket reader delivers: a synchronous loop of 300,000 yields on one
            // of the two cooperative threads would keep the engine's reconciler from starting until it ends.
            Thread.detachNewThread { adapter.deliver(deliveries) }
            return await consumer.value
        }
        watchdog.cancel()
        await client.stop()
        guard renders.count == count else {
            throw BenchError("only \(renders.count) of \(count) messages rendered (timed out?)")
        }
        return (seconds, renders.values.max() ?? 0)
    }
}
