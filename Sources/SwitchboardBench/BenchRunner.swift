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
        if scenarios.contains(where: \.isBuilt), let busy = await busyCoresBeforeRun() {
            let cores = ProcessInfo.processInfo.activeProcessorCount
            if let note = backgroundLoadNote(busyCores: busy, cores: cores) {
                progress("warning: " + note)
                notes.append(note)
            }
        }
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

    /// How many cores other processes kept busy over one second before the run (the bench itself sleeps), or nil
    /// when `/proc/stat` cannot be read.
    static func busyCoresBeforeRun() async -> Double? {
        guard let start = MachineCPU.busySeconds() else { return nil }
        let clock = ContinuousClock()
        let began = clock.now
        try? await Task.sleep(for: .seconds(1))
        guard let end = MachineCPU.busySeconds() else { return nil }
        return (end - start) / max(0.001, BenchStatistics.seconds(clock.now - began))
    }

    /// The report note when other processes used more than a tenth of a core before the run, else nil: every
    /// figure shares the machine with them, and the ratios hold better than the absolute figures.
    static func backgroundLoadNote(busyCores: Double, cores: Int) -> String? {
        guard busyCores > 0.1 else { return nil }
        return "the machine was not quiet: other processes kept \(String(format: "%.1f", busyCores)) of \(cores) cores busy "
            + "in the second before the run; absolute figures will be low (ratios to baselines measured alongside hold better)"
    }
}
