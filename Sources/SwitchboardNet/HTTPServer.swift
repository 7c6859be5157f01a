import Foundation
import SwitchboardCore

/// An HTTP and WebSocket server on civetweb, for tests, local bridges and streaming endpoints.
///
/// Register routes, call `start()`, read `port`, and always `await stop()`. civetweb runs a fixed pool of
/// `workerThreads` threads; each request (and each open WebSocket) holds one worker for its whole life while the
/// Swift handler runs as a task, so the pool bounds concurrency. Handlers never touch sockets.
public final class HTTPServer: Sendable {
    /// An HTTP handler: gets the fully-read request, answers a response.
    public typealias Handler = @Sendable (HTTPServerRequest) async throws -> HTTPServerResponse
    /// A WebSocket handler: runs for the connection's life; the connection closes with 1000 when it returns.
    public typealias WebSocketHandler = @Sendable (WebSocketConnection) async -> Void

    /// Server settings; the defaults suit a loopback test server.
    public struct Configuration: Sendable {
        /// The address to bind (loopback by default).
        public var host = "127.0.0.1"
        /// The port to bind; 0 picks a free one (read it from `port`).
        public var port = 0
        /// civetweb worker threads (`num_threads`): the most requests plus WebSockets served at once.
        public var workerThreads = 8
        /// The largest request body accepted; larger ones get 413 (checked on `Content-Length` and while de-chunking).
        public var maxRequestBodySize = 1 << 20
        /// How long a client may take to send a request head or body (`request_timeout_ms`); a stalled one gets 400.
        public var requestTimeout: Duration = .seconds(10)
        /// Whether connections are kept open between requests (`enable_keep_alive`). An idle kept-alive connection
        /// holds a worker thread until `keepAliveTimeout`; with more concurrent clients than workers, turn it off.
        public var keepAlive = true
        /// How long an idle kept-alive connection waits for the next request (`keep_alive_timeout_ms`).
        public var keepAliveTimeout: Duration = .milliseconds(500)
        /// How long a WebSocket may stay silent before civetweb pings it (`websocket_timeout_ms`); after six silent
        /// periods in a row the connection is dropped.
        public var webSocketPingInterval: Duration = .seconds(20)
        /// The largest WebSocket message accepted after reassembly; bigger ones close the connection with 1009.
        public var maxWebSocketMessageSize = 16 << 20
        /// How many received WebSocket messages may wait for the handler to read them: a client that gets further
        /// ahead (a flood, or a handler that stopped reading) is cut off with 1008, so it cannot grow the server's
        /// memory without bound.
        public var maxUnreadWebSocketMessages = 16_384
        /// How long a handler may take to return its response before the client gets 503 (`nil`: no limit).
        /// The handler's task is cancelled then. Each waiting request holds a worker thread, so a limit keeps
        /// stuck handlers from exhausting the pool.
        public var handlerTimeout: Duration?
        /// How long `stop()` and `WebSocketConnection.close` wait for the peer's close frame.
        public var closeHandshakeTimeout: Duration = .seconds(2)
        /// Receives civetweb's error lines, as warnings (nowhere unless a handler is given).
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

    /// Accepts WebSocket upgrades on `path` and below; other upgrade paths get 404.
    public func webSocket(_ path: String, handler: @escaping WebSocketHandler) {
        core.addWebSocketRoute(path: path, handler: handler)
    }

    /// Binds and starts civetweb's threads; returns the bound port.
    @discardableResult
    public func start() throws -> Int {
        try core.start()
    }

    /// Closes WebSockets (1001), ends streams, answers in-flight requests 503 if their handlers have not answered,
    /// then stops civetweb; returns once all of civetweb's threads have exited.
    public func stop() async {
        await core.stop()
    }
}
