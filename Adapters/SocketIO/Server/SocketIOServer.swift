import Foundation
import Synchronization
import SwitchboardNet

/// The Socket-style reference server of WIRE.md: REST for identity, conversations, messages and uploads, plus a
/// Socket.IO v5 endpoint (Engine.IO v4, WebSocket transport only) at `/socket.io/` that pushes live events.
///
/// `start()` opens the SQLite store under the data directory and serves over HTTP; `stop()` closes the sockets,
/// stops the HTTP server and closes the store.
public final class SocketIOServer: Sendable {
    /// The configuration the server was made with.
    public let configuration: SocketIOServerConfiguration
    private let running = ReferenceServerSlot<SocketIOService, SocketIOSocketRegistry>()

    /// A server that does nothing until `start()`.
    public init(configuration: SocketIOServerConfiguration) {
        self.configuration = configuration
    }

    /// The bound port while running.
    public var port: Int? { running.port }

    /// `http://host:port` while running.
    public var baseURL: URL? { running.read { URL(string: $0.service.base.current) } ?? nil }

    /// Live-event listeners currently registered, one per connected socket (tests check closed sockets leave none).
    public var activeListeners: Int { running.read { $0.service.hub.listenerCount } ?? 0 }

    /// Engine.IO sessions currently open on `/socket.io/`.
    public var openSockets: Int { running.read { $0.extra.count } ?? 0 }

    /// Opens the store, starts serving and returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        let configuration = self.configuration
        let path = configuration.dataDirectory.appendingPathComponent("socketio.sqlite").path
        let (runner, store) = try await running.openStore(
            label: "switchboard.socketio-server.store", dataDirectory: configuration.dataDirectory) {
            try SocketIOStore(path: path)
        }
        let service = SocketIOService(configuration: configuration, store: store, runner: runner)
        let sockets = SocketIOSocketRegistry()
        var httpConfiguration = HTTPServer.Configuration.referenceServer(
            host: configuration.host, port: configuration.port, maxRequestBodySize: configuration.maxRequestBodySize,
            maxUploadSize: configuration.maxUploadSize, logger: configuration.logger)
        httpConfiguration.maxWebSocketMessageSize = max(1024, configuration.maxPayload)
        // Engine.IO pings itself; civetweb's own keep-alive pings only need to outlast a missed Engine.IO ping.
        httpConfiguration.webSocketPingInterval = configuration.pingInterval + configuration.pingTimeout
        let http = HTTPServer(configuration: httpConfiguration)
        for method in [HTTPMethod.get, .head, .post, .put, .patch, .delete] {
            for prefix in ["/auth", "/conversations", "/uploads", "/files", "/socket.io"] {
                http.route(method, prefix) { request in await service.handle(request) }
            }
        }
        http.webSocket("/socket.io") { connection in
            await SocketIOSocketSession.run(connection, service: service, registry: sockets)
        }
        let (port, baseURL) = try http.startReferenceServer(publicBaseURL: configuration.publicBaseURL) { store.close() }
        service.base.set(baseURL)
        running.set((http: http, service: service, extra: sockets))
        return port
    }

    /// Ends live listeners, closes sockets, stops serving and closes the store; safe to call twice.
    public func stop() async {
        await running.stop { $0.hub.finishAll() } last: { $0.store.close() }
    }
}
