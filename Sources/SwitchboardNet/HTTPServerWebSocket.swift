import Foundation

/// Whether an upgrade request is a valid RFC 6455 opening handshake; pure.
enum WebSocketUpgradeRequest {
    /// A refusal to answer instead of 101.
    struct Refusal: Error, Hashable {
        var status: Int
        var text: String
        var headers: HTTPHeaders = HTTPHeaders()
    }

    /// The `Sec-WebSocket-Accept` value for a valid handshake, or the refusal.
    static func evaluate(_ head: HTTPServerRequestHead) -> Result<String, Refusal> {
        guard head.method == .get, head.httpVersion == "1.1" else {
            return .failure(Refusal(status: 400, text: "a WebSocket upgrade is a GET over HTTP/1.1\n"))
        }
        guard head.headers["Upgrade"]?.lowercased() == "websocket" else {
            return .failure(Refusal(status: 400, text: "only WebSocket upgrades are supported\n"))
        }
        guard head.headers["Sec-WebSocket-Version"]?.trimmingCharacters(in: .whitespaces) == "13" else {
            return .failure(Refusal(status: 426, text: "WebSocket version 13 is required\n",
                                    headers: ["Sec-WebSocket-Version": "13"]))
        }
        guard let key = head.headers["Sec-WebSocket-Key"]?.trimmingCharacters(in: .whitespaces),
              Data(base64Encoded: key)?.count == 16 else {
            return .failure(Refusal(status: 400, text: "Sec-WebSocket-Key must be 16 bytes in base64\n"))
        }
        return .success(WebSocketTLSHandshake.acceptValue(for: key))
    }

    /// The 101 answer.
    static func switchingProtocols(accept: String) -> Data {
        Data(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              + "Sec-WebSocket-Accept: \(accept)\r\n\r\n").utf8)
    }
}

/// The WebSocket side of an upgraded server connection: frames in, through the channel, and pings for a silent
/// peer. Loop-confined, like its connection.
final class HTTPServerWebSocket {
    unowned let connection: HTTPServerConnection
    /// The connection object handed to the route's handler.
    let socket: WebSocketConnection
    private var parser: WebSocketFrameParser

    init(connection: HTTPServerConnection, socket: WebSocketConnection, maxMessageSize: Int) {
        self.connection = connection
        self.socket = socket
        // A frame's payload is at most a message; control frames are checked by the state machine.
        parser = WebSocketFrameParser(maxFramePayload: max(maxMessageSize, 125), expectsMasked: true)
    }

    /// Bytes from the peer: every complete frame goes to the channel; a violation or a finished close ends the
    /// connection once the last reply is written.
    func received(_ bytes: UnsafeRawBufferPointer) {
        parser.append(bytes)
        while !connection.isClosed {
            do {
                guard let frame = try parser.next() else { return }
                if !socket.channel.frameReceived(bits: frame.bits, payload: frame.payload) {
                    connection.closeWhenWritten()
                    return
                }
            } catch {
                socket.channel.failFromReader(code: error.code, reason: error.reason)
                connection.closeWhenWritten()
                return
            }
        }
    }

    /// Pings the silent peer (an empty ping, as civetweb sent).
    func ping() {
        let frame = WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: WebSocketOpcode.ping, payload: Data()),
                                                 maskingKey: nil)
        if !connection.exceedsBudget(adding: frame.count) { connection.write(frame) }
    }

    /// The TCP connection closed: the channel ends (its reader sees the close), the server forgets the socket.
    func transportEnded() {
        socket.channel.connectionEnded()
        connection.server.webSocketEnded(socket)
    }
}

/// Where a server WebSocket's channel writes: the connection's queue on the event loop.
struct HTTPServerWebSocketSink: WebSocketByteSink {
    let connection: HTTPServerConnection

    /// Queues `bytes` (from the loop's own thread: at once; from elsewhere: as a job).
    func write(_ bytes: Data) -> Bool {
        let connection = connection
        if connection.loop.isCurrent { return connection.sendWebSocketBytes(bytes, completion: nil) }
        connection.loop.execute { _ = connection.sendWebSocketBytes(bytes, completion: nil) }
        return true
    }

    /// Queues `bytes` and returns once they reached the kernel, or `false` when the connection is gone.
    func send(_ bytes: Data) async -> Bool {
        let connection = connection
        return await withCheckedContinuation { continuation in
            connection.loop.execute({
                _ = connection.sendWebSocketBytes(bytes) { continuation.resume(returning: $0) }
            }, ifDropped: { continuation.resume(returning: false) })
        }
    }
}

extension HTTPServerConnection {
    /// Upgrades to a WebSocket after checking the route, the handshake and the route's admission; `leftover` holds
    /// bytes the client sent after the head (frames already).
    func upgradeToWebSocket(_ head: HTTPServerRequestHead, leftover: UnsafeRawBufferPointer) {
        func refuse(_ status: Int, _ text: String, headers: HTTPHeaders = HTTPHeaders()) {
            write(HTTPResponseEncoder.text(status: status, text, headers: headers, keepAlive: false))
            closeWhenWritten()
        }
        guard server.isRunning else { return refuse(503, "server stopping\n") }
        guard let route = server.routes.webSocket(path: head.path) else {
            return refuse(404, "no WebSocket endpoint here\n")
        }
        let accept: String
        switch WebSocketUpgradeRequest.evaluate(head) {
        case .failure(let refusal): return refuse(refusal.status, refusal.text, headers: refusal.headers)
        case .success(let value): accept = value
        }
        let request = head.request(body: Data())
        if let admit = route.admit, let refusal = admit(request) {
            var bytes = HTTPResponseEncoder.head(status: refusal.status, headers: refusal.headers,
                                                 framing: .length(refusal.bodyData.count), keepAlive: false)
            bytes.append(refusal.bodyData)
            write(bytes)
            closeWhenWritten()
            return
        }
        write(WebSocketUpgradeRequest.switchingProtocols(accept: accept))
        let settings = server.configuration
        let channel = WebSocketChannel(role: .server, maxMessageSize: settings.maxWebSocketMessageSize,
                                       maxUnreadMessages: settings.maxUnreadWebSocketMessages)
        channel.attach(sink: HTTPServerWebSocketSink(connection: self))
        let socket = WebSocketConnection(request: request, channel: channel, closeTimeout: settings.closeHandshakeTimeout)
        let webSocket = HTTPServerWebSocket(connection: self, socket: socket,
                                            maxMessageSize: settings.maxWebSocketMessageSize)
        self.webSocket = webSocket
        machine.upgraded()
        armDeadline()
        server.webSocketOpened(socket)
        if !leftover.isEmpty { webSocket.received(leftover) }
        let loop = loop
        Task {
            await route.handler(socket)
            await socket.close()
            // The handshake is over, or the peer never answered it: the TCP connection goes now.
            loop.execute { self.closeWhenWritten() }
        }
    }

    /// Queues WebSocket bytes within the per-connection budget; `completion` learns whether they were written.
    func sendWebSocketBytes(_ bytes: Data, completion: ((Bool) -> Void)?) -> Bool {
        guard !isClosed, webSocket != nil, !exceedsBudget(adding: bytes.count) else {
            completion?(false)
            return false
        }
        write(bytes, completion: completion)
        return true
    }
}

extension HTTPServerResponse {
    /// The body of a `.data` response (empty for streamed ones), for refusals written whole.
    var bodyData: Data {
        if case .data(let data) = body { return data }
        return Data()
    }
}
