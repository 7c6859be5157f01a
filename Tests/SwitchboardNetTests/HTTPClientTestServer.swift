import Foundation
import Testing
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
    let server = try HTTPClientTestServer(tls: tls)
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
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}

/// SHA-256 in plain Swift (Foundation on Linux has none), lowercase hex.
func sha256Hex(_ data: Data) -> String {
    let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]
    var h: [UInt32] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]
    var message = [UInt8](data)
    let bitLength = UInt64(message.count) * 8
    message.append(0x80)
    while message.count % 64 != 56 { message.append(0) }
    for shift in stride(from: 56, through: 0, by: -8) { message.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
    func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 - n)) }
    var w = [UInt32](repeating: 0, count: 64)
    for chunk in stride(from: 0, to: message.count, by: 64) {
        for i in 0..<16 {
            let j = chunk + i * 4
            w[i] = UInt32(message[j]) << 24 | UInt32(message[j + 1]) << 16 | UInt32(message[j + 2]) << 8 | UInt32(message[j + 3])
        }
        for i in 16..<64 {
            let s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3)
            let s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10)
            w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
        }
        var (a, b, c, d, e, f, g, hh) = (h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7])
        for i in 0..<64 {
            let s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)
            let t1 = hh &+ s1 &+ ((e & f) ^ (~e & g)) &+ k[i] &+ w[i]
            let s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)
            let t2 = s0 &+ ((a & b) ^ (a & c) ^ (b & c))
            (hh, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
        }
        h[0] &+= a; h[1] &+= b; h[2] &+= c; h[3] &+= d; h[4] &+= e; h[5] &+= f; h[6] &+= g; h[7] &+= hh
    }
    return h.map { word in
        let hex = String(word, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }.joined()
}
