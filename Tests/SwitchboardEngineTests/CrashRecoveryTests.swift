#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing
import TestSupport

/// A `switchboard` child process whose standard output is read line by line as it arrives.
final class ChildProcess: @unchecked Sendable {
    private let process = Process()
    private let lock = NSLock()
    private var buffer = Data()
    private var collected: [String] = []
    private var reachedEOF = false
    let stderrURL: URL

    /// Starts the process; with `killAfterPrepared`, the reading thread SIGKILLs it the moment that many
    /// `prepared` lines have arrived (no scheduling delay of the test between the line and the kill).
    init(_ executable: URL, _ arguments: [String], stderr: URL, killAfterPrepared: Int? = nil) throws {
        stderrURL = stderr
        process.executableURL = executable
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        _ = FileManager.default.createFile(atPath: stderr.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: stderr)
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let reader = output.fileHandleForReading
        Thread.detachNewThread { [self] in
            var killed = false
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                append(chunk)
                if let limit = killAfterPrepared, !killed, prepared.count >= limit {
                    _ = Foundation.kill(pid, SIGKILL)
                    killed = true
                }
            }
            lock.withLock { reachedEOF = true }
        }
    }

    private func append(_ chunk: Data) {
        lock.withLock {
            buffer.append(chunk)
            while let newline = buffer.firstIndex(of: 0x0A) {
                collected.append(String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self))
                buffer.removeSubrange(buffer.startIndex...newline)
            }
        }
    }

    /// Complete lines read so far.
    var lines: [String] { lock.withLock { collected } }
    /// The IDs of the `prepared <MessageID>` lines read so far.
    var prepared: [MessageID] {
        lines.compactMap { $0.hasPrefix("prepared ") ? MessageID(String($0.dropFirst("prepared ".count))) : nil }
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }
    var status: Int32 { process.terminationStatus }
    var wasKilled: Bool { process.terminationReason == .uncaughtSignal }
    var stderrText: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// SIGKILL: no cleanup, no flush, exactly like a crash.
    func kill() { _ = Foundation.kill(pid, SIGKILL) }

    /// Waits for the process to end and its output to be drained; returns whether it did in time.
    func waitForExit(timeout: TimeInterval = 60) async -> Bool {
        await eventually(timeout: timeout) { !isRunning && lock.withLock { reachedEOF } }
    }

    /// Kills the process if it still runs (cleanup after a failed expectation).
    func terminateIfRunning() {
        if process.isRunning { kill() }
    }
}

@Suite("Crash recovery: SIGKILL the burst command, resume, nothing lost, nothing doubled", .serialized)
struct CrashRecoveryTests {
    struct Run {
        let directory: URL
        let executable: URL
        let scheme: IDScheme
        var store: String { directory.appendingPathComponent("store.sqlite").path }
        var journal: String { directory.appendingPathComponent("journal.jsonl").path }

        func spawn(_ extra: [String], label: String, killAfterPrepared: Int? = nil) throws -> ChildProcess {
            try ChildProcess(executable, ["burst", "--store", store, "--journal", journal, "--id-scheme", scheme.rawValue] + extra,
                             stderr: directory.appendingPathComponent("\(label).stderr"), killAfterPrepared: killAfterPrepared)
        }
    }

