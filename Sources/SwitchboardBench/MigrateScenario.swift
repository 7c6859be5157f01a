import Foundation
import SupabaseAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardNet
import SwitchboardStore

/// `migrate`: a `Migration` (SwitchboardBridge, SQLite store, default configuration as `switchboard migrate` runs
/// it) copying N messages from an XMTP-like group into a Supabase-like conversation, messages/s of the copy phase,
/// vs PostgreSQL `COPY … FROM STDIN` of the same rows into the same server's `public.messages`.
enum MigrateScenario {
    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let count = options.size(quick: 10_000, full: 20_000, floor: 10)
        return try await BenchServers.with("migrate", xmtp: true) { servers in
            var runRates: [Double] = [], copyPhaseRates: [Double] = [], baselineRates: [Double] = []
            var runCPU: [Double] = [], copyCPU: [Double] = []
            for run in 0..<options.runs {
                try await servers.settle()
                let migrated = try await migrate(servers, count: count, run: run)
                runRates.append(migrated.wholeRate)
                copyPhaseRates.append(migrated.copyRate)
                if let cpu = migrated.cpu { runCPU.append(cpu) }
                try await servers.settle()
                let copied = try await copyRate(servers, count: count)
                baselineRates.append(copied.rate)
                if let cpu = copied.cpu { copyCPU.append(cpu) }
            }
            var cpuFigures: [BenchFigure] = []
            if !runCPU.isEmpty, !copyCPU.isEmpty {
                cpuFigures.append(BenchFigure(
                    scenario: "migrate", figure: "machine CPU per message", unit: "µs", summary: BenchSummary(runCPU),
                    baseline: BenchBaseline(name: "PostgreSQL COPY, same measure", unit: "µs", summary: BenchSummary(copyCPU)),
                    goal: .none,
                    note: "busy CPU time of the whole machine (/proc/stat: every process, the XMTP-like node, the "
                        + "Supabase-like server and PostgreSQL included) over the whole migration until the realtime feed "
                        + "has dispatched its rows, per message; baseline = the same for the COPY"))
            }
            let note = "\(count) messages per run (seeded beforehand with the node's bulk send), \(options.runs) runs, "
                + "each phase started once the server's realtime feed has caught up with the previous one; "
                + "figure = messages / seconds of the whole run as `switchboard migrate` does it (the source's history counted "
                + "alongside the copy, which stores it in the XMTP adapter's local database too; the copy phase "
                + "alone: \(BenchFormat.number(BenchSummary(copyPhaseRates).median)) msg/s); baseline = libpq COPY (text) of the same rows "
                + "(id, conversation, sender, body, the migration's metadata) as the cluster's superuser into a fresh "
                + "conversation, one autocommit COPY; the messages_version trigger fires for every copied row (the guard "
                + "trigger is UPDATE/DELETE only; row-level security does not apply to the superuser)"
            return ([
                BenchFigure(scenario: "migrate", figure: "XMTP-like → Supabase-like migration", unit: "msg/s",
                            summary: BenchSummary(runRates),
                            baseline: BenchBaseline(name: "PostgreSQL COPY of the same rows", unit: "msg/s",
                                                    summary: BenchSummary(baselineRates)),
                            goal: .ratioAtLeast(0.5), note: note),
            ] + cpuFigures, [])
        }
    }

    /// Seeds `count` messages in a fresh group and migrates them into a fresh conversation; returns the copy-phase
    /// rate and the whole run's rate (estimate included).
    static func migrate(_ servers: BenchServers, count: Int,
                        run: Int) async throws -> (copyRate: Double, wholeRate: Double, cpu: Double?) {
        let group = try await servers.makeGroup(creator: "author", members: ["migrator"])
        let migrator = group.members[0]
        let room = try await servers.supabaseHarness.createConversation(title: "bench-migrate", members: [migrator, "reader"])
        let sealed = try group.sealedTexts(count, label: "message")
        try await group.sendAll(sealed.map(\.item), chunk: 1000, http: HTTPClient())
        let store = try SQLiteStore(path: servers.directory.path("migrate-\(run).sqlite"))
        defer { store.close() }
        let migration = try Migration(
            source: BridgeSide(name: "xmtp", adapter: try group.adapter(migrator, database: servers.directory.path("migrate-xmtp-\(run).sqlite")),
                               conversation: group.conversation),
            target: BridgeSide(name: "supabase", adapter: servers.supabaseAdapter(migrator), conversation: room),
            store: store)
        let cpu = MachineCPU.Mark()
        let report = try await migration.run()
        try await servers.feedCaughtUp()
        let cpuPerMessage = cpu.microseconds(per: count)
        guard report.status == .completed, report.copied == count else {
            throw BenchError("migration ended \(report.status.rawValue) with \(report.copied) of \(count) copied: \(report.error ?? "")")
        }
        let stored = try countRows(servers, conversation: room)
        guard stored == count else { throw BenchError("the target holds \(stored) rows after migrating \(count)") }
        return (report.rate, Double(count) / report.duration, cpuPerMessage)
    }

    /// Messages/s of one `COPY public.messages … FROM STDIN` of `count` migration-shaped rows into a fresh conversation.
    static func copyRate(_ servers: BenchServers, count: Int) async throws -> (rate: Double, cpu: Double?) {
        let sender: UserID = "migrator"
        let room = try await servers.supabaseHarness.createConversation(title: "bench-copy", members: [sender, "reader"])
        let sentAt = String(TimelinePosition.micros(Date()))
        let rows = (0..<count).map { index -> String in
            let metadata: JSONValue = ["bridge.sender": "author", "bridge.sentAt": .string(sentAt),
                                       "bridge.origin": .string("xmtp:" + String(format: "%064d", index))]
            let fields = [MessageID.make().rawValue, room.rawValue, sender.rawValue, "message \(index)", metadata.serialized]
            return fields.map(BareCopyConnection.escape).joined(separator: "\t") + "\n"
        }
        let connection = try BareCopyConnection(url: try servers.databaseURL())
        let cpu = MachineCPU.Mark()
        let ((), seconds) = try await measure {
            try connection.copy("COPY public.messages (id, conversation_id, sender_id, body, metadata) FROM STDIN", rows: rows)
        }
        try await servers.feedCaughtUp()
        let cpuPerMessage = cpu.microseconds(per: count)
        let stored = try countRows(servers, conversation: room)
        guard stored == count else { throw BenchError("COPY left \(stored) rows of \(count)") }
        return (Double(count) / seconds, cpuPerMessage)
    }

    /// Rows of `conversation` in `public.messages`, counted in the database (bound parameter).
    static func countRows(_ servers: BenchServers, conversation: ConversationID) throws -> Int {
        let connection = try BareCopyConnection(url: try servers.databaseURL())
        let value = try connection.query("SELECT count(*) FROM public.messages WHERE conversation_id = $1::uuid",
                                         [conversation.rawValue])
        return value.first.flatMap { Int($0) } ?? -1
    }
}
