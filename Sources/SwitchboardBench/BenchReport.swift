import Foundation

/// Median, minimum and maximum of one figure over repeated runs.
public struct BenchSummary: Sendable, Hashable, Codable {
    /// The median of the runs.
    public var median: Double
    /// The smallest run.
    public var min: Double
    /// The largest run.
    public var max: Double

    /// Summarises `values` (all zero when empty).
    public init(_ values: [Double]) {
        let sorted = values.sorted()
        median = BenchStatistics.median(sorted: sorted)
        min = sorted.first ?? 0
        max = sorted.last ?? 0
    }
}

/// Pure statistics helpers used by every scenario.
public enum BenchStatistics {
    /// The median of already sorted values (mean of the middle two for an even count; 0 when empty).
    public static func median(sorted: [Double]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The `p`-th percentile (0...100) by the nearest-rank method; 0 when empty.
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(sorted.count - 1, Swift.max(0, rank - 1))]
    }

    /// Seconds as a `Double` from a `Duration`.
    public static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}

/// What a figure has to reach.
public enum BenchGoal: Sendable, Hashable {
    /// The figure's median must be at most the value (in the figure's unit).
    case atMost(Double)
    /// The figure's median must be at least the value.
    case atLeast(Double)
    /// The ratio to the baseline must be at most the value.
    case ratioAtMost(Double)
    /// The ratio to the baseline must be at least the value.
    case ratioAtLeast(Double)
    /// Both goals must hold.
    indirect case both(BenchGoal, BenchGoal)
    /// No goal: informational.
    case none

    /// Whether `median` with `ratio` meets the goal (nil when there is no goal).
    public func isMet(median: Double, ratio: Double?) -> Bool? {
        switch self {
        case .atMost(let limit): return median <= limit
        case .atLeast(let floor): return median >= floor
        case .ratioAtMost(let limit): return ratio.map { $0 <= limit } ?? false
        case .ratioAtLeast(let floor): return ratio.map { $0 >= floor } ?? false
        case .both(let first, let second):
            guard let a = first.isMet(median: median, ratio: ratio), let b = second.isMet(median: median, ratio: ratio)
            else { return nil }
            return a && b
        case .none: return nil
        }
    }

    /// The goal as people read it, e.g. `≤ 1 ms` or `ratio ≥ 0.5×`.
    public func text(unit: String) -> String {
        switch self {
        case .atMost(let limit): return "≤ \(BenchFormat.number(limit)) \(unit)"
        case .atLeast(let floor): return "≥ \(BenchFormat.number(floor)) \(unit)"
        case .ratioAtMost(let limit): return "ratio ≤ \(BenchFormat.number(limit))×"
        case .ratioAtLeast(let floor): return "ratio ≥ \(BenchFormat.number(floor))×"
        case .both(let first, let second): return "\(first.text(unit: unit)), \(second.text(unit: unit))"
        case .none: return "—"
        }
    }
}

/// The baseline a figure is compared with, measured in the same run.
public struct BenchBaseline: Sendable, Hashable {
    /// What the baseline is, e.g. `one SQLite insert`.
    public var name: String
    /// Its unit (the figure's unit).
    public var unit: String
    /// Its summary over the same runs.
    public var summary: BenchSummary

    /// Builds a baseline.
    public init(name: String, unit: String, summary: BenchSummary) {
        self.name = name
        self.unit = unit
        self.summary = summary
    }
}

/// One measured figure of a scenario, with its baseline, ratio and goal.
public struct BenchFigure: Sendable, Hashable {
    /// The scenario's name, e.g. `send`.
    public var scenario: String
    /// The figure, e.g. `send → visible p99`.
    public var figure: String
    /// The unit, e.g. `ms` or `ops/s`.
    public var unit: String
    /// The figure over the runs.
    public var summary: BenchSummary
    /// The baseline, when the scenario has one.
    public var baseline: BenchBaseline?
    /// The goal.
    public var goal: BenchGoal
    /// Free text shown with the figure (sizes, caveats).
    public var note: String?

    /// Builds a figure.
    public init(scenario: String, figure: String, unit: String, summary: BenchSummary, baseline: BenchBaseline? = nil,
                goal: BenchGoal = .none, note: String? = nil) {
        self.scenario = scenario
        self.figure = figure
        self.unit = unit
        self.summary = summary
        self.baseline = baseline
        self.goal = goal
        self.note = note
    }

    /// The figure's median divided by the baseline's median (nil without a usable baseline).
    public var ratio: Double? {
        guard let baseline, baseline.summary.median != 0 else { return nil }
        return summary.median / baseline.summary.median
    }

    /// Whether the goal is met (nil when there is no goal).
    public var met: Bool? { goal.isMet(median: summary.median, ratio: ratio) }
}

/// The machine a run happened on.
public struct BenchMachine: Sendable, Hashable {
    /// Logical cores available to the process.
    public var cores: Int
    /// The CPU model from /proc/cpuinfo (`unknown` elsewhere).
    public var cpu: String

    /// Builds a machine description.
    public init(cores: Int, cpu: String) {
        self.cores = cores
        self.cpu = cpu
    }

    /// This machine.
    public static func current() -> BenchMachine {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        return BenchMachine(cores: ProcessInfo.processInfo.activeProcessorCount, cpu: cpuModel(fromCPUInfo: info))
    }

    /// The first `model name` value of a /proc/cpuinfo text, or `unknown`.
    public static func cpuModel(fromCPUInfo text: String) -> String {
        for line in text.split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") {
                return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return "unknown"
    }
}

/// A complete run: what was asked, where, and every figure.
public struct BenchReport: Sendable {
    /// The command line.
    public var command: String
    /// When the run started.
    public var date: Date
    /// Where it ran.
    public var machine: BenchMachine
    /// Every figure, in scenario order.
    public var figures: [BenchFigure]
    /// Remarks such as reduced sizes under `--quick`.
    public var notes: [String]
    /// Scenarios asked for that do not exist yet.
    public var notBuilt: [String]

    /// Builds a report.
    public init(command: String, date: Date, machine: BenchMachine, figures: [BenchFigure], notes: [String] = [],
                notBuilt: [String] = []) {
        self.command = command
        self.date = date
        self.machine = machine
        self.figures = figures
        self.notes = notes
        self.notBuilt = notBuilt
    }
}
