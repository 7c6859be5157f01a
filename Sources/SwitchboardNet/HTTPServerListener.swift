import CLibUV
import Foundation
import SwitchboardCore
import Synchronization

/// A WebSocket route: who may upgrade, and the handler that runs for the connection's life.
struct HTTPServerWebSocketRoute: Sendable {
    /// Answers a refusal (401, 403, …) to refuse the upgrade before it happens, or nil to accept.
    var admit: HTTPServer.WebSocketAdmission?
    /// Runs for the connection's life.
    var handler: HTTPServer.WebSocketHandler
}

/// The server's routes, shared by the public API (any thread) and the event loop.
final class HTTPServerRoutes: Sendable {
    /// What the connection does with a request.
    enum Decision {
        /// Run this handler.
        case handler(HTTPServer.Handler)
        /// Answer this small response (404, 405, 426).
        case refusal(status: Int, text: String, headers: HTTPHeaders)
    }

    private struct Tables {
        var http = HTTPServerRouter<HTTPServer.Handler>()
        var webSocket = HTTPServerRouter<HTTPServerWebSocketRoute>()
    }

    private let tables = Locked(Tables())

    /// Adds an HTTP route.
    func add(method: HTTPMethod, prefix: String, handler: @escaping HTTPServer.Handler) {
        tables.withLock { $0.http.add(method: method, prefix: prefix, handler: handler) }
    }

    /// Adds a WebSocket route.
    func addWebSocket(path: String, route: HTTPServerWebSocketRoute) {
        tables.withLock { $0.webSocket.add(method: nil, prefix: path, handler: route) }
    }

    /// The decision for a plain request.
    func decide(method: HTTPMethod, path: String) -> Decision {
        tables.withLock { tables in
            switch tables.http.match(method: method, path: path) {
            case .matched(let handler):
                return .handler(handler)
            case .methodNotAllowed(let allowed):
                return .refusal(status: 405, text: "method not allowed\n",
                                headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")])
            case .notFound:
                if case .matched = tables.webSocket.match(method: nil, path: path) {
                    return .refusal(status: 426, text: "this path only accepts WebSocket upgrades\n",
                                    headers: ["Upgrade": "websocket"])
                }
                return .refusal(status: 404, text: "not found\n", headers: HTTPHeaders())
            }
        }
    }

    /// The WebSocket route for `path`, if any.
    func webSocket(path: String) -> HTTPServerWebSocketRoute? {
        tables.withLock { tables in
            if case .matched(let route) = tables.webSocket.match(method: nil, path: path) { return route }
            return nil
        }
    }
}

/// The listening socket and every open connection of one running server, on its event loop.
///
/// Loop-confined like the connections (`@unchecked Sendable` only so jobs can name it). It admits connections
/// within the server's limits (in all, and per client address), keeps them alive while open, and tells the
/// server when the last one has gone after a stop.
final class HTTPServerListener: @unchecked Sendable {
    let configuration: HTTPServer.Configuration
    let loop: ServerEventLoop
    let routes: HTTPServerRoutes
    /// The bound port.
    let port: Int
    /// Fires once the server stopped accepting and every connection has closed.
    let drained = CivetwebCompletion()
    private let tcp: UnsafeMutablePointer<uv_tcp_t>
    private let running = Atomic<Bool>(true)
    private var listening = true
    private var connections: [ObjectIdentifier: HTTPServerConnection] = [:]
    private var perClient: [String: Int] = [:]
    private let webSockets = Locked<[ObjectIdentifier: WebSocketConnection]>([:])