    /// A kill that landed after the child had already finished everything proves nothing.
    struct Inconclusive: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `body` in a fresh folder; an inconclusive run (the machine was too busy for the kill to land mid-way)
    /// is repeated in a new folder, at most three times.
    private static func withRun(_ scheme: IDScheme, _ body: (Run) async throws -> Void) async throws {
        let executable = try SwitchboardExecutable.locate()
        var reasons: [String] = []
        for _ in 0..<3 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-crash-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            do {
                try await body(Run(directory: directory, executable: executable, scheme: scheme))
                return
            } catch let inconclusive as Inconclusive {
                reasons.append(inconclusive.description)
            }
        }
        Issue.record("every attempt was inconclusive: \(reasons)")
    }

    /// Starts a burst and SIGKILLs it as soon as `after` prepared lines arrived; returns the IDs it printed.
    private static func burstAndKill(_ run: Run, count: Int, after: Int, label: String) async throws -> [MessageID] {
        let child = try run.spawn(["--count", String(count)], label: label, killAfterPrepared: after)
        defer { child.terminateIfRunning() }
        try #require(await child.waitForExit(), "\(label): did not end; stderr: \(child.stderrText)")
        guard child.wasKilled, !child.lines.contains("idle") else {
            throw Inconclusive(description: "\(label) finished (status \(child.status), \(child.prepared.count) prepared) before the kill")
        }
        try #require(child.prepared.count >= after,
                     "\(label) died after \(child.prepared.count) prepared lines; stderr: \(child.stderrText)")
        return child.prepared
    }

    /// Runs `burst --resume` to completion.
    private static func resume(_ run: Run) async throws {
        let child = try run.spawn(["--resume"], label: "resume")
        defer { child.terminateIfRunning() }
        try #require(await child.waitForExit(timeout: 60), "resume did not finish; stderr: \(child.stderrText)")
        #expect(!child.wasKilled)
        #expect(child.status == 0, "resume exited with \(child.status); stderr: \(child.stderrText)")
        #expect(child.lines.last == "idle", "resume printed \(child.lines.suffix(3))")
        #expect(child.prepared.isEmpty, "resume composed new messages")
    }

    /// What the killed processes left for the resume: the store's outbox, which must not be empty (else nothing is
    /// recovered and the run proves nothing).
    private static func expectWorkLeft(_ run: Run) async throws {
        let store = try SQLiteStore(path: run.store)
        defer { store.close() }
        let outbox = try await store.read { tx in try tx.outbox(backend: BackendID("memory")) }
        if outbox.isEmpty { throw Inconclusive(description: "the kill left nothing to resume") }
        let unfinished = try await store.read { tx in try tx.unfinishedMessages() }
        #expect(Set(unfinished.map(\.id)) == Set(outbox.map(\.messageID)), "outbox and unfinished messages disagree")
        #expect(unfinished.allSatisfy { $0.delivery == .pending || $0.delivery == .sending }, "\(unfinished.map(\.delivery))")
    }

    /// Opens what the processes left behind and checks: nothing lost, nothing doubled, nothing left over.
    private static func verify(_ run: Run, printed: [MessageID]) async throws {
        let conversation = ConversationID("burst")
        let backend = try MemoryBackend(scheme: run.scheme, journal: URL(fileURLWithPath: run.journal))
        let store = try SQLiteStore(path: run.store)
        defer { store.close() }
        let rows = backend.messages(in: conversation)
        let stored = try await store.read { tx in try tx.messages(in: conversation, before: nil, limit: 1_000_000) }
        let storedByID = Dictionary(uniqueKeysWithValues: stored.map { ($0.id, $0) })

        #expect(Set(printed).count == printed.count, "an ID was printed twice")
        let lost = printed.filter { storedByID[$0] == nil }
        #expect(lost.isEmpty, "\(lost.count) prepared messages are missing from the store, e.g. \(lost.prefix(3))")
        let unsent = printed.compactMap { storedByID[$0] }.filter { ![.sent, .delivered, .read].contains($0.delivery) }
        #expect(unsent.isEmpty, "\(unsent.count) prepared messages did not end published, e.g. \(unsent.prefix(3).map { "\($0.id) \($0.delivery)" })")

        var rowsPerKey: [MessageID: Int] = [:]
        for row in rows { rowsPerKey[row.idempotencyKey, default: 0] += 1 }
        let doubled = rowsPerKey.filter { $0.value > 1 }
        #expect(doubled.isEmpty, "on the backend more than once: \(doubled)")
        let missing = stored.filter { rowsPerKey[$0.id] == nil }
        #expect(missing.isEmpty, "\(missing.count) stored messages never reached the backend, e.g. \(missing.prefix(3).map { "\($0.id) \($0.delivery)" })")
        let strays = rows.filter { storedByID[$0.idempotencyKey] == nil }
        #expect(strays.isEmpty, "on the backend but not in the store: \(strays.map(\.idempotencyKey))")
        let garbled = rows.filter { row in storedByID[row.idempotencyKey].map { $0.content.text != row.text } ?? false }
        #expect(garbled.isEmpty, "texts differ between store and backend for \(garbled.map(\.idempotencyKey))")

        let outbox = try await store.read { tx in try tx.outbox(backend: backend.backendID) }
        #expect(outbox.isEmpty, "outbox still holds \(outbox.map { "\($0.messageID) \($0.status)" })")
        let unfinished = try await store.read { tx in try tx.unfinishedMessages() }
        #expect(unfinished.isEmpty, "unfinished: \(unfinished.map { "\($0.id) \($0.delivery)" })")
        #expect(stored.count >= printed.count)
        #expect(rows.count == stored.count)
    }

    @Test("kill mid-burst, resume: every prepared message is sent exactly once", arguments: IDScheme.allCases)
    func killOnceThenResume(scheme: IDScheme) async throws {
        try await Self.withRun(scheme) { run in
            let printed = try await Self.burstAndKill(run, count: 400, after: 60, label: "burst")
            try await Self.expectWorkLeft(run)
            try await Self.resume(run)
            try await Self.verify(run, printed: printed)
        }
    }

    @Test("kill twice (a second burst killed too), then resume: still exactly once", arguments: IDScheme.allCases)
    func killTwiceThenResume(scheme: IDScheme) async throws {
        try await Self.withRun(scheme) { run in
            var printed = try await Self.burstAndKill(run, count: 400, after: 60, label: "burst-1")
            printed += try await Self.burstAndKill(run, count: 50, after: 10, label: "burst-2")
            try await Self.expectWorkLeft(run)
            try await Self.resume(run)
            try await Self.verify(run, printed: printed)
        }
    }
}
