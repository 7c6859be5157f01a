import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// `memory`: peak RSS (VmHWM) of a child process that opens a huge stored conversation and scrolls 20 pages,
/// vs the same with 1,000 messages.
public enum MemoryScenario {
    /// Pages scrolled back in the probe.
    static let pages = 20
    /// The conversation the prepared stores hold.
    static let conversation: ConversationID = "bench-memory"

    /// Runs the scenario: prepares both stores here, then measures each in its own child process.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let small = options.size(quick: 1000, full: 1000, floor: 5)
        let large = options.size(quick: 100_000, full: 1_000_000, floor: 10)
        let directory = try BenchDirectory("memory")
        defer { directory.remove() }
        let smallPath = directory.path("small.sqlite"), largePath = directory.path("large.sqlite")
        try await prepare(path: smallPath, count: small)
        try await prepare(path: largePath, count: large)
        let executable = options.executable ?? "/proc/self/exe"
        var smallPeaks: [Double] = [], largePeaks: [Double] = []
        for _ in 0..<options.runs {
            smallPeaks.append(try runProbe(executable: executable, store: smallPath) / 1024)
            largePeaks.append(try runProbe(executable: executable, store: largePath) / 1024)
        }
        var notes: [String] = []
        if options.quick && options.scale == 1 { notes.append("memory --quick: \(large) messages instead of 1,000,000") }
        return ([
            BenchFigure(scenario: "memory", figure: "peak RSS, \(large) msgs open, \(pages) pages scrolled", unit: "MB",
                        summary: BenchSummary(largePeaks),
                        baseline: BenchBaseline(name: "same with \(small) msgs", unit: "MB", summary: BenchSummary(smallPeaks)),
                        goal: .both(.atMost(60), .ratioAtMost(1.2)),
                        note: "VmHWM of a child `switchboard bench memory-probe` per run; history in the child's SQLite store "
                            + "(prepared by the parent); ratio ≤ 1.2 is our reading of 'growth with the window, not the history'"),
        ], notes)
    }

    /// Writes `count` received messages of `conversation` into a new store at `path`, in batches.
    static func prepare(path: String, count: Int) async throws {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        for chunk in stride(from: 0, to: count, by: 10_000) {
            try await store.write { tx in
                for index in chunk..<min(count, chunk + 10_000) {
                    try tx.upsertMessage(Message(
                        id: MessageID(String(format: "m-%09d", index)), conversation: conversation, sender: "bob",
                        content: MessageContent(text: "stored history message number \(index) with some ordinary text"),
                        timestamp: start.addingTimeInterval(Double(index)), hasServerTimestamp: true,
                        delivery: .received, isOutgoing: false))
                }
            }
        }
    }

    /// Starts `executable bench memory-probe --store PATH` and returns the VmHWM it reports, in kB.
    static func runProbe(executable: String, store: String) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["bench", "memory-probe", "--store", store, "--pages", String(pages)]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0,
              let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let peak = object["vmhwm_kb"] as? Double ?? (object["vmhwm_kb"] as? Int).map(Double.init)
        else { throw BenchError("memory probe failed (status \(process.terminationStatus)): \(text)") }
        return peak
    }

    /// The child's side: opens the store's conversation on an empty memory backend, scrolls `pages` pages back and
    /// returns one JSON line with VmHWM (kB), the window size and how many messages paging added.
    public static func probe(store path: String, pages: Int) async throws -> String {
        let (window, loaded) = try await withBenchClient(conversation, store: path) { _, handle in
            var loaded = 0
            for _ in 0..<pages { loaded += try await handle.loadOlder() }
            return (try await handle.timeline().count, loaded)
        }
        return "{\"vmhwm_kb\":\(peakResidentKilobytes() ?? -1),\"window\":\(window),\"loaded\":\(loaded)}"
    }

    /// VmHWM from /proc/self/status in kB, nil where unavailable.
    public static func peakResidentKilobytes() -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        return statusValue(status, key: "VmHWM")
    }

    /// The number of kB on the `key:` line of a /proc status text.
    static func statusValue(_ status: String, key: String) -> Int? {
        for line in status.split(separator: "\n") where line.hasPrefix(key + ":") {
            return Int(line.dropFirst(key.count + 1).split(whereSeparator: \.isWhitespace).first ?? "")
        }
        return nil
    }
}
