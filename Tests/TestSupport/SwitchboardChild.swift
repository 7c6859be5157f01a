import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A `switchboard` child process a test starts and drives, its standard output read line by line.
public struct SwitchboardChild: @unchecked Sendable {
    /// The running process.
    public let process: Process
    /// Its standard output, line by line.
    public let lines: OutputLines

    /// Starts `switchboard <arguments>` with `environment` over the test's own; standard error goes to
    /// `standardError` (discarded unless given).
    public static func start(_ arguments: [String], environment: [String: String] = [:],
                             standardError: FileHandle = .nullDevice) throws -> SwitchboardChild {
        let process = Process()
        process.executableURL = try SwitchboardExecutable.locate()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = standardError
        let lines = OutputLines(output.fileHandleForReading)
        try process.run()
        return SwitchboardChild(process: process, lines: lines)
    }

    /// Waits for the first line, which must be `listening on http://127.0.0.1:PORT`; returns the line and the URL.
    public func listening(timeout: Duration = .seconds(60)) async throws -> (line: String, url: URL) {
        let first = try await lines.firstLine(timeout: timeout)
        guard let match = first.wholeMatch(of: /listening on (http:\/\/127\.0\.0\.1:\d+)/),
              let url = URL(string: String(match.1)) else {
            throw TestSetupError("expected 'listening on http://127.0.0.1:PORT', got '\(first)'")
        }
        return (first, url)
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit; true when it did.
    public func terminate(within timeout: Duration = .seconds(30)) async -> Bool {
        kill(process.processIdentifier, SIGTERM)
        return await conditionHolds(within: timeout) { !process.isRunning }
    }

    /// SIGKILLs the process if it still runs and waits for it (for a `defer` or a failed wait).
    public func killIfRunning() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
