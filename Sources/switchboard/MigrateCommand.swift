import Foundation
import Glibc
import SwitchboardBridge
import SwitchboardConfig
import SwitchboardCore
import SwitchboardNet
import SwitchboardPostgresStore
import SwitchboardStore
import Synchronization

/// `switchboard migrate`: copies one conversation's history from one backend to another, checkpointed, then
/// optionally verifies both sides message by message.
enum MigrateCommand {
    /// The store used when neither `--store` nor `--database-url` is given.
    static let defaultStorePath = "./switchboard-migrate.sqlite"

    /// Parses the options, runs the migration (and/or the verification) and returns the exit status:
    /// 0 done (and clean), 1 failed or differences found, 2 bad options or endpoints, 130/143 stopped by
    /// SIGINT/SIGTERM (re-run to resume).
    static func run(_ arguments: [String]) async throws -> Int32 {
        let options = try Arguments(arguments, booleanFlags: ["verify", "verify-only", "no-estimate", "dry-run"])
        try options.check(allowed: ["from", "to", "conversation", "store", "database-url", "verify", "verify-only",
                                    "format", "batch-size", "no-estimate", "dry-run"])
        if options.has("dry-run"), options.has("verify") || options.has("verify-only") {
            throw UsageError("--dry-run plans a copy; give it without --verify or --verify-only")
        }
        guard let fromText = options.value("from") else { throw UsageError("migrate needs --from ENDPOINT") }
        guard let toText = options.value("to") else { throw UsageError("migrate needs --to ENDPOINT") }
        let format = options.value("format") ?? "text"
        guard ["text", "json"].contains(format) else { throw UsageError("--format must be text or json (got '\(format)')") }
        var configuration = MigrationConfiguration()
        if let text = options.value("batch-size") {
            guard let size = Int(text), (1...1000).contains(size) else {
                throw UsageError("--batch-size must be a number from 1 to 1000 (got '\(text)')")
            }
            configuration.batchSize = size
        }
        configuration.estimateTotal = !options.has("no-estimate")
        // The copy's log lines, timestamped like the bridge's (errors before the copy keep the plain prefix).
        configuration.logger = CommandLog.logger("migration", level: .info)
        if options.value("store") != nil, options.value("database-url") != nil {
            throw UsageError("give --store or --database-url, not both")
        }
        var conversations: (String?, String?) = (nil, nil)
        if let pair = options.value("conversation") {
            guard let colon = pair.firstIndex(of: ":"), colon != pair.startIndex, pair.index(after: colon) != pair.endIndex else {
                throw UsageError("--conversation must be SRC:DST (got '\(pair)')")
            }
            conversations = (String(pair[..<colon]), String(pair[pair.index(after: colon)...]))
        }

        let from: AdapterEndpoint, to: AdapterEndpoint
        do {
            from = try endpoint(fromText, option: "--from", conversation: conversations.0)
            to = try endpoint(toText, option: "--to", conversation: conversations.1)
            if (from.fields["backend"] ?? from.adapter) == (to.fields["backend"] ?? to.adapter) {
                throw ConfigError("--to.backend", "both sides use backend ID \(to.fields["backend"] ?? to.adapter); "
                                  + "set \"backend\" on one side so their ID mappings stay apart")
            }
        } catch let error as ConfigError {
            FileHandle.standardError.write(Data("switchboard migrate: \(error)\n".utf8))
            return 2
        }

        let store: any Store
        do {
            if let url = options.value("database-url") {
                store = try PostgresStore(url: url)
            } else {
                let path = options.value("store") ?? defaultStorePath
                // A dry run writes nothing: without a store yet there are no earlier runs, so an empty one in memory.
                let planOnly = options.has("dry-run") && !FileManager.default.fileExists(atPath: path)
                store = try SQLiteStore(path: planOnly ? ":memory:" : path)
            }
        } catch {
            FileHandle.standardError.write(Data("switchboard migrate: cannot open the store: \(error)\n".utf8))
            return 1
        }
        let http = HTTPClient()
        let migration: Migration
        do {
            migration = try Migration(source: BridgeSide(name: from.adapter, adapter: try await from.makeAdapter(http: http),
                                                         conversation: from.conversation),
                                      target: BridgeSide(name: to.adapter, adapter: try await to.makeAdapter(http: http),
                                                         conversation: to.conversation),
                                      store: store, configuration: configuration)
        } catch {
            FileHandle.standardError.write(Data("switchboard migrate: \(error)\n".utf8))
            return 1
        }

        let stopSignal = Atomic<Int32>(0)
        let waiter = SignalWaiter(signals: [SIGINT, SIGTERM])
        let watcher = Task {
            guard let number = await waiter.wait() else { return }
            stopSignal.store(number, ordering: .releasing)
            FileHandle.standardError.write(Data("\nswitchboard migrate: signal \(number), stopping after the message in flight\n".utf8))
            await migration.stop()
        }
        defer { watcher.cancel() }

        var output: [(key: String, value: JSONValue)] = []
        var status: Int32 = 0
        if options.has("dry-run") {
            do {
                let plan = try await migration.plan()
                if format == "json" { writeLine(JSONValue.object([("plan", plan.json)]).serialized) } else { plan.summaryLines.forEach(writeLine) }
                return 0
            } catch {
                FileHandle.standardError.write(Data("switchboard migrate: \(error)\n".utf8))
                return 1
            }
        }
        if !options.has("verify-only") {
            let display = ProgressDisplay(json: format == "json")
            if configuration.estimateTotal { display.note("copying; counting the source's messages alongside...") }
            let report: MigrationReport
            do {
                report = try await migration.run(progress: { display.update($0) })
            } catch {
                display.finish()
                FileHandle.standardError.write(Data("switchboard migrate: \(error); nothing was copied\n".utf8))
                return 1
            }
            display.finish()
            if format == "json" {
                output.append(("migration", report.json))
            } else {
                report.summaryLines.forEach(writeLine)
            }
            switch report.status {
            case .completed:
                // A message the target refused is not migrated: the run did not succeed, whatever else it copied.
                if report.notCarried.contains(where: { if case .refused = $0.reason { true } else { false } }) { status = 1 }
            case .failed: status = 1
            case .interrupted:
                let number = stopSignal.load(ordering: .acquiring)
                status = number == 0 ? 1 : 128 + number
            }
        }
        if status == 0, options.has("verify") || options.has("verify-only") {
            do {
                let verification = try await migration.verify()
                if format == "json" {
                    output.append(("verification", verification.json))
                } else {
                    verification.summaryLines.forEach(writeLine)
                }
                if !verification.isClean { status = 1 }
            } catch {
                FileHandle.standardError.write(Data("switchboard migrate: verification failed: \(error)\n".utf8))
                status = 1
            }
        }
        if format == "json" { writeLine(JSONValue.object(output).serialized) }
        return status
    }

