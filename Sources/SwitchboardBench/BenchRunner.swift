import Foundation

/// Runs scenarios by name and assembles the report.
public enum BenchRunner {
    /// The scenarios `name` stands for (`all` is every scenario, built or not); nil for an unknown name.
    public static func scenarios(named name: String) -> [BenchScenario]? {
        if name == "all" { return BenchScenario.allCases }
        return BenchScenario(rawValue: name).map { [$0] }
    }

    /// Runs `scenarios` in order with `options`; `progress` hears one line per scenario as it starts.
    public static func run(_ scenarios: [BenchScenario], options: BenchOptions, command: String,
                           progress: (String) -> Void = { _ in }) async throws -> BenchReport {
        let date = Date()
        var figures: [BenchFigure] = []
        var notes: [String] = []
        var notBuilt: [String] = []
        if options.runs < 3 { notes.append("only \(options.runs) run(s) per figure: min/max say little") }
        for scenario in scenarios {
            guard scenario.isBuilt else {
                notBuilt.append(scenario.rawValue)
                continue
            }
            progress("running \(scenario.rawValue)…")
            let clock = ContinuousClock()
            let start = clock.now
            let result = try await scenario.run(options)
            figures += result.figures
            notes += result.notes
            progress("  \(scenario.rawValue) done in \(BenchFormat.number(BenchStatistics.seconds(clock.now - start))) s")
        }
        return BenchReport(command: command, date: date, machine: .current(), figures: figures, notes: notes,
                           notBuilt: notBuilt)
    }
}
