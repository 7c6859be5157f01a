import Dispatch
import Foundation
import Testing
import SwitchboardNet
import TestSupport
import SwitchboardCore

#if canImport(Glibc)
import Glibc
#endif

/// The parent of every suite that opens sockets, starts processes or counts threads: serialised, so the leak
/// test's counts are not disturbed by our own other network tests.
@Suite(.serialized)
enum NetworkSuites {}

/// Fixtures, tools and `/proc` probes shared by the network tests.
enum NetTest {
    /// Whether `operation` answers true within `timeout` (false when the time runs out first).
    static func answers(within timeout: Duration, _ operation: @escaping @Sendable () async -> Bool) async throws -> Bool {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask { await operation() }
            group.addTask {
                try await Task.sleep(for: TestTime.limit(timeout))
                return false
            }
            let first = try await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Whether this process runs only the network suites (`SWITCHBOARD_ISOLATED=1`, as `make test`'s second pass
    /// does): thread and descriptor counts are process-wide, so they are only meaningful without other suites
    /// (Supabase servers, PostgreSQL pools) running in parallel.
    static let isIsolated = ProcessInfo.processInfo.environment["SWITCHBOARD_ISOLATED"] == "1"

    /// Why a process-wide count check did not run.
    static let isolationReason: Comment = """
        counts process-wide threads and descriptors: runs in a process of its own — `make test` does that, or \
        `SWITCHBOARD_ISOLATED=1 swift test --filter NetworkSuites`
        """

    /// A fixture file next to this source file.
    static func fixture(_ name: String, filePath: String = #filePath) -> String {
        URL(fileURLWithPath: filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
            .appendingPathComponent(name).path
    }

    /// The Python interpreter with `websockets` installed, from `SWITCHBOARD_PYTHON`.
    static func python() throws -> String { try TestPython.interpreter(needing: "websockets==15.0.1") }

    /// The `curl` command.
    static let curl = "/usr/bin/curl"

    /// Entries in `/proc/self/task` (threads of this process).
    static func threadCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task").count) ?? -1
    }

    /// Entries in `/proc/self/fd` (open file descriptors).
    static func descriptorCount() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    /// The names (`comm`) of this process's threads.
    static func threadNames() -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// `VmSize` from `/proc/self/status`, in KiB (an unjoined thread keeps its stack mapped).
    static func virtualMemoryKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmSize:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    /// Threads inside civetweb's WebSocket code: client threads (`ws-clnt`) and workers in the read loop (`wsock`);
    /// civetweb prefixes its thread names with `civetweb-` and Linux cuts them to 15 characters.
    static func webSocketThreadCount() -> Int {
        threadNames().filter { $0.hasPrefix("civetweb-ws") }.count
    }

    /// Descriptors of this process that are TCP sockets with `port` at either end.
    static func descriptors(onPort port: Int) -> Int {
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let columns = line.split(separator: " ", omittingEmptySubsequences: true)
                guard columns.count > 9 else { continue }
                let ports = [columns[1], columns[2]].compactMap { $0.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
                if ports.contains(port) { inodes.insert(String(columns[9])) }
            }
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)"),
                  target.hasPrefix("socket:[") else { return false }
            return inodes.contains(String(target.dropFirst(8).dropLast()))
        }.count
    }

    /// Starts `server`, runs `body` with its port, and stops it whether `body` returns or throws.
    static func serving<T>(_ server: HTTPServer, _ body: (Int) async throws -> T) async throws -> T {
        let port = try server.start()
        do {
            let result = try await body(port)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }

    /// Runs blocking work on a Dispatch thread so the (small) cooperative pool stays free for the server.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }

    /// `curl` with `arguments`, to completion (at most 30 s).
    static func curl(_ arguments: [String], stdin: Data? = nil) async throws -> ChildProcess.Result {
        let process = try ChildProcess(curl, ["--silent", "--show-error", "--max-time", "20"] + arguments, stdin: stdin)
        return try await process.result(timeout: .seconds(30))
    }
}

/// A child process with captured output, terminated and reaped in every case (`stop`, or `deinit`).
final class ChildProcess: @unchecked Sendable {
    /// How a finished process ended and what it printed.
    struct Result: Sendable {
        var status: Int32
        var stdout: Data
        var stderr: String
        var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    private struct Output {
        var stdout = Data()
        var stderr = Data()
        var stdoutClosed = false
        var stderrClosed = false
        var exitStatus: Int32?
    }

    /// Captured output, shared with the pipe and termination handlers.
    private final class Capture: Sendable {
        let state = Locked(Output())
        let changed = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))

        func update(_ change: (inout Output) -> Void) {
            state.withLock { change(&$0) }
            changed.continuation.yield()
        }
    }

    // `Process` is not Sendable; it is only touched under `lock`.
    private let process = Process()
    private let stdinPipe = Pipe()
    private let lock = NSLock()
    private let capture = Capture()

