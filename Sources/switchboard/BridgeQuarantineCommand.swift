import Foundation
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore

/// `switchboard bridge quarantine list|retry|drop --config FILE [--pair NAME] [ID…]`: the changes a bridge set
/// aside because no retry could bridge them (a key collision it could not place, a refusal of the other side),
/// read from the bridge's store; `retry` has the running bridge bridge them again at its next pass, `drop`
/// forgets them. Nothing here signs in to a backend.
enum BridgeQuarantineCommand {
    /// Runs the subcommand; exit 0, 1 for an ID that is not in the quarantine, 2 for usage errors.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let action = arguments.first, ["list", "retry", "drop"].contains(action) else {
            throw UsageError("bridge quarantine needs list, retry or drop")
        }
        let options = try Arguments(Array(arguments.dropFirst()), booleanFlags: [])
        try options.check(allowed: ["config", "pair"], positionals: true)
        guard let path = options.value("config"), !path.isEmpty else {
            throw UsageError("bridge quarantine needs --config FILE")
        }
        // Nothing here signs in: the sides' secrets need not be in the environment (the store's must).
        guard let config = try BridgeCommand.loadConfig(path, needsSecrets: false) else { return 2 }
        let pairs = try options.value("pair").map { name in
            guard let pair = config.pairs.first(where: { $0.name == name }) else {
                throw UsageError("no pair named '\(name)' in \(path)")
            }
            return [pair]
        } ?? config.pairs
        let ids = try options.positional.map { text in
            guard let id = Int64(text), id > 0 else { throw UsageError("'\(text)' is not a quarantine entry number") }
            return id
        }
        if action != "list", ids.isEmpty { throw UsageError("bridge quarantine \(action) needs entry numbers (see list)") }
        let store: any LeaseStore
        do {
            store = try config.openStore()
        } catch {
            FileHandle.standardError.write(Data("switchboard: \(config.storeField): cannot open the store: \(error)\n".utf8))
            return 1
        }
        defer { BridgeCommand.closeStore(store) }
        var unknown = Set(ids)
        for pair in pairs {
            let quarantine = BridgeQuarantine(store: store, a: pair.a.conversation, b: pair.b.conversation)
            let entries = try await quarantine.entries()
            switch action {
            case "list":
                writeLine("pair \(pair.name): \(entries.count) quarantined")
                for entry in entries { writeLine("  " + line(entry)) }
            default:
                for entry in entries where unknown.contains(entry.id) {
                    let done = await action == "retry" ? try quarantine.retry(entry.id) : try quarantine.drop(entry.id)
                    if done {
                        unknown.remove(entry.id)
                        writeLine("pair \(pair.name): \(action == "retry" ? "retry requested for" : "dropped") entry \(entry.id)")
                    }
                }
            }
        }
        for id in unknown.sorted() {
            FileHandle.standardError.write(Data("switchboard: no quarantine entry \(id)\(action == "retry" ? " held" : "")\n".utf8))
        }
        return unknown.isEmpty ? 0 : 1
    }

    /// `7  2026-12-03T21:40:00Z  from room-net  message srv-3  (retry requested)  contentTooLarge: …`.
    private static func line(_ entry: BridgeQuarantine.Entry) -> String {
        let reason = entry.reason.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let at = ISO8601DateFormatter().string(from: entry.at)
        return "\(entry.id)  \(at)  from \(entry.source)  \(entry.kind) \(entry.remoteID)"
            + (entry.retryRequested ? "  (retry requested)" : "") + "  \(reason.prefix(300))"
    }
}
