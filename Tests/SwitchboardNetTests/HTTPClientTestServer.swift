import Foundation
import SwitchboardCore
import Testing
import TestSupport
@testable import SwitchboardNet

/// The HTTPClient tests, one serialized suite (timing assertions stay meaningful on small machines).
@Suite("HTTPClient", .serialized)
struct HTTPClientTests {}

/// The Python fixture server (`Fixtures/http_test_server.py`) in a child process that this object owns.
///
/// `stop()` terminates it; `withHTTPTestServer` calls it in every case, `deinit` too, and the server also exits
/// when its stdin (a pipe this object holds) closes, so it cannot outlive a crashed test run.
final class HTTPClientTestServer: @unchecked Sendable {
    /// Why the server could not start.
    struct StartError: Error, CustomStringConvertible {
        /// What went wrong.
        let description: String
    }

    /// `http://127.0.0.1:PORT` (or `https://` for a TLS server).
    let baseURL: URL
    /// The self-signed certificate a TLS server uses (a CA file to trust), nil for plain HTTP.
    let certificatePath: String?
    /// The port.
    var port: Int { baseURL.port ?? 0 }

    private let process: Process
    private let stdin: Pipe
    private let lock = NSLock()
    private var stopped = false

    /// The fixture script, found next to this file.
    static let scriptPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/http_test_server.py").path

    /// Starts the server (with a fresh self-signed certificate when `tls`) and waits for its address.
    init(tls: Bool = false) throws {
        let python = ProcessInfo.processInfo.environment["SWITCHBOARD_PYTHON"].flatMap { $0.isEmpty ? nil : $0 } ?? "python3"
        let process = Process()
        var arguments = [Self.scriptPath] + (tls ? ["--tls"] : [])
        if python.contains("/") {
            process.executableURL = URL(fileURLWithPath: python)
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            arguments.insert(python, at: 0)
        }
        process.arguments = arguments
        let stdout = Pipe()
        let stdin = Pipe()
        process.standardOutput = stdout
        process.standardInput = stdin
        try process.run()
        self.process = process
        self.stdin = stdin

        // Give up (and so see EOF below) if the server has not announced itself in 20 s.
        let watchdog = DispatchWorkItem { [process] in if process.isRunning { process.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 20, execute: watchdog)
        defer { watchdog.cancel() }

        do {
            let reader = stdout.fileHandleForReading
            let first = try Self.readLine(reader)
            guard first.hasPrefix("listening on "), let url = URL(string: String(first.dropFirst("listening on ".count))) else {
                throw StartError(description: "unexpected first line from the test server: \(first)")
            }
            baseURL = url
            if tls {
                let second = try Self.readLine(reader)
                guard second.hasPrefix("certificate ") else {
                    throw StartError(description: "unexpected second line from the test server: \(second)")
                }
                certificatePath = String(second.dropFirst("certificate ".count))
            } else {
                certificatePath = nil
            }
        } catch {
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
            throw error
        }
    }

    deinit { stop() }

    /// The URL of `pathAndQuery` (for example `/stream?lines=3`) on this server.
    func url(_ pathAndQuery: String) -> URL {
        URL(string: baseURL.absoluteString + pathAndQuery)!
    }

    /// Stops the server and waits for it to exit; later calls do nothing.
    ///
    /// Closing its stdin makes it exit; SIGTERM follows, and SIGKILL if it is still there after 3 seconds.
    func stop() {
        let alreadyStopped = lock.withLock {
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        try? stdin.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Reads one line (bounded at 4 KiB); throws at EOF.
    private static func readLine(_ handle: FileHandle) throws -> String {
        var bytes: [UInt8] = []
        while bytes.count < 4096 {
            guard let byte = try handle.read(upToCount: 1)?.first else {
                throw StartError(description: "the test server exited before announcing its address")
            }
            if byte == 0x0A { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Runs `body` with a fresh fixture server and stops the server afterwards, whatever happens.
func withHTTPTestServer<T>(tls: Bool = false, _ body: (HTTPClientTestServer) async throws -> T) async throws -> T {
    // Starting waits for the Python server's port line: off the cooperative pool, which the other tests share.
    let server = try await offCooperativePool { try HTTPClientTestServer(tls: tls) }
    defer { server.stop() }
    return try await body(server)
}

/// Test helpers around the fixture's endpoints.
extension HTTPClient {
    /// The server's counters from `/connections`.
    func serverStats(_ server: HTTPClientTestServer) async throws -> [String: Int] {
        let response = try await send(HTTPRequest(url: server.url("/connections"))).ensureSuccess()
        return try JSONDecoder().decode([String: Int].self, from: response.body)
    }
}

/// Decodes a JSON object body.
func jsonObject(_ data: Data) throws -> [String: Any] {
    guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
        throw HTTPClientTestServer.StartError(description: "not a JSON object")
    }
    return object
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes; returns whether it held.
func eventually(within timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + TestTime.limit(timeout)
    while clock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// Lowercase hex SHA-256, from the core's digest.
func sha256Hex(_ data: Data) -> String { Digest.sha256Hex([UInt8](data)) }