    /// Launches `executable` with `arguments`; `stdin` (if any) is written and closed.
    init(_ executable: String, _ arguments: [String], stdin: Data? = nil) throws {
        let stdoutPipe = Pipe(), stderrPipe = Pipe()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = stdinPipe
        process.standardOutput = stdoutPipe
        process.standardError = stderrPipe
        let capture = capture
        process.terminationHandler = { process in
            let status = process.terminationStatus
            capture.update { $0.exitStatus = status }
        }
        try process.run()
        // Blocking reads on Dispatch threads: `readabilityHandler` sometimes misses the end of file on Linux.
        Self.drain(stdoutPipe.fileHandleForReading, into: capture) { $0.stdout.append($1) } closed: { $0.stdoutClosed = true }
        Self.drain(stderrPipe.fileHandleForReading, into: capture) { $0.stderr.append($1) } closed: { $0.stderrClosed = true }
        if let stdin {
            stdinPipe.fileHandleForWriting.write(stdin)
        }
        if stdin != nil { try? stdinPipe.fileHandleForWriting.close() }
    }

    deinit {
        stop()
    }

    private static func drain(_ handle: FileHandle, into capture: Capture,
                              append: @escaping @Sendable (inout Output, Data) -> Void,
                              closed: @escaping @Sendable (inout Output) -> Void) {
        DispatchQueue.global().async {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(handle.fileDescriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                let data = Data(buffer[0..<count])
                capture.update { append(&$0, data) }
            }
            try? handle.close()
            capture.update(closed)
        }
    }

    /// Everything printed on stdout so far.
    var stdoutText: String { capture.state.withLock { String(decoding: $0.stdout, as: UTF8.self) } }

    /// Everything printed on stderr so far.
    var stderrText: String { capture.state.withLock { String(decoding: $0.stderr, as: UTF8.self) } }

    /// Waits until `condition(stdout, exited)` holds, or throws after `timeout`.
    func wait(for what: String, timeout: Duration, _ condition: @escaping @Sendable (String, Bool) -> Bool) async throws {
        let deadline = TestTime.deadline(after: timeout)
        let capture = capture
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                capture.changed.continuation.yield()
            }
        }
        defer { ticker.cancel() }
        var changes = capture.changed.stream.makeAsyncIterator()
        while true {
            let (text, exited) = capture.state.withLock {
                (String(decoding: $0.stdout, as: UTF8.self), $0.exitStatus != nil && $0.stdoutClosed)
            }
            if condition(text, exited) { return }
            guard ContinuousClock.now < deadline else {
                throw TestSetupError("timed out waiting for \(what); stdout: \(text) stderr: \(stderrText)")
            }
            _ = await changes.next()
        }
    }

    /// Waits for a stdout line starting with `prefix` and returns it.
    func line(startingWith prefix: String, timeout: Duration = .seconds(20)) async throws -> String {
        try await wait(for: "a line starting with \(prefix.debugDescription)", timeout: timeout) { text, exited in
            text.split(separator: "\n").contains { $0.hasPrefix(prefix) } || exited
        }
        guard let line = stdoutText.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else {
            throw TestSetupError("process exited without printing \(prefix.debugDescription); stdout: \(stdoutText) stderr: \(stderrText)")
        }
        return String(line)
    }

    /// Waits for exit and all output, then returns it; terminates the process after `timeout`.
    func result(timeout: Duration) async throws -> Result {
        let capture = capture
        do {
            try await wait(for: "process exit", timeout: timeout) { _, _ in
                capture.state.withLock { $0.exitStatus != nil && $0.stdoutClosed && $0.stderrClosed }
            }
        } catch {
            stop()
            throw error
        }
        lock.withLock { try? stdinPipe.fileHandleForWriting.close() }
        return capture.state.withLock {
            Result(status: $0.exitStatus ?? -1, stdout: $0.stdout, stderr: String(decoding: $0.stderr, as: UTF8.self))
        }
    }

    /// Closes stdin, kills the process if still running, and reaps it.
    ///
    /// SIGKILL, because children started from a Dispatch thread inherit its signal mask, in which SIGTERM is
    /// blocked: `Process.terminate()` would leave them running.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        try? stdinPipe.fileHandleForWriting.close()
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }
}

/// A plain loopback TCP socket for sending bytes no well-behaved client would send.
final class RawSocket: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// Connects to `127.0.0.1:port`.
    static func connect(port: Int) async throws -> RawSocket {
        try await NetTest.blocking {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard descriptor >= 0 else { throw TestSetupError("socket() failed: \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard result == 0 else {
                Glibc.close(descriptor)
                throw TestSetupError("connect() failed: \(errno)")
            }
            return RawSocket(descriptor: descriptor)
        }
    }

    /// Writes all of `data`.
    func send(_ data: Data) async throws {
        try await NetTest.blocking { [descriptor] in
            var offset = 0
            while offset < data.count {
                let sent = data.withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL))
                }
                guard sent > 0 else { throw TestSetupError("send() failed: \(errno)") }
                offset += sent
            }
        }
    }

    /// Writes `text` as UTF-8.
    func send(_ text: String) async throws {
        try await send(Data(text.utf8))
    }

    /// Reads until the peer closes, `condition` holds for what was read, or `timeout` passes.
    /// Returns the bytes and whether the peer closed.
    func receive(timeout: Duration, until condition: @escaping @Sendable (Data) -> Bool = { _ in false })
        async throws -> (data: Data, closed: Bool) {
        try await NetTest.blocking { [descriptor] in
            let deadline = TestTime.deadline(after: timeout)
            var received = Data()
            var buffer = [UInt8](repeating: 0, count: 65536)
            while ContinuousClock.now < deadline {
                var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&poller, 1, 50)
                guard ready > 0 else { continue }
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count <= 0 { return (received, true) }
                received.append(contentsOf: buffer[0..<count])
                if condition(received) { return (received, false) }
            }
            return (received, false)
        }
    }
}
