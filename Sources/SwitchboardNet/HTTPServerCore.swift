import CCivetweb
import Foundation
import Synchronization

/// The server's shared state, handed to civetweb as callback data (retained while civetweb runs).
final class HTTPServerCore: Sendable {
    private enum Phase {
        case idle, starting, running, stopping, stopped
    }

    private struct State {
        var phase = Phase.idle
        var context: CivetwebHandle?
        var port: Int?
        var routes = HTTPServerRouter<HTTPServer.Handler>()
        var webSocketRoutes = HTTPServerRouter<HTTPServer.WebSocketHandler>()
        var exchanges: [ObjectIdentifier: HTTPServerExchange] = [:]
        var connections: [ObjectIdentifier: WebSocketConnection] = [:]
        /// Upgrades accepted whose handshake has not reached the ready handler yet.
        var upgrading = 0
    }

    /// An empty sub-protocol list, so civetweb refuses every offered sub-protocol instead of echoing one back.
    /// civetweb only reads it; it lives for the whole process.
    nonisolated(unsafe) private static let noSubprotocols: UnsafeMutablePointer<mg_websocket_subprotocols> = {
        let list = UnsafeMutablePointer<mg_websocket_subprotocols>.allocate(capacity: 1)
        list.initialize(to: mg_websocket_subprotocols(nb_subprotocols: 0, subprotocols: nil))
        return list
    }()

    let configuration: HTTPServer.Configuration
    private let state = Mutex(State())
    private let stopped = CivetwebCompletion()

    init(configuration: HTTPServer.Configuration) {
        self.configuration = configuration
    }

    var port: Int? { state.withLock { $0.phase == .running ? $0.port : nil } }

    func addRoute(method: HTTPMethod, prefix: String, handler: @escaping HTTPServer.Handler) {
        state.withLock { $0.routes.add(method: method, prefix: prefix, handler: handler) }
    }

    func addWebSocketRoute(path: String, handler: @escaping HTTPServer.WebSocketHandler) {
        state.withLock { $0.webSocketRoutes.add(method: nil, prefix: path, handler: handler) }
    }

    // MARK: Life cycle

    func start() throws -> Int {
        CivetwebLibrary.ensureInitialized()
        try state.withLock { state in
            guard state.phase == .idle else { throw HTTPServerError(.alreadyStarted, "a server starts once") }
            state.phase = .starting
        }
        let settings = configuration
        let options = CivetwebOptions([
            ("listening_ports", "\(settings.host):\(settings.port)"),
            ("num_threads", "\(max(1, settings.workerThreads))"),
            ("request_timeout_ms", "\(CivetwebLibrary.milliseconds(settings.requestTimeout))"),
            ("enable_keep_alive", settings.keepAlive ? "yes" : "no"),
            ("keep_alive_timeout_ms", "\(CivetwebLibrary.milliseconds(settings.keepAliveTimeout))"),
            ("websocket_timeout_ms", "\(CivetwebLibrary.milliseconds(settings.webSocketPingInterval))"),
            ("enable_websocket_ping_pong", "yes"),
            // Heads, chunks and frames go out in several small writes; without this, Nagle's algorithm and the
            // peer's delayed ACK add ~40 ms to many of them.
            ("tcp_nodelay", "1"),
        ])
        var callbacks = mg_callbacks()
        callbacks.log_message = { connection, message in HTTPServerCallbacks.logMessage(connection, message) }
        callbacks.http_error = { connection, status, message in HTTPServerCallbacks.httpError(connection, status, message) }
        let retained = Unmanaged.passRetained(self).toOpaque()
        var errorCode: UInt32 = 0
        var errorText = [CChar](repeating: 0, count: 256)
        let context = errorText.withUnsafeMutableBufferPointer { text -> OpaquePointer? in
            withUnsafeMutablePointer(to: &errorCode) { code in
                var error = mg_error_data(code: code, text: text.baseAddress, text_buffer_size: text.count)
                return withUnsafePointer(to: &callbacks) { callbacks in
                    var initData = mg_init_data(callbacks: callbacks, user_data: retained,
                                                configuration_options: options.pointer)
                    return mg_start2(&initData, &error)
                }
            }
        }
        guard let context else {
            Unmanaged<HTTPServerCore>.fromOpaque(retained).release()
            state.withLock { $0.phase = .stopped }
            stopped.complete()
            let message = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw HTTPServerError(.startFailed, "civetweb did not start (\(errorCode)): \(message)")
        }

        mg_set_request_handler(context, "/", { connection, data in
            HTTPServerCallbacks.request(connection, data)
        }, retained)
        mg_set_websocket_handler_with_subprotocols(
            context, "/", Self.noSubprotocols,
            { connection, data in HTTPServerCallbacks.webSocketConnect(connection, data) },
            { connection, data in HTTPServerCallbacks.webSocketReady(connection, data) },
            { connection, bits, payload, length, data in
                HTTPServerCallbacks.webSocketData(connection, bits, payload, length, data)
            },
            { connection, data in HTTPServerCallbacks.webSocketClose(connection, data) },
            retained)

        var ports = [mg_server_port](repeating: mg_server_port(), count: 4)
        let count = mg_get_server_ports(context, Int32(ports.count), &ports)
        let port = count > 0 ? Int(ports[0].port) : settings.port
        state.withLock { state in
            state.context = CivetwebHandle(pointer: context)
            state.port = port
            state.phase = .running
        }
        return port
    }