    /// Binds and listens (the loop is not running yet, so this runs on the caller's thread).
    init(configuration: HTTPServer.Configuration, routes: HTTPServerRoutes) throws(HTTPServerError) {
        self.configuration = configuration
        self.routes = routes
        loop = try ServerEventLoop()
        let handle = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        tcp = handle
        uv_tcp_init(loop.loop, handle)
        var storage = sockaddr_storage()
        let host = configuration.host == "localhost" ? "127.0.0.1" : configuration.host
        let port = Int32(configuration.port)
        var status = withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { uv_ip4_addr(host, port, $0) }
        }
        if status != 0 {
            status = withUnsafeMutablePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { uv_ip6_addr(host, port, $0) }
            }
        }
        if status == 0 {
            status = withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_bind(handle, $0, 0) }
            }
        }
        if status == 0 {
            status = uv_listen(UV.stream(handle), 1024) { server, status in
                guard let server, status == 0 else { return }
                Unmanaged<HTTPServerListener>.fromOpaque(server.pointee.data).takeUnretainedValue().accept()
            }
        }
        var bound = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        if status == 0 {
            status = withUnsafeMutablePointer(to: &bound) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getsockname(handle, $0, &length) }
            }
        }
        guard status == 0 else {
            uv_close(UV.handle(handle), nil)
            uv_run(loop.loop, UV_RUN_NOWAIT)
            handle.deallocate()
            throw HTTPServerError(.startFailed, "cannot listen on \(configuration.host):\(configuration.port): "
                                  + ServerEventLoop.describe(status))
        }
        self.port = UV.describe(bound).port
        tcp.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        HTTPServerListener.raiseDescriptorLimit()
    }

    /// Starts the loop's thread: connections are accepted from now on.
    func start() throws(HTTPServerError) {
        try loop.start()
    }

    /// Whether new requests are still served (false once the server began stopping).
    var isRunning: Bool { running.load(ordering: .acquiring) }

    private func accept() {
        let client = UnsafeMutablePointer<uv_tcp_t>.allocate(capacity: 1)
        uv_tcp_init(loop.loop, client)
        guard uv_accept(UV.stream(tcp), UV.stream(client)) == 0 else {
            uv_close(UV.handle(client)) { handle in UnsafeMutableRawPointer(handle!).deallocate() }
            return
        }
        var peer = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &peer) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { uv_tcp_getpeername(client, $0, &length) }
        }
        let remote = UV.describe(peer)
        let connection = HTTPServerConnection(tcp: client, remote: remote, server: self)
        connections[ObjectIdentifier(connection)] = connection
        let count = perClient[remote.address, default: 0]
        if !isRunning || connections.count > configuration.maxConnections || count >= configuration.maxConnectionsPerClient {
            configuration.logger.warning("refusing a connection from \(remote.address): "
                                         + (isRunning ? "connection limit reached" : "server stopping"))
            connection.refuseConnection()
            return
        }
        perClient[remote.address] = count + 1
        connection.countsTowardLimit = true
        connection.start()
    }

    /// A connection's handles are closed: forget it.
    func connectionClosed(_ connection: HTTPServerConnection) {
        guard connections.removeValue(forKey: ObjectIdentifier(connection)) != nil else { return }
        if connection.countsTowardLimit {
            let address = connection.remote.address
            let left = perClient[address, default: 1] - 1
            perClient[address] = left > 0 ? left : nil
        }
        checkDrained()
    }

    /// Records an upgraded connection, so `stop` can close it with a close frame.
    func webSocketOpened(_ socket: WebSocketConnection) {
        webSockets.withLock { $0[ObjectIdentifier(socket)] = socket }
    }

    /// Forgets an upgraded connection whose transport ended.
    func webSocketEnded(_ socket: WebSocketConnection) {
        _ = webSockets.withLock { $0.removeValue(forKey: ObjectIdentifier(socket)) }
    }

    /// The WebSockets open now (any thread).
    var openWebSockets: [WebSocketConnection] { webSockets.withLock { Array($0.values) } }

    /// Loop: stop accepting; unanswered requests get 503, streams end, idle connections close.
    func stopAccepting() {
        running.store(false, ordering: .releasing)
        if listening {
            listening = false
            uv_close(UV.handle(tcp)) { handle in
                let listener = Unmanaged<HTTPServerListener>.fromOpaque(handle!.pointee.data).takeUnretainedValue()
                listener.tcp.deallocate()
                listener.listenerClosed = true
                listener.checkDrained()
            }
        }
        for connection in Array(connections.values) { connection.abort() }
    }

    /// Loop: closes every connection still open.
    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
        checkDrained()
    }

    private var listenerClosed = false

    private func checkDrained() {
        guard !isRunning, listenerClosed, connections.isEmpty else { return }
        drained.complete()
    }

    /// Raises this process's open-file limit to its hard limit once, so a server can hold thousands of sockets.
    private static let raisedLimit: Void = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
    }()

    private static func raiseDescriptorLimit() {
        _ = raisedLimit
    }
}
