import Foundation
import TestSupport
import SocketIOServer
import SwitchboardCore

/// A Socket-style reference server in-process, on a free loopback port, in a fresh directory under `/tmp`.
struct SocketIOTestServer: Sendable {
    let server: SocketIOServer
    let root: URL
    let baseURL: URL

    /// Starts the server (after `configure`); fails (never skips) when that is impossible.
    static func start(configure: (inout SocketIOServerConfiguration) -> Void = { _ in }) async throws -> SocketIOTestServer {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-sio-adapter-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var configuration = SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("server"))
        configure(&configuration)
        let server = SocketIOServer(configuration: configuration)
        let port = try await server.start()
        return SocketIOTestServer(server: server, root: root, baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// Runs `body` against a fresh server, stopping it and removing its directory afterwards.
    static func with(configure: (inout SocketIOServerConfiguration) -> Void = { _ in },
                     _ body: (SocketIOTestServer) async throws -> Void) async throws {
        let server = try await start(configure: configure)
        try await withCleanup({ try await body(server) }, cleanup: { await server.stop() })
    }

    /// Stops the server and removes the directory.
    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }
}

/// Waits until `condition` holds or `timeout` passes; returns whether it held.
func waitUntil(timeout: Duration = .seconds(10), _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = TestTime.deadline(after: timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