    func stop() async {
        // `start()` runs synchronously on another thread; let it finish first.
        while state.withLock({ $0.phase == .starting }) { try? await Task.sleep(for: .milliseconds(1)) }
        let claimed = state.withLock { state -> (CivetwebHandle?, [HTTPServerExchange])? in
            guard state.phase == .running else { return nil }
            state.phase = .stopping
            return (state.context, Array(state.exchanges.values))
        }
        guard let (context, exchanges) = claimed else {
            let neverStarted = state.withLock { state -> Bool in
                guard state.phase == .idle else { return false }
                state.phase = .stopped
                return true
            }
            if neverStarted { stopped.complete() }
            await stopped.wait()
            return
        }
        // Workers answer aborted requests and end streams before civetweb's stop flag silences all writes.
        for exchange in exchanges { exchange.abort() }
        let deadline = ContinuousClock.now + configuration.closeHandshakeTimeout
        // Upgrades already past the connect handler become connections in a moment; wait for them too.
        while state.withLock({ $0.upgrading > 0 }) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        let connections = state.withLock { Array($0.connections.values) }
        // Start every closing handshake, then give the peers and the workers one shared deadline.
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask { await connection.channel.close(code: .goingAway, reason: "server stopping") }
            }
        }
        let pending = exchanges.map(\.finished) + connections.map(\.channel.ended)
        for completion in pending {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { break }
            _ = await completion.wait(timeout: remaining)
        }
        if let context {
            // mg_stop waits for the master thread, which notices the stop flag only between polls of up to two
            // seconds; a throw-away connection to the listener wakes it at once.
            let done = CivetwebCompletion()
            DispatchQueue.global().async {
                mg_stop(context.pointer)
                done.complete()
            }
            let port = state.withLock { $0.port }
            while await !done.wait(timeout: .milliseconds(20)) {
                if let port { Self.wakeListener(host: configuration.host, port: port) }
            }
        }
        state.withLock { state in
            state.phase = .stopped
            state.context = nil
            state.port = nil
        }
        Unmanaged.passUnretained(self).release()
        stopped.complete()
    }

    /// Opens and at once closes a TCP connection to the listening socket (IPv4 only; anything else is skipped).
    private static func wakeListener(host: String, port: Int) {
        let target = host == "0.0.0.0" || host == "localhost" ? "127.0.0.1" : host
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(truncatingIfNeeded: port).bigEndian)
        guard inet_pton(AF_INET, target, &address.sin_addr) == 1 else { return }
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { return }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        close(descriptor)
    }

    /// Stops without waiting (the public server was released while running).
    func stopInBackground() {
        guard state.withLock({ $0.phase == .running }) else { return }
        Task { await self.stop() }
    }

    // MARK: HTTP requests (worker thread)

    /// Serves one request on the worker thread that owns `connection`; returns the status for civetweb's log.
    func serve(_ connection: OpaquePointer) -> Int32 {
        let wire = HTTPServerWire(connection: connection)
        guard let head = wire.requestHead() else {
            return wire.respond(status: 400, text: "bad request\n", keepAlive: false)
        }
        let keepAlive = head.allowsKeepAlive(configured: configuration.keepAlive)
        let isHead = head.method == .head
        let limit = configuration.maxRequestBodySize
        let drainLimit = 1 << 20

        if head.contentLength > Int64(limit) {
            wire.respond(status: 413, text: "request body larger than \(limit) bytes\n", keepAlive: false, isHead: isHead)
            // A client waiting for 100 Continue has sent nothing; anyone else is sending the body now.
            if !head.expectsContinue { wire.drainBody(limit: drainLimit) }
            return 413
        }
        if head.expectsContinue && (head.contentLength > 0 || head.isChunked) {
            wire.write(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        let body: Data
        switch wire.readBody(limit: limit, expectedLength: head.contentLength) {
        case .complete(let data):
            body = data
        case .tooLarge:
            wire.respond(status: 413, text: "request body larger than \(limit) bytes\n", keepAlive: false, isHead: isHead)
            wire.drainBody(limit: drainLimit)
            return 413
        case .malformed:
            return wire.respond(status: 400, text: "malformed or incomplete request body\n", keepAlive: false,
                                isHead: isHead)
        }

        let request = head.request(body: body)
        let (match, isWebSocketPath) = state.withLock { state in
            let match = state.routes.match(method: head.method, path: head.path)
            guard case .notFound = match else { return (match, false) }
            guard case .matched = state.webSocketRoutes.match(method: nil, path: head.path) else { return (match, false) }
            return (match, true)
        }
        let handler: HTTPServer.Handler
        switch match {
        case .matched(let found):
            handler = found
        case .methodNotAllowed(let allowed):
            return wire.respond(status: 405, text: "method not allowed\n",
                                headers: ["Allow": allowed.map(\.rawValue).joined(separator: ", ")],
                                keepAlive: keepAlive, isHead: isHead)
        case .notFound where isWebSocketPath:
            return wire.respond(status: 426, text: "this path only accepts WebSocket upgrades\n",
                                headers: ["Upgrade": "websocket"], keepAlive: keepAlive, isHead: isHead)
        case .notFound:
            return wire.respond(status: 404, text: "not found\n", keepAlive: keepAlive, isHead: isHead)
        }

        let exchange = HTTPServerExchange()
        let id = ObjectIdentifier(exchange)
        let accepted = state.withLock { state -> Bool in
            guard state.phase == .running else { return false }
            state.exchanges[id] = exchange
            return true
        }
        guard accepted else {
            return wire.respond(status: 503, text: "server stopping\n", keepAlive: false, isHead: isHead)
        }
        defer { _ = state.withLock { $0.exchanges.removeValue(forKey: id) } }
        exchange.start(handler, request: request)
        defer { exchange.close() }
        return drive(exchange, wire: wire, head: head, keepAlive: keepAlive)
    }

    private func drive(_ exchange: HTTPServerExchange, wire: HTTPServerWire, head: HTTPServerRequestHead,
                       keepAlive: Bool) -> Int32 {
        let isHead = head.method == .head
        let response: HTTPServerResponse
        switch exchange.next(timeout: configuration.handlerTimeout) {
        case .response(let answered):
            response = answered
        case .timedOut:
            return wire.respond(status: 503, text: "the handler did not answer in time\n", keepAlive: false,
                                isHead: isHead)
        default:
            return wire.respond(status: 503, text: "server stopping\n", keepAlive: false, isHead: isHead)
        }
        let status = (100...999).contains(response.status) ? response.status : 500
        let noBody = status < 200 || status == 204 || status == 304
        let keepAlive = keepAlive && !(response.headers["Connection"]?.lowercased().contains("close") ?? false)

        let streamed: Bool
        switch response.body {
        case .data(let data):
            wire.writeHead(status: status, headers: response.headers, framing: noBody ? .none : .length(data.count),
                           keepAlive: keepAlive)
            if !isHead && !noBody { wire.write(data) }
            return Int32(status)
        case .stream, .writer:
            streamed = !isHead && !noBody
        }
        let chunked = head.httpVersion == "1.1"
        guard streamed else {
            wire.writeHead(status: status, headers: response.headers, framing: noBody ? .none : .chunked,
                           keepAlive: keepAlive && chunked)
            return Int32(status)
        }
        guard wire.writeHead(status: status, headers: response.headers, framing: chunked ? .chunked : .untilClose,
                             keepAlive: keepAlive && chunked) else { return Int32(status) }
        let heartbeat = response.heartbeat.flatMap { $0.chunk.isEmpty ? nil : $0 }
        while true {
            switch exchange.next(timeout: heartbeat?.interval) {
            case .chunk(let data, let written):
                let ok = chunked ? wire.sendChunk(data) : wire.write(data)
                written.resume(returning: ok)
                if !ok {
                    wire.disableKeepAlive()
                    return Int32(status)
                }
            case .timedOut:
                guard let heartbeat else { continue }
                if !(chunked ? wire.sendChunk(heartbeat.chunk) : wire.write(heartbeat.chunk)) {
                    wire.disableKeepAlive()
                    return Int32(status)
                }
            case .end, .aborted, .response:
                if chunked { wire.endChunks() }
                return Int32(status)
            case .failed:
                // No terminating chunk: the client sees a truncated body, not a complete one.
                wire.disableKeepAlive()
                return Int32(status)
            }
        }
    }

    // MARK: WebSockets (worker thread)

    /// Whether an upgrade to the request's path may proceed; answers 404/503 itself when not.
    func acceptWebSocket(_ connection: OpaquePointer) -> Bool {
        let wire = HTTPServerWire(connection: connection)
        guard let head = wire.requestHead() else { return false }
        let verdict = state.withLock { state -> Int in
            guard state.phase == .running else { return 503 }
            guard case .matched = state.webSocketRoutes.match(method: nil, path: head.path) else { return 404 }
            state.upgrading += 1
            return 101
        }
        switch verdict {
        case 503: wire.respond(status: 503, text: "server stopping\n", keepAlive: false)
        case 404: wire.respond(status: 404, text: "no WebSocket endpoint here\n", keepAlive: false)
        default: return true
        }
        return false
    }

    /// The handshake is done: makes the connection object and starts the handler task.
    func webSocketOpened(_ connection: OpaquePointer) {
        let wire = HTTPServerWire(connection: connection)
        let head = wire.requestHead()
        let request = head?.request(body: Data()) ?? HTTPServerRequest(method: .get, path: "/")
        let channel = WebSocketChannel(role: .server, maxMessageSize: configuration.maxWebSocketMessageSize,
                                       maxUnreadMessages: configuration.maxUnreadWebSocketMessages)
        let socket = WebSocketConnection(request: request, channel: channel,
                                         closeTimeout: configuration.closeHandshakeTimeout)
        channel.attach(connection)
        mg_set_user_connection_data(connection, Unmanaged.passRetained(socket).toOpaque())
        let handler = state.withLock { state -> HTTPServer.WebSocketHandler? in
            state.upgrading -= 1
            state.connections[ObjectIdentifier(socket)] = socket
            guard state.phase == .running,
                  case .matched(let handler) = state.webSocketRoutes.match(method: nil, path: request.path) else {
                return nil
            }
            return handler
        }
        guard let handler else {
            // The server began stopping during the handshake; `stop()` waits for this close to finish.
            channel.closeNow(on: connection, code: .goingAway, reason: "server stopping")
            return
        }
        Task {
            await handler(socket)
            await socket.close()
        }
    }

    /// civetweb left the read loop: the connection object is done.
    func webSocketClosed(_ socket: WebSocketConnection) {
        socket.channel.connectionEnded()
        _ = state.withLock { $0.connections.removeValue(forKey: ObjectIdentifier(socket)) }
    }
}
