import Foundation
import SwitchboardCore
import SwitchboardSQLite
import SwitchboardStore

/// `idmap`: ID-map writes/s (batched in transactions) and lookups/s through the Store API vs plain SQLite.
enum IDMapScenario {
    /// Rows per write transaction (and lookups per read transaction).
    static let batch = 1000

    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let count = options.size(quick: 50_000, full: 500_000, floor: 10)
        let messageIDs = (0..<count).map { _ in UUID().uuidString.lowercased() }
        let remoteIDs = (0..<count).map { String(format: "remote-%08d-", $0) + String(messageIDs[$0].prefix(8)) }
        let order = Array(0..<count).shuffled()
        var storeWrites: [Double] = [], storeReads: [Double] = [], plainWrites: [Double] = [], plainReads: [Double] = []
        for _ in 0..<options.runs {
            let directory = try BenchDirectory("idmap")
            defer { directory.remove() }
            let store = try await storeRates(path: directory.path("store.sqlite"), messageIDs, remoteIDs, order)
            let plain = try plainRates(path: directory.path("plain.sqlite"), messageIDs, remoteIDs, order)
            storeWrites.append(store.writes)
            storeReads.append(store.reads)
            plainWrites.append(plain.writes)
            plainReads.append(plain.reads)
        }
        let note = "\(count) mappings, \(batch) per transaction; lookups in random order, \(batch) per read transaction"
        return ([
            BenchFigure(scenario: "idmap", figure: "writes (batched)", unit: "rows/s", summary: BenchSummary(storeWrites),
                        baseline: BenchBaseline(name: "plain SQLite insert loop", unit: "rows/s",
                                                summary: BenchSummary(plainWrites)),
                        goal: .ratioAtLeast(0.5), note: note),
            BenchFigure(scenario: "idmap", figure: "lookups", unit: "lookups/s", summary: BenchSummary(storeReads),
                        baseline: BenchBaseline(name: "plain SQLite select loop", unit: "lookups/s",
                                                summary: BenchSummary(plainReads)),
                        goal: .ratioAtLeast(0.5)),
        ], [])
    }

    /// Writes/s and lookups/s through `SQLiteStore`'s `insertMapping` and `messageID(backend:remoteID:)`.
    static func storeRates(path: String, _ messageIDs: [String], _ remoteIDs: [String],
                           _ order: [Int]) async throws -> (writes: Double, reads: Double) {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let backend: BackendID = "bench"
        let conversation: ConversationID = "bench-idmap"
        let mappings = messageIDs.indices.map {
            IDMapping(messageID: MessageID(messageIDs[$0]), backend: backend, conversation: conversation,
                      remoteID: RemoteID(remoteIDs[$0]))
        }
        let remotes = order.map { RemoteID(remoteIDs[$0]) }
        let clock = ContinuousClock()
        var start = clock.now
        for chunk in stride(from: 0, to: mappings.count, by: batch) {
            try await store.write { tx in
                for index in chunk..<min(mappings.count, chunk + batch) { try tx.insertMapping(mappings[index]) }
            }
        }
        let writeSeconds = BenchStatistics.seconds(clock.now - start)
        start = clock.now
        var found = 0
        for chunk in stride(from: 0, to: remotes.count, by: batch) {
            found += try await store.read { tx in
                var hits = 0
                for index in chunk..<min(remotes.count, chunk + batch)
                where try tx.messageID(backend: backend, remoteID: remotes[index]) != nil { hits += 1 }
                return hits
            }
        }
        let readSeconds = BenchStatistics.seconds(clock.now - start)
        guard found == remotes.count else { throw BenchError("store lookups found \(found) of \(remotes.count)") }
        return (Double(mappings.count) / writeSeconds, Double(remotes.count) / readSeconds)
    }

    /// Writes/s and lookups/s of a plain INSERT / SELECT loop on the same schema, same batching.
    static func plainRates(path: String, _ messageIDs: [String], _ remoteIDs: [String],
                           _ order: [Int]) throws -> (writes: Double, reads: Double) {
        let connection = try SQLiteBaseline.open(path, schema: SQLiteBaseline.idMapSchema)
        defer { connection.close() }
        let clock = ContinuousClock()
        var start = clock.now
        for chunk in stride(from: 0, to: messageIDs.count, by: batch) {
            try connection.immediateTransaction {
                for index in chunk..<min(messageIDs.count, chunk + batch) {
                    try connection.execute("""
                        INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, ?, ?, ?, 0)
                        """, [messageIDs[index], "bench", "bench-idmap", remoteIDs[index]])
                }
            }
        }
        let writeSeconds = BenchStatistics.seconds(clock.now - start)
        start = clock.now
        var found = 0
        for chunk in stride(from: 0, to: order.count, by: batch) {
            try connection.executeScript("BEGIN DEFERRED")
            for index in chunk..<min(order.count, chunk + batch) {
                let hit = try connection.queryFirst("SELECT message_id FROM id_map WHERE backend = ? AND remote_id = ?",
                                                    ["bench", remoteIDs[order[index]]]) { $0.string(at: 0) }
                if hit != nil { found += 1 }
            }
            try connection.executeScript("COMMIT")
        }
        let readSeconds = BenchStatistics.seconds(clock.now - start)
        guard found == order.count else { throw BenchError("plain lookups found \(found) of \(order.count)") }
        return (Double(messageIDs.count) / writeSeconds, Double(order.count) / readSeconds)
    }
}
