import Foundation
import SwitchboardBench

/// `switchboard bench SCENARIO [--quick] [--format table|json] [--runs N]` and the hidden `bench memory-probe`.
enum BenchCommand {
    /// Runs the command; returns the exit status (1 when a scenario fails).
    static func run(_ arguments: [String]) async throws -> Int32 {
        if arguments.first == "memory-probe" { return try await probe(Array(arguments.dropFirst())) }
        let parsed = try Arguments(arguments, booleanFlags: ["quick"])
        try parsed.check(allowed: ["quick", "format", "runs"], positionals: true)
        guard parsed.positional.count == 1, let name = parsed.positional.first else {
            throw UsageError("bench needs one scenario: \(BenchScenario.allCases.map(\.rawValue).joined(separator: " | ")) | all")
        }
        guard let scenarios = BenchRunner.scenarios(named: name) else {
            throw UsageError("unknown bench scenario '\(name)'")
        }
        let format = parsed.value("format") ?? "table"
        guard format == "table" || format == "json" else { throw UsageError("--format must be table or json") }
        var runs: Int?
        if let text = parsed.value("runs") {
            guard let value = Int(text), value >= 1 else { throw UsageError("--runs must be a positive integer") }
            runs = value
        }
        let options = BenchOptions(quick: parsed.has("quick"), runs: runs)
        let command = (["switchboard", "bench"] + arguments).joined(separator: " ")
        let report = try await BenchRunner.run(scenarios, options: options, command: command) { line in
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        print(format == "json" ? BenchFormat.json(report) : BenchFormat.table(report))
        return 0
    }

    /// The memory scenario's child: `bench memory-probe --store PATH [--pages N]`.
    static func probe(_ arguments: [String]) async throws -> Int32 {
        let parsed = try Arguments(arguments, booleanFlags: [])
        try parsed.check(allowed: ["store", "pages"])
        guard let store = parsed.value("store") else { throw UsageError("memory-probe needs --store") }
        let pages = Int(parsed.value("pages") ?? "20") ?? 20
        writeLine(try await MemoryScenario.probe(store: store, pages: pages))
        return 0
    }
}