    /// Reads an endpoint (inline JSON or a file), replacing its conversation when `conversation` is given.
    static func endpoint(_ text: String, option: String, conversation: String?) throws -> AdapterEndpoint {
        guard let conversation else { return try AdapterEndpoint.parseArgument(text, option: option) }
        let json: JSONValue
        let base: URL
        if text.hasPrefix("{") {
            json = try AdapterEndpoint.parseJSON(text, path: option)
            base = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        } else {
            guard let data = FileManager.default.contents(atPath: text) else { throw ConfigError(option, "cannot read \(text)") }
            json = try AdapterEndpoint.parseJSON(String(decoding: data, as: UTF8.self), path: option)
            base = URL(fileURLWithPath: text).deletingLastPathComponent()
        }
        guard case .object(var members) = json else { throw ConfigError(option, "must be an object") }
        members.removeAll { $0.key == "conversation" }
        members.append((key: "conversation", value: .string(conversation)))
        do {
            return try AdapterEndpoint.parse(.object(members), path: option, baseDirectory: base)
        } catch let error as ConfigError where error.field == "\(option).conversation" {
            throw ConfigError("--conversation", "\(option == "--from" ? "SRC" : "DST") \(error.problem)")
        }
    }
}

/// Shows a migration's progress: a bar redrawn in place on a terminal, else a plain line every ~10 % (every
/// 1,000 messages while the total is still being counted) or 5 s.
final class ProgressDisplay: Sendable {
    /// Messages between two plain lines while the total is unknown.
    static let linesEvery = 1_000

    /// The drawing state.
    private struct State {
        var lastDraw = ContinuousClock.now - .seconds(1)
        var lastLine = ContinuousClock.now
        var lastDecile = -1
        var lastThousands = -1
        var drewBar = false
        var latest: MigrationProgress?
    }

    private let handle: FileHandle
    private let isTerminal: Bool
    private let state = Locked(State())

    /// Progress on standard output (standard error when the report itself is JSON on standard output).
    init(json: Bool) {
        handle = json ? FileHandle.standardError : FileHandle.standardOutput
        isTerminal = isatty(json ? STDERR_FILENO : STDOUT_FILENO) == 1
    }

    /// Writes a note line (before the bar starts).
    func note(_ text: String) {
        handle.write(Data((text + "\n").utf8))
    }

    /// Takes the latest progress; draws when due.
    func update(_ progress: MigrationProgress) {
        let now = ContinuousClock.now
        let text: String? = state.withLock { state in
            state.latest = progress
            if isTerminal {
                guard now - state.lastDraw >= .milliseconds(100) else { return nil }
                state.lastDraw = now
                state.drewBar = true
                return "\r" + progress.barLine() + "\u{1B}[K"
            }
            let decile = progress.fraction.map { Int(($0 * 10).rounded(.down)) } ?? state.lastDecile
            let thousands = progress.fraction == nil ? progress.processed / Self.linesEvery : state.lastThousands
            guard decile > state.lastDecile || thousands > state.lastThousands || now - state.lastLine >= .seconds(5)
            else { return nil }
            state.lastDecile = max(decile, state.lastDecile)
            state.lastThousands = max(thousands, state.lastThousands)
            state.lastLine = now
            return progress.plainLine + "\n"
        }
        if let text { handle.write(Data(text.utf8)) }
    }

    /// Draws the final state and ends the bar's line.
    func finish() {
        let text: String? = state.withLock { state in
            guard let latest = state.latest else { return nil }
            if isTerminal { return "\r" + latest.barLine() + "\u{1B}[K\n" }
            return state.lastDecile >= 10 ? nil : latest.plainLine + "\n"
        }
        if let text { handle.write(Data(text.utf8)) }
    }
}
