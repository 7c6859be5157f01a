import Foundation
import SwitchboardCore

/// An HTTP/1.1 and WebSocket server on one libuv event loop, for the reference servers, tests, local bridges and
/// streaming endpoints.
///
/// Register routes, call `start()`, read `port`, and always `await stop()`. One thread (`sb-http`) reads, parses
/// and writes every connection without blocking; handlers run as Swift tasks and never touch sockets. An open
/// connection (an idle keep-alive socket, a WebSocket, a long-lived stream, a slow client) costs its socket and
/// a few kilobytes, so thousands can be held at once; limits on connections in all and per client address, on
/// request heads, bodies and WebSocket frames (checked from their headers), on bytes in flight to a peer that does
/// not read, and deadlines for slow requests keep any client from costing more.
public final class HTTPServer: Sendable {
    /// An HTTP handler: gets the fully-read request, answers a response.
    public typealias Handler = @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse
    /// A WebSocket handler: runs for the connection's life; the connection closes with 1000 when it returns.
    public typealias WebSocketHandler = @Sendable (WebSocketConnection) async -> Void
    /// Decides, before the upgrade, whether a WebSocket request may upgrade: a response (401, 403, …) refuses it,
    /// `nil` accepts. It runs on the server's I/O thread, so it must be quick (check a key, not call a database).
    public typealias WebSocketAdmission = @Sendable (HTTPServerRequest) -> HTTPServerResponse?

    /// Server settings; the defaults suit a loopback test server.
    public struct Configuration: Sendable {
        /// The address to bind (loopback by default).
        public var host = "127.0.0.1"
        /// The port to bind; 0 picks a free one (read it from `port`).
        public var port = 0
        /// The most connections open at once; more are answered 503 and closed.
        public var maxConnections = 10_000
        /// The most connections open at once from one client address; more are answered 503 and closed.
        public var maxConnectionsPerClient = 4_096
        /// The largest request head (request line and header fields); larger ones get 431.
        public var maxRequestHeadSize = 16 * 1024
        /// The most header fields in a request; more get 431.
        public var maxHeaderFields = 100
        /// The largest request body accepted; larger ones get 413 (checked on `Content-Length`, on each chunk's
        /// declared size, and while de-chunking), before the excess is read.
        public var maxRequestBodySize = 1 << 20
        /// How long a client may take to send a whole request (head and body), counted from its first byte, or from
        /// the connection's opening for the first request; a slower one gets 408 and is closed.
        public var requestTimeout: Duration = .seconds(10)
        /// Whether connections are kept open between requests.
        public var keepAlive = true
        /// How long an idle kept-alive connection waits for the next request.
        public var keepAliveTimeout: Duration = .seconds(5)
        /// How long a WebSocket may stay silent before it is pinged; after five unanswered pings in a row the
        /// connection is dropped.
        public var webSocketPingInterval: Duration = .seconds(20)
        /// The largest WebSocket message accepted after reassembly; bigger ones close the connection with 1009, and a
        /// frame declaring more is refused from its header, before any of it is read.
        public var maxWebSocketMessageSize = 16 << 20
        /// How many received WebSocket messages may wait for the handler to read them: a client that gets further
        /// ahead (a flood, or a handler that stopped reading) is cut off with 1008, so it cannot grow the server's
        /// memory without bound.
        public var maxUnreadWebSocketMessages = 16_384
        /// The most bytes queued for one peer and not yet taken by its socket (WebSocket messages, stream chunks): a
        /// peer that stops reading is disconnected instead of growing the server's memory.
        public var maxBytesInFlightPerConnection = 16 << 20
        /// How long bytes may stay queued for a peer that takes none of them before the connection is closed.
        public var writeTimeout: Duration = .seconds(30)
        /// How long a handler may take to return its response before the client gets 503 (`nil`: no limit).
        /// The handler's task is cancelled then.
        public var handlerTimeout: Duration?
        /// How long `stop()` and `WebSocketConnection.close` wait for the peer's close frame.
        public var closeHandshakeTimeout: Duration = .seconds(2)
        /// Receives the server's warnings (refused connections, peers that stop reading).
        public var logger = Logger(label: "http")

        /// The defaults.
        public init() {}
    }

    private let core: HTTPServerCore

    /// A stopped server with `configuration`.
    public init(configuration: Configuration = Configuration()) {
        core = HTTPServerCore(configuration: configuration)
    }

    deinit {
        core.stopInBackground()
    }

    /// The settings the server was made with.
    public var configuration: Configuration { core.configuration }

    /// The bound port while running, else `nil`.
    public var port: Int? { core.port }

    /// Routes `method` requests whose path starts with `pathPrefix` (whole segments; the longest prefix wins).
    public func route(_ method: HTTPMethod, _ pathPrefix: String, handler: @escaping Handler) {
        core.addRoute(method: method, prefix: pathPrefix, handler: handler)
    }

    /// Accepts WebSocket upgrades on `path` and below (other upgrade paths get 404); `admit`, when given, may
    /// refuse a request before the upgrade.
    public func webSocket(_ path: String, admit: WebSocketAdmission? = nil, handler: @escaping WebSocketHandler) {
        core.addWebSocketRoute(path: path, admit: admit, handler: handler)
    }

    /// Binds and starts the server's thread; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        try core.start()
    }

    /// Closes WebSockets (1001), ends streams, answers in-flight requests 503 if their handlers have not answered,
    /// then closes every connection; returns once the server's thread has exited.
    public func stop() async {
        await core.stop()
    }
}
