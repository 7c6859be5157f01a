import Foundation
import SwitchboardNet

/// A reference server a `ServerHarness` can start on a free port and stop.
public protocol HarnessServer: Sendable {
    /// Starts listening; returns the port.
    func start() async throws -> Int
    /// Stops listening and releases everything.
    func stop() async
}

/// One running reference server plus an HTTP client; `run` starts it, runs the body and always stops it.
public final class ServerHarness<Server: HarnessServer>: Sendable {
    /// The server.
    public let server: Server
    /// `http://127.0.0.1:PORT`.
    public let base: URL
    /// A shared client.
    public let client = HTTPClient()
    /// The data directory.
    public let directory: URL

    private init(server: Server, base: URL, directory: URL) {
        self.server = server
        self.base = base
        self.directory = directory
    }

    /// Makes a fresh data directory (named after `label`), builds the server for it with `make`, starts it, runs
    /// `body`, stops the server and removes the directory.
    public static func run(label: String, make: (URL) throws -> Server,
                           _ body: (ServerHarness) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try make(directory)
        let port = try await server.start()
        let harness = ServerHarness(server: server, base: URL(string: "http://127.0.0.1:\(port)")!, directory: directory)
        try await withCleanup({ try await body(harness) }, cleanup: { await server.stop() })
    }
}
