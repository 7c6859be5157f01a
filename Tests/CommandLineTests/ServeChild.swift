import Foundation
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// A `switchboard serve ...` child process in a temporary folder of its own, as a user starts one.
final class ServeChild: @unchecked Sendable {
    /// The temporary folder (the server's data directory is `data` in it).
    let root: URL
    /// The running process.
    private let process: Process
    /// Its standard output, line by line.
    private let output: OutputLines
    /// The URL from its `listening on` line.
    let url: URL

    /// Starts `switchboard serve <arguments> --data-dir <root>/data` and waits for its `listening on` line.
    static func start(_ arguments: [String]) async throws -> ServeChild {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-cli-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let process = Process()
        process.executableURL = try SwitchboardExecutable.locate()
        process.arguments = ["serve"] + arguments + ["--data-dir", root.appendingPathComponent("data").path]
        let stdout = Pipe()
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let output = OutputLines(stdout.fileHandleForReading)
        try process.run()
        do {
            let line = try await firstLine(of: output, from: process, timeout: .seconds(90))
            guard line.hasPrefix("listening on "), let url = URL(string: String(line.dropFirst("listening on ".count))) else {
                throw TestSetupError("serve \(arguments.first ?? ""): unexpected first line '\(line)'")
            }
            return ServeChild(root: root, process: process, output: output, url: url)
        } catch {
            await Self.stop(process)
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// The first line `process` writes, failing as soon as it exits (a refused option, say) instead of at the
    /// timeout.
    private static func firstLine(of output: OutputLines, from process: Process, timeout: Duration) async throws -> String {
        let deadline = TestTime.deadline(after: timeout)
        while ContinuousClock.now < deadline {
            if let line = output.allLines().first { return line }
            // A server that exits has failed, whatever it printed.
            if !process.isRunning {
                throw TestSetupError("serve exited with status \(process.terminationStatus) before it was ready")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestSetupError("no listening line within \(timeout)")
    }

    private init(root: URL, process: Process, output: OutputLines, url: URL) {
        self.root = root
        self.process = process
        self.output = output
        self.url = url
    }

    /// SIGTERMs the server (it stops its private PostgreSQL), waits for it and removes the folder.
    func stop() async {
        await Self.stop(process)
        try? FileManager.default.removeItem(at: root)
    }

    /// SIGTERMs `process` and waits for it to exit, off the cooperative pool.
    private static func stop(_ process: Process) async {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        _ = try? await offCooperativePool { process.waitUntilExit() }
    }

    /// Starts a server with `arguments`, runs `body` with it and stops it, whether `body` throws or not.
    static func with<T>(_ arguments: [String], _ body: (ServeChild) async throws -> T) async throws -> T {
        let child = try await start(arguments)
        return try await withCleanup { try await body(child) } cleanup: { await child.stop() }
    }
}
