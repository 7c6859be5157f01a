import Foundation

/// How big and how often a scenario runs.
public struct BenchOptions: Sendable, Hashable {
    /// Smaller sizes so `bench all --quick` finishes in minutes.
    public var quick: Bool
    /// Repeated runs per figure (each figure is the median of these).
    public var runs: Int
    /// Multiplies every workload size (tests use a tiny factor; 1 for real runs).
    public var scale: Double
    /// The `switchboard` executable the memory scenario starts as a child (nil: /proc/self/exe).
    public var executable: String?

    /// Builds options; `runs` defaults to 3 quick, 5 full.
    public init(quick: Bool, runs: Int? = nil, scale: Double = 1, executable: String? = nil) {
        self.quick = quick
        self.runs = max(1, runs ?? (quick ? 3 : 5))
        self.scale = scale
        self.executable = executable
    }

    /// `full` or `quick` scaled by `scale`, at least `floor`.
    public func size(quick quickSize: Int, full fullSize: Int, floor: Int = 1) -> Int {
        max(floor, Int((Double(quick ? quickSize : fullSize) * scale).rounded()))
    }
}

/// Every scenario `bench` knows, built or not.
public enum BenchScenario: String, CaseIterable, Sendable {
    /// Optimistic send → visible in the timeline.
    case send
    /// ID-map writes and lookups.
    case idmap
    /// Reconciling triplicated deliveries.
    case dedupe
    /// Delta sync with a small vs a huge history.
    case catchup
    /// Peak RSS with a huge conversation open.
    case memory
    /// Supabase-like send → ack and → own realtime echo vs a bare libcurl POST and the official Python client.
    case supabase
    /// XMTP-like → Supabase-like bridging: messages/s and end-to-end latency vs the slower backend's raw ingest.
    case bridge
    /// Migration from the XMTP-like node into the Supabase-like server vs PostgreSQL COPY of the same rows.
    case migrate

    /// Whether the scenario is implemented.
    public var isBuilt: Bool {
        switch self {
        case .send, .idmap, .dedupe, .catchup, .memory, .supabase, .bridge, .migrate: return true
        }
    }

    /// Runs the scenario; returns its figures and any notes.
    public func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        switch self {
        case .send: return try await SendScenario.run(options)
        case .idmap: return try await IDMapScenario.run(options)
        case .dedupe: return try await DedupeScenario.run(options)
        case .catchup: return try await CatchupScenario.run(options)
        case .memory: return try await MemoryScenario.run(options)
        case .supabase: return try await SupabaseScenario.run(options)
        case .bridge: return try await BridgeScenario.run(options)
        case .migrate: return try await MigrateScenario.run(options)
        }
    }
}

/// A private temporary folder removed by `remove()`.
struct BenchDirectory {
    /// Its path.
    let url: URL

    /// Creates a fresh folder under the system temporary directory.
    init(_ label: String) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the folder.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Deletes the folder and everything in it.
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Measures `body` with the continuous clock, in seconds.
func measure<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let value = try await body()
    return (value, BenchStatistics.seconds(clock.now - start))
}

/// A failure inside a scenario (a check that did not hold).
public struct BenchError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String
    /// Wraps a message.
    public init(_ description: String) { self.description = description }
}
