import Dispatch
import Foundation
import SwitchboardCore

/// A failure to set up a test (missing tool, fixture, or environment).
public struct TestSetupError: Error, CustomStringConvertible {
    /// What is missing and how to provide it.
    public let description: String
    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}

/// The Python interpreter the interop fixtures run on (the venv `make deps` creates).
public enum TestPython {
    /// The interpreter named by `SWITCHBOARD_PYTHON`; a missing one is a failure naming `packages`, never a skip.
    public static func interpreter(needing packages: String) throws -> String {
        guard let path = ProcessInfo.processInfo.environment["SWITCHBOARD_PYTHON"], !path.isEmpty else {
            throw TestSetupError("""
                SWITCHBOARD_PYTHON is not set: these tests need a Python with \(packages). Run `make deps` once (it \
                creates .venv with them), then `SWITCHBOARD_PYTHON=$PWD/.venv/bin/python swift test`, or simply `make test`.
                """)
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestSetupError("SWITCHBOARD_PYTHON=\(path) is not an executable; run `make deps` to create the venv.")
        }
        return path
    }

    /// A file in the `Fixtures` folder next to the calling source file.
    public static func fixture(_ name: String, filePath: String = #filePath) -> String {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
            .appendingPathComponent(name).path
    }
}

/// What a finished child process printed and how it ended.
public struct ProcessResult: Sendable {
    /// The exit status (or the signal number when it was killed).
    public var status: Int32
    /// Everything it wrote to standard output.
    public var stdout: String
    /// Everything it wrote to standard error.
    public var stderr: String
}

/// Runs a child process to completion, collecting both outputs.
public enum ChildProcess {
    /// Runs `executable` with `arguments` (and `environment` on top of ours), feeding it `input` (else nothing) and
    /// terminating it after `timeout` when one is given; blocks until it exits.
    public static func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                           input: Data? = nil, timeout: Duration? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try process.run()
        let timer = DispatchWorkItem { if process.isRunning { process.terminate() } }
        if let timeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + Double(TestTime.limit(timeout).components.seconds), execute: timer)
        }
        if let input {
            let writer = Thread {
                stdin.fileHandleForWriting.write(input)
                try? stdin.fileHandleForWriting.close()
            }
            writer.start()
        }
        let errorData = Locked(Data())
        let errorReader = Thread { errorData.withLock { $0 = stderr.fileHandleForReading.readDataToEndOfFile() } }
        errorReader.start()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        timer.cancel()
        while errorReader.isExecuting || !errorReader.isFinished { Thread.sleep(forTimeInterval: 0.005) }
        return ProcessResult(status: process.terminationStatus, stdout: String(decoding: output, as: UTF8.self),
                             stderr: String(decoding: errorData.withLock { $0 }, as: UTF8.self))
    }

    /// `run` on a thread of its own (`offCooperativePool`), so an async test holds no cooperative thread while the
    /// child runs.
    public static func runDetached(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                                   input: Data? = nil, timeout: Duration? = nil) async throws -> ProcessResult {
        try await offCooperativePool { try run(executable, arguments, environment: environment, input: input, timeout: timeout) }
    }
}

/// Runs blocking work (starting PostgreSQL, a child process) on a thread of its own and awaits it, so an async
/// test holds none of the cooperative pool's threads (one per core) while it waits: every other test of the
/// process would wait with it. A plain thread rather than a dispatch worker: on Linux Swift's executor runs its
/// jobs on dispatch's default-QoS workers too.
public func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Collects a pipe's output as lines while the process runs.
public final class OutputLines: @unchecked Sendable {
    /// Guards `buffer` and `lines`.
    private let lock = NSLock()
    /// Bytes after the last complete line.
    private var buffer = Data()
    /// The complete lines so far.
    private var lines: [String] = []

    /// Starts reading `handle`.
    public init(_ handle: FileHandle) {
        handle.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            if data.isEmpty { handle.readabilityHandler = nil; return }
            self.lock.withLock {
                self.buffer.append(data)
                while let newline = self.buffer.firstIndex(of: 0x0A) {
                    self.lines.append(String(decoding: self.buffer[..<newline], as: UTF8.self))
                    self.buffer.removeSubrange(...newline)
                }
            }
        }
    }

    /// Every complete line so far.
    public func allLines() -> [String] { lock.withLock { lines } }

    /// The first line, waiting up to `timeout`.
    public func firstLine(timeout: Duration) async throws -> String {
        let deadline = TestTime.deadline(after: timeout)
        while ContinuousClock.now < deadline {
            if let line = allLines().first { return line }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("no line on standard output within \(timeout)")
    }
}
