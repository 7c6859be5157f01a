import Foundation
import Testing
@testable import SwitchboardBench

/// Statistics helpers.
@Suite struct BenchStatisticsTests {
    /// Median of odd and even counts, and of nothing.
    @Test func median() {
        #expect(BenchStatistics.median(sorted: [1, 2, 9]) == 2)
        #expect(BenchStatistics.median(sorted: [1, 2, 4, 9]) == 3)
        #expect(BenchStatistics.median(sorted: []) == 0)
    }

    /// Nearest-rank percentiles.
    @Test func percentile() {
        let values = (1...100).map(Double.init).shuffled()
        #expect(BenchStatistics.percentile(values, 50) == 50)
        #expect(BenchStatistics.percentile(values, 99) == 99)
        #expect(BenchStatistics.percentile(values, 100) == 100)
        #expect(BenchStatistics.percentile([7], 99) == 7)
    }

    /// The machine's busy CPU time grows while this process spins, and a mark turns it into µs per item.
    @Test func machineCPU() throws {
        let before = try #require(MachineCPU.busySeconds())
        let mark = MachineCPU.Mark()
        let clock = ContinuousClock()
        let start = clock.now
        var spin = 0
        while clock.now - start < .milliseconds(300) { spin &+= 1 }
        #expect(spin > 0)
        let after = try #require(MachineCPU.busySeconds())
        #expect(after - before >= 0.1, "300 ms of spinning shows as busy time")
        #expect(try #require(mark.microseconds(per: 1)) >= 100_000)
        #expect(mark.microseconds(per: 0) == nil)
    }

    /// A busy machine before the run is reported; a quiet one is not.
    @Test func backgroundLoad() async throws {
        #expect(BenchRunner.backgroundLoadNote(busyCores: 0.05, cores: 2) == nil)
        let note = try #require(BenchRunner.backgroundLoadNote(busyCores: 1.5, cores: 2))
        #expect(note.contains("1.5 of 2 cores"), "\(note)")
        // While this test spins a thread, the sample sees at least part of a core busy.
        let spinning = Task.detached {
            let clock = ContinuousClock(), start = clock.now
            var spin = 0
            while clock.now - start < .milliseconds(1500) { spin &+= 1 }
            return spin
        }
        let busy = try #require(await BenchRunner.busyCoresBeforeRun())
        #expect(await spinning.value > 0)
        #expect(busy >= 0.5, "a spinning thread shows as busy: \(busy)")
    }

    /// A summary keeps median, min and max.
    @Test func summary() {
        let summary = BenchSummary([5, 1, 3])
        #expect(summary == BenchSummary([3, 5, 1]))
        #expect(summary.median == 3 && summary.min == 1 && summary.max == 5)
    }

    /// Goals against medians and ratios.
    @Test func goals() {
        #expect(BenchGoal.atMost(1).isMet(median: 0.5, ratio: nil) == true)
        #expect(BenchGoal.atLeast(10).isMet(median: 5, ratio: nil) == false)
        #expect(BenchGoal.ratioAtLeast(0.5).isMet(median: 1, ratio: 0.6) == true)
        #expect(BenchGoal.ratioAtMost(1.2).isMet(median: 1, ratio: nil) == false)
        #expect(BenchGoal.both(.atMost(60), .ratioAtMost(1.2)).isMet(median: 30, ratio: 1.5) == false)
        #expect(BenchGoal.none.isMet(median: 1, ratio: 1) == nil)
    }

    /// The ratio is the figure's median over the baseline's.
    @Test func ratio() {
        let figure = BenchFigure(scenario: "s", figure: "f", unit: "ms", summary: BenchSummary([2]),
                                 baseline: BenchBaseline(name: "b", unit: "ms", summary: BenchSummary([4])),
                                 goal: .ratioAtMost(1))
        #expect(figure.ratio == 0.5)
        #expect(figure.met == true)
    }

    /// The CPU model comes from the first `model name` line.
    @Test func cpuModel() {
        let text = "processor\t: 0\nmodel name\t: Example CPU @ 2.0GHz\nprocessor\t: 1\nmodel name\t: other\n"
        #expect(BenchMachine.cpuModel(fromCPUInfo: text) == "Example CPU @ 2.0GHz")
        #expect(BenchMachine.cpuModel(fromCPUInfo: "") == "unknown")
    }

    /// VmHWM parsing from a /proc status text.
    @Test func statusValue() {
        #expect(MemoryScenario.statusValue("Name:\tx\nVmHWM:\t   12345 kB\nVmRSS:\t 1 kB\n", key: "VmHWM") == 12345)
        #expect(MemoryScenario.statusValue("Name:\tx\n", key: "VmHWM") == nil)
    }
}

