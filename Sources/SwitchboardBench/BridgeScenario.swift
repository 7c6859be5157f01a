import Foundation
import SupabaseAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardNet
import SwitchboardStore

/// `bridge`: a running `Bridge` (XMTP-like ↔ Supabase-like, SQLite store) relaying N messages published on the
/// XMTP-like node as fast as one client can (the node's bulk send, `publishChunk` per request): messages/s from
/// the first publish to the last row committed on the Supabase side, and end-to-end latency per message (publish
/// request start → the row's `created_at`, found by polling the server's database). Baseline: the
/// slower of the two backends' raw ingest of N messages from one client, measured in the same run.
///
/// The burst's cost is also stated as the whole machine's busy CPU time per message, next to the same measure of
/// the Supabase-like raw ingest: on one two-core machine the bridge pays for both servers, PostgreSQL and itself.
///
/// A burst's latency is mostly waiting in the backlog, so the latency goal is measured in a second phase on the
/// same running bridge: messages published at a steady `pacedRate` (`pacedPerTick` per request, a request every
/// `pacedTick`), the load of a busy conversation, well below the bridge's throughput.
enum BridgeScenario {
    /// Messages per bulk-send request on the XMTP-like side (the publisher and the XMTP ingest baseline).
    static let publishChunk = 50
    /// Messages per request of the paced phase.
    static let pacedPerTick = 5
    /// Interval between two requests of the paced phase.
    static let pacedTick: Duration = .milliseconds(10)
    /// Messages per second of the paced phase.
    static let pacedRate = pacedPerTick * 100
    /// Waits (up to 60 s) until the bridge has read back, on the Supabase-like side, every row of `room` (its own
    /// copies of the burst), so the paced phase measures a bridge that is not still working off the burst.
    private static func caughtUp(_ store: SQLiteStore, pair: String, side: BridgeSide, room: ConversationID,
                                 database: BareCopyConnection) async throws {
        let newest = Int64(try database.query("SELECT coalesce(max(version), 0)::text FROM public.messages WHERE conversation_id = $1::uuid",
                                              [room.rawValue]).first ?? "") ?? 0
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            let cursor = try await store.read { try $0.bridgeCursor(pair: pair, backend: side.adapter.backend) }
            // `v:<messages>,<reactions>,<receipts>` (or `v:<n>`): the messages version comes first.
            let read = cursor.flatMap { Int64($0.rawValue.dropFirst(2).split(separator: ",").first ?? "") } ?? 0
            if read >= newest { return }
            guard ContinuousClock.now < deadline else {
                throw BenchError("the bridge did not read back its burst within 60 s (version \(read) of \(newest))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Messages bridged before the burst.
    static let warmUp = 20

    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let count = options.size(quick: 5000, full: 20_000, floor: 10)
        return try await BenchServers.with("bridge", xmtp: true) { servers in
            let paced = max(10, count / 10)
            var rates: [Double] = [], p50: [Double] = [], p99: [Double] = [], pacedP50: [Double] = [], pacedP99: [Double] = []
            var baselines: [Double] = [], supabaseIngest: [Double] = [], xmtpIngest: [Double] = []
            var burstCPU: [Double] = [], supabaseCPU: [Double] = [], xmtpCPU: [Double] = []
            for run in 0..<options.runs {
                try await servers.settle()
                let relayed = try await relay(servers, count: count, paced: paced, run: run)
                rates.append(relayed.rate)
                if let cpu = relayed.cpu { burstCPU.append(cpu) }
                p50.append(BenchStatistics.percentile(relayed.latencies, 50) * 1000)
                p99.append(BenchStatistics.percentile(relayed.latencies, 99) * 1000)
                pacedP50.append(BenchStatistics.percentile(relayed.paced, 50) * 1000)
                pacedP99.append(BenchStatistics.percentile(relayed.paced, 99) * 1000)
                try await servers.settle()
                let supabase = try await supabaseIngestRate(servers, count: count)
                try await servers.settle()
                let xmtp = try await xmtpIngestRate(servers, count: count)
                supabaseIngest.append(supabase.rate)
                xmtpIngest.append(xmtp.rate)
                if let cpu = supabase.cpu { supabaseCPU.append(cpu) }
                if let cpu = xmtp.cpu { xmtpCPU.append(cpu) }
                baselines.append(min(supabase.rate, xmtp.rate))
            }
            let ingest = "raw ingest medians: Supabase-like \(BenchFormat.number(BenchSummary(supabaseIngest).median)) msg/s "
                + "(the bridge's write: SupabaseAdapter.publishAll, a bulk upsert), XMTP-like "
                + "\(BenchFormat.number(BenchSummary(xmtpIngest).median)) msg/s (the node's bulk send, \(publishChunk) per request)"
            let note = "\(count) messages per run, \(options.runs) runs (each phase started once the server's realtime feed "
                + "has caught up with the previous one); published on the XMTP-like node with its bulk send "
                + "(\(publishChunk) sealed messages per request, one client, back to back); arrival = the row's created_at "
                + "(server clock, same machine), rows found by polling the database every 10 ms; latency from the publish "
                + "request's start; " + ingest
            let pacedNote = "after the burst (once the bridge has read back its own copies of it), \(paced) messages on the "
                + "same running bridge at a steady \(pacedRate) msg/s "
                + "(\(pacedPerTick) per request every \(pacedTick)); latency = the row's created_at − its request's start"
            let burstNote = "latency under the \(count)-message burst above: mostly time spent waiting in the backlog"
            let cpuNote = "busy CPU time of the whole machine (/proc/stat: every process, both servers and PostgreSQL "
                + "included) from the burst's first publish until its last row was committed and fanned out, per message; baseline = the same "
                + "for the Supabase-like raw ingest alone (XMTP-like raw ingest: "
                + "\(BenchFormat.number(BenchSummary(xmtpCPU).median)) µs/msg); on one machine the bridge pays for both "
                + "servers' work, its own, and the realtime echo of every copy"
            var cpuFigures: [BenchFigure] = []
            if !burstCPU.isEmpty, !supabaseCPU.isEmpty {
                cpuFigures.append(BenchFigure(scenario: "bridge", figure: "machine CPU per message in the burst", unit: "µs",
                                              summary: BenchSummary(burstCPU),
                                              baseline: BenchBaseline(name: "Supabase-like raw ingest, same measure", unit: "µs",
                                                                      summary: BenchSummary(supabaseCPU)),
                                              goal: .none, note: cpuNote))
            }
            return ([
                BenchFigure(scenario: "bridge", figure: "XMTP-like → Supabase-like", unit: "msg/s", summary: BenchSummary(rates),
                            baseline: BenchBaseline(name: "slower backend's raw ingest", unit: "msg/s",
                                                    summary: BenchSummary(baselines)),
                            goal: .both(.atLeast(2000), .ratioAtLeast(0.5)), note: note),
                BenchFigure(scenario: "bridge", figure: "end-to-end latency p50 at \(pacedRate) msg/s", unit: "ms",
                            summary: BenchSummary(pacedP50), goal: .atMost(20), note: pacedNote),
                BenchFigure(scenario: "bridge", figure: "end-to-end latency p99 at \(pacedRate) msg/s", unit: "ms",
                            summary: BenchSummary(pacedP99)),
                BenchFigure(scenario: "bridge", figure: "latency p50 in the burst", unit: "ms", summary: BenchSummary(p50),
                            note: burstNote),
                BenchFigure(scenario: "bridge", figure: "latency p99 in the burst", unit: "ms", summary: BenchSummary(p99)),
            ] + cpuFigures, [])
        }
    }

    /// One bridged burst then a paced phase: the burst's messages/s and per-message latencies, and the paced
    /// phase's latencies, in seconds.
    static func relay(_ servers: BenchServers, count: Int, paced: Int,
                      run: Int) async throws -> (rate: Double, latencies: [Double], paced: [Double], cpu: Double?) {
        let group = try await servers.makeGroup(creator: "dave", members: ["bridge"])
        let bridgeUser: UserID = "bridge", reader: UserID = "reader"
        let room = try await servers.supabaseHarness.createConversation(title: "bench-bridge", members: [bridgeUser, reader])
        let store = try SQLiteStore(path: servers.directory.path("bridge-\(run).sqlite"))
        defer { store.close() }
        let bridge = try await Bridge(
            a: BridgeSide(name: "xmtp", adapter: try group.adapter(group.members[0], database: servers.directory.path("bridge-xmtp-\(run).sqlite")),
                          conversation: group.conversation),
            b: BridgeSide(name: "supabase", adapter: servers.supabaseAdapter(bridgeUser), conversation: room),
            store: store)
        let database = try BareCopyConnection(url: try servers.databaseURL())
        let running = Task { await bridge.run() }
        do {
            let result = try await burst(group, servers: servers, database: database, room: room, count: count)
            try await caughtUp(store, pair: bridge.pair, side: bridge.b, room: room, database: database)
            let steady = try await pacedLatencies(group, database: database, room: room, count: paced,
                                                  already: count + warmUp)
            await bridge.stop()
            running.cancel()
            await running.value
            return (result.rate, result.latencies, steady, result.cpu)
        } catch {
            await bridge.stop()
            running.cancel()
            await running.value
            throw error
        }
    }

    /// Rows of `room` committed in the Supabase-like server's database.
    private static func rows(in room: ConversationID, _ database: BareCopyConnection) throws -> Int {
        Int(try database.query("SELECT count(*) FROM public.messages WHERE conversation_id = $1::uuid", [room.rawValue]).first ?? "") ?? -1
    }

    /// Whether `room` holds `expected` rows, the copy of `last` (the last message published) among them. The poll
    /// looks the last row up by its key (one index probe) and counts only once it is there: counting a
    /// conversation of 20,000 rows every 10 ms would take a good part of a core from the system being measured.
    private static func crossed(_ last: MessageID, expected: Int, in room: ConversationID,
                                _ database: BareCopyConnection) throws -> Bool {
        let present = try database.query("SELECT count(*) FROM public.messages WHERE id = $1::uuid",
                                         [SupabaseRows.rowID(for: last)]).first == "1"
        return try present && rows(in: room, database) >= expected
    }

    /// Bridges a warm-up, then publishes `count` messages and polls the database until all their rows are
    /// committed; latency = a row's `created_at` (the server's clock, same machine) − its publish request's start;
    /// cpu = the machine's busy CPU microseconds per message from the first publish until the last row is in and
    /// the realtime feed has fanned out every change (nil without `/proc/stat`).
    private static func burst(_ group: BenchGroup, servers: BenchServers, database: BareCopyConnection, room: ConversationID,
                              count: Int) async throws -> (rate: Double, latencies: [Double], cpu: Double?) {
        let http = HTTPClient()
        let warm = try group.sealedTexts(warmUp, label: "warm-up")
        try await group.sendAll(warm.map(\.item), chunk: publishChunk, http: http)
        guard try await poll(seconds: 30, { try rows(in: room, database) >= warm.count }) else {
            throw BenchError("the warm-up did not cross the bridge within 30 s (\(try rows(in: room, database)) of \(warm.count))")
        }
        let sealed = try group.sealedTexts(count, label: "bridged")
        let keys = sealed.map(\.key), items = sealed.map(\.item)
        var sentAt: [Date] = []
        sentAt.reserveCapacity(count)
        let cpu = MachineCPU.Mark()
        for start in stride(from: 0, to: count, by: publishChunk) {
            let end = min(count, start + publishChunk)
            sentAt += Array(repeating: Date(), count: end - start)
            try await group.send(items[start..<end], http: http)
        }
        let expected = warm.count + count
        let limit = 60 + count / 200
        guard try await poll(seconds: limit, { try crossed(keys[count - 1], expected: expected, in: room, database) }) else {
            throw BenchError("only \(try rows(in: room, database) - warm.count) of \(count) messages crossed the bridge within \(limit) s")
        }
        try await servers.feedCaughtUp()
        let cpuPerMessage = cpu.microseconds(per: count)
        let created = try createdTimes(in: room, database)
        var latencies: [Double] = []
        latencies.reserveCapacity(count)
        var last = sentAt[0].timeIntervalSince1970
        for (index, key) in keys.enumerated() {
            guard let time = created[SupabaseRows.rowID(for: key)] else { throw BenchError("no row for bridged message \(index)") }
            last = max(last, time)
            latencies.append(time - sentAt[index].timeIntervalSince1970)
        }
        return (Double(count) / (last - sentAt[0].timeIntervalSince1970), latencies, cpuPerMessage)
    }

    /// Publishes `count` messages at `pacedRate` (each request scheduled from the phase's start, not from the end
    /// of the previous request), waits until all crossed, and returns each one's latency in seconds.
    private static func pacedLatencies(_ group: BenchGroup, database: BareCopyConnection, room: ConversationID,
                                       count: Int, already: Int) async throws -> [Double] {
        let http = HTTPClient()
        let sealed = try group.sealedTexts(count, label: "paced")
        let keys = sealed.map(\.key), items = sealed.map(\.item)
        var sentAt: [Date] = []
        sentAt.reserveCapacity(count)
        let clock = ContinuousClock()
        let start = clock.now
        for (tick, first) in stride(from: 0, to: count, by: pacedPerTick).enumerated() {
            try await clock.sleep(until: start + pacedTick * tick)
            let end = min(count, first + pacedPerTick)
            sentAt += Array(repeating: Date(), count: end - first)
            try await group.send(items[first..<end], http: http)
        }
        let expected = already + count
        guard try await poll(seconds: 60, { try crossed(keys[count - 1], expected: expected, in: room, database) }) else {
            throw BenchError("only \(try rows(in: room, database) - already) of \(count) paced messages crossed the bridge within 60 s")
        }
        let created = try createdTimes(in: room, database)
        return try keys.enumerated().map { index, key in
            guard let time = created[SupabaseRows.rowID(for: key)] else { throw BenchError("no row for paced message \(index)") }
            return time - sentAt[index].timeIntervalSince1970
        }
    }

    /// Each row's `created_at` (seconds since 1970) by row ID.
    private static func createdTimes(in room: ConversationID, _ database: BareCopyConnection) throws -> [String: Double] {
        var created: [String: Double] = [:]
        for line in try database.query("""
            SELECT id::text || ' ' || (extract(epoch FROM created_at) * 1000000)::bigint::text
            FROM public.messages WHERE conversation_id = $1::uuid
            """, [room.rawValue]) {
            let parts = line.split(separator: " ")
            if parts.count == 2, let micros = Double(parts[1]) { created[String(parts[0])] = micros / 1_000_000 }
        }
        return created
    }

    /// Polls `condition` every 10 ms for up to `seconds`; returns whether it held.
    private static func poll(seconds: Int, _ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while try !condition() {
            if ContinuousClock.now > deadline { return false }
            try await Task.sleep(for: .milliseconds(10))
        }
        return true
    }

    /// Messages/s of the Supabase-like server taking `count` bridge-shaped rows from one client the way the bridge
    /// writes them: prepared by the bridge account's adapter and sent with `publishAll` (bulk upserts).
    static func supabaseIngestRate(_ servers: BenchServers, count: Int) async throws -> (rate: Double, cpu: Double?) {
        let user: UserID = "bridge"
        let room = try await servers.supabaseHarness.createConversation(title: "bench-ingest", members: [user, "reader"])
        let adapter = servers.supabaseAdapter(user)
        let sentAt = Date()
        let cpu = MachineCPU.Mark()
        let (receipts, seconds) = try await measure { () async throws -> [PublishReceipt] in
            var prepared: [PreparedMessage] = []
            prepared.reserveCapacity(count)
            for index in 0..<count {
                let metadata = ["bridge.sender": "dave", "bridge.sentAt": String(TimelinePosition.micros(sentAt)),
                                "bridge.origin": "xmtp:\(String(repeating: "0", count: 56))\(String(format: "%08d", index))"]
                prepared.append(try await adapter.prepare(OutgoingMessage(id: .make(), conversation: room, sender: user,
                                                                          text: "bridged \(index)", metadata: metadata,
                                                                          createdAt: sentAt), noSend: true))
            }
            return try await adapter.publishAll(prepared)
        }
        try await servers.feedCaughtUp()
        let cpuPerMessage = cpu.microseconds(per: count)
        guard receipts.count == count else { throw BenchError("Supabase ingest returned \(receipts.count) receipts for \(count)") }
        return (Double(count) / seconds, cpuPerMessage)
    }

    /// Messages/s of the XMTP-like node taking `count` sealed messages from one client, `publishChunk` per request.
    static func xmtpIngestRate(_ servers: BenchServers, count: Int) async throws -> (rate: Double, cpu: Double?) {
        let group = try await servers.makeGroup(creator: "ingest", members: [])
        let items = try group.sealedTexts(count, label: "ingest").map(\.item)
        let http = HTTPClient()
        let cpu = MachineCPU.Mark()
        let ((), seconds) = try await measure { try await group.sendAll(items, chunk: publishChunk, http: http) }
        return (Double(count) / seconds, cpu.microseconds(per: count))
    }
}
