import Foundation
import Synchronization
import SwitchboardNet

/// The Socket-style reference server of WIRE.md: REST for identity, conversations, messages and uploads, plus a
/// Socket.IO v5 endpoint (Engine.IO v4, WebSocket transport only) at `/socket.io/` that pushes live events.
///
/// `start()` opens the SQLite store under the data directory and serves over HTTP; `stop()` closes the sockets,
/// stops the HTTP server and closes the store.
public final class SocketIOServer: Sendable {
    private struct Running: Sendable {
        var http: HTTPServer
        var service: SocketIOService
        var sockets: SocketIOSocketRegistry
    }

    /// The configuration the server was made with.
    public let configuration: SocketIOServerConfiguration
    private let running = Mutex<Running?>(nil)

    /// A server that does nothing until `start()`.
    public init(configuration: SocketIOServerConfiguration) {
        self.configuration = configuration
    }

    /// The bound port while running.
    public var port: Int? { running.withLock { $0?.http.port } }

    /// `http://host:port` while running.
    public var baseURL: URL? { running.withLock { $0.flatMap { URL(string: $0.service.baseURL) } } }

    /// Live-event listeners currently registered, one per connected socket (tests check closed sockets leave none).
    public var activeListeners: Int { running.withLock { $0?.service.hub.listenerCount ?? 0 } }

    /// Engine.IO sessions currently open on `/socket.io/`.
    public var openSockets: Int { running.withLock { $0?.sockets.count ?? 0 } }

    /// Opens the store, starts serving and returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        let configuration = self.configuration
        let runner = BlockingRunner(label: "switchboard.socketio-server.store")
        let store = try await runner.run {
            try FileManager.default.createDirectory(at: configuration.dataDirectory.appendingPathComponent("uploads"),
                                                    withIntermediateDirectories: true)
            return try SocketIOStore(path: configuration.dataDirectory.appendingPathComponent("socketio.sqlite").path)
        }
        let service = SocketIOService(configuration: configuration, store: store, runner: runner)
        let sockets = SocketIOSocketRegistry()
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.maxRequestBodySize = max(configuration.maxRequestBodySize, configuration.maxUploadSize) + (64 << 10)
        httpConfiguration.requestTimeout = .seconds(30)
        httpConfiguration.workerThreads = max(4, configuration.workerThreads)
        httpConfiguration.maxWebSocketMessageSize = max(1024, configuration.maxPayload)
        // Engine.IO pings itself; civetweb's own keep-alive pings only need to outlast a missed Engine.IO ping.
        httpConfiguration.webSocketPingInterval = configuration.pingInterval + configuration.pingTimeout
        httpConfiguration.logger = configuration.logger
        let http = HTTPServer(configuration: httpConfiguration)
        for method in [HTTPMethod.get, .head, .post, .put, .patch, .delete] {
            for prefix in ["/auth", "/conversations", "/uploads", "/files", "/socket.io"] {
                http.route(method, prefix) { request in await service.handle(request) }
            }
        }
        http.webSocket("/socket.io") { connection in
            await SocketIOSocketSession.run(connection, service: service, registry: sockets)
        }
        let port: Int
        do {
            port = try http.start()
        } catch {
            store.close()
            throw error
        }
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        service.setBaseURL(configuration.publicBaseURL ?? "http://\(host):\(port)")
        running.withLock { $0 = Running(http: http, service: service, sockets: sockets) }
        return port
    }

    /// Ends live listeners, closes sockets, stops serving and closes the store; safe to call twice.
    public func stop() async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        current.service.hub.finishAll()
        await current.http.stop()
        current.service.store.close()
    }
}