/// Formatting and plumbing.
@Suite struct BenchFormatTests {
    /// A small report with one figure and one unbuilt scenario.
    func sampleReport() -> BenchReport {
        BenchReport(command: "switchboard bench all --quick", date: Date(timeIntervalSince1970: 0),
                    machine: BenchMachine(cores: 2, cpu: "Test CPU"),
                    figures: [BenchFigure(scenario: "send", figure: "p99", unit: "ms", summary: BenchSummary([0.5, 0.4, 0.7]),
                                          baseline: BenchBaseline(name: "insert", unit: "ms", summary: BenchSummary([0.1])),
                                          goal: .atMost(1), note: "tiny")],
                    notes: ["quick sizes"], notBuilt: ["supabase", "bridge", "migrate"])
    }

    /// JSON carries every field the issue names, plus command, date and machine.
    @Test func json() throws {
        let text = BenchFormat.json(sampleReport())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["command"] as? String == "switchboard bench all --quick")
        #expect((object["machine"] as? [String: Any])?["cores"] as? Int == 2)
        #expect(object["notBuilt"] as? [String] == ["supabase", "bridge", "migrate"])
        let result = try #require((object["results"] as? [[String: Any]])?.first)
        for key in ["scenario", "figure", "unit", "median", "min", "max", "baseline", "ratio", "goal", "met"] {
            #expect(result[key] != nil, "missing \(key)")
        }
        #expect(result["median"] as? Double == 0.5)
        #expect(result["met"] as? Bool == true)
        #expect((result["baseline"] as? [String: Any])?["name"] as? String == "insert")
    }

    /// The table names the machine, every figure and the unbuilt scenarios.
    @Test func table() {
        let text = BenchFormat.table(sampleReport())
        #expect(text.contains("2 cores, Test CPU"))
        #expect(text.contains("send"))
        #expect(text.contains("5.00×"))
        #expect(text.contains("not built yet: supabase, bridge, migrate"))
        #expect(text.contains("quick sizes"))
    }

    /// Number formatting keeps a few significant digits.
    @Test func numbers() {
        #expect(BenchFormat.number(12345.6) == "12346")
        #expect(BenchFormat.number(1.234) == "1.23")
        #expect(BenchFormat.number(0.01234) == "0.0123")
        #expect(BenchFormat.number(0) == "0")
    }

    /// `all` names every scenario; unknown names are rejected.
    @Test func scenarioNames() {
        #expect(BenchRunner.scenarios(named: "all")?.count == BenchScenario.allCases.count)
        #expect(BenchRunner.scenarios(named: "send") == [.send])
        #expect(BenchRunner.scenarios(named: "nope") == nil)
        #expect(BenchScenario.allCases.filter { !$0.isBuilt }.isEmpty)
    }

    /// Each item is delivered `copies` times, repeats trailing the original.
    @Test func duplication() {
        #expect(ScriptedAdapter.duplicated([0, 1, 2], copies: 3) == [0, 1, 0, 2, 1, 0, 2, 1, 2])
        #expect(ScriptedAdapter.duplicated([Int](), copies: 3).isEmpty)
    }
}

/// Scenario plumbing at tiny sizes (no timing assertions).
@Suite struct BenchScenarioPlumbingTests {
    /// Tiny options: one run, sizes scaled to almost nothing.
    let options = BenchOptions(quick: true, runs: 1, scale: 0.001)

    /// The send, idmap, dedupe and catchup scenarios run and produce their figures.
    @Test func scenariosRun() async throws {
        let report = try await BenchRunner.run([.send, .idmap, .dedupe, .catchup], options: options, command: "test")
        let names = Set(report.figures.map(\.scenario))
        #expect(names == ["send", "idmap", "dedupe", "catchup"])
        #expect(report.notBuilt.isEmpty)
        let renders = report.figures.first { $0.figure.hasPrefix("renders per event") }
        #expect(renders?.summary.max == 1)
        #expect(report.figures.contains { $0.scenario == "dedupe" && $0.figure.hasPrefix("storage ceiling") })
        #expect(report.figures.contains { $0.scenario == "dedupe" && $0.figure.hasSuffix("in-memory store") })
        #expect(report.figures.allSatisfy { $0.summary.median > 0 })
    }

    /// The memory probe opens a prepared store and reports a peak (in process).
    @Test func memoryProbe() async throws {
        let directory = try BenchDirectory("probe-test")
        defer { directory.remove() }
        try await MemoryScenario.prepare(path: directory.path("s.sqlite"), count: 120)
        let line = try await MemoryScenario.probe(store: directory.path("s.sqlite"), pages: 3)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect((object["vmhwm_kb"] as? Int ?? 0) > 0)
        #expect(object["loaded"] as? Int == 70)
    }
}
