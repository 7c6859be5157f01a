import CLibUV
import Foundation

/// One accepted TCP connection of an `HTTPServer`, read and written on the server's event loop.
///
/// Everything here runs on the loop's thread (`@unchecked Sendable` only so jobs can name it). Requests are parsed
/// by `HTTPRequestParser`, timing is decided by `HTTPConnectionMachine`; this type carries out their decisions
/// with libuv: reads, writes, one timer, and the close. Handlers run as Swift tasks through `HTTPServerExchange`.
final class HTTPServerConnection: @unchecked Sendable {
    let loop: ServerEventLoop
    let server: HTTPServerListener
    let tcp: UnsafeMutablePointer<uv_tcp_t>
    private let timer: UnsafeMutablePointer<uv_timer_t>
    /// Runs while bytes are queued: fires when the peer has taken none of them for `writeTimeout`.
    private let stallTimer: UnsafeMutablePointer<uv_timer_t>
    /// The peer's address and port.
    let remote: (address: String, port: Int)
    var machine: HTTPConnectionMachine
    private let parser: HTTPRequestParser
    private var configuration: HTTPServer.Configuration { server.configuration }

    /// Bytes read while a request was being answered (pipelined requests); parsed once it is.
    private var pending: [UInt8] = []
    private var head: HTTPServerRequestHead?
    private var body = Data()
    private var exchange: HTTPServerExchange?
    private var response = ResponseState()
    private var isReading = false
    private var peerFinished = false
    private(set) var isClosed = false
    private var openHandles = 0
    private var queuedBytes = 0
    private var closeWhenFlushed = false
    /// Set once upgraded.
    var webSocket: HTTPServerWebSocket?
    /// Whether the connection was admitted (and so counts toward its client's limit).
    var countsTowardLimit = false

    private struct ResponseState {
        var chunked = false
        var keepAlive = false
        var heartbeat: Data?
    }

    /// The most unparsed pipelined bytes kept while a request is answered; beyond that, reading pauses.
    private static let maxPendingBytes = 64 * 1024

    /// A connection for the just-accepted `tcp` handle (already initialised on the loop).
    init(tcp: UnsafeMutablePointer<uv_tcp_t>, remote: (address: String, port: Int), server: HTTPServerListener) {
        self.tcp = tcp
        self.remote = remote
        self.server = server
        self.loop = server.loop
        timer = .allocate(capacity: 1)
        stallTimer = .allocate(capacity: 1)
        let settings = server.configuration
        machine = HTTPConnectionMachine(timeouts: .init(
            request: settings.requestTimeout, keepAlive: settings.keepAliveTimeout, handler: settings.handlerTimeout,
            webSocketPing: settings.webSocketPingInterval, linger: .seconds(1)))
        parser = HTTPRequestParser(limits: .init(maxHeadBytes: settings.maxRequestHeadSize,
                                                 maxHeaderFields: settings.maxHeaderFields,
                                                 maxBodyBytes: settings.maxRequestBodySize))
        uv_timer_init(loop.loop, timer)
        uv_timer_init(loop.loop, stallTimer)
        openHandles = 3
        let me = Unmanaged.passUnretained(self).toOpaque()
        tcp.pointee.data = me
        timer.pointee.data = me
        stallTimer.pointee.data = me
        uv_tcp_nodelay(tcp, 1)
    }

    private static func from(_ pointer: UnsafeMutableRawPointer?) -> HTTPServerConnection {
        Unmanaged<HTTPServerConnection>.fromOpaque(pointer!).takeUnretainedValue()
    }

    // MARK: Reading

    /// Starts reading and the first request's deadline.
    func start() {
        armDeadline()
        startReading()
    }

    private func startReading() {
        guard !isReading, !isClosed else { return }
        isReading = true
        uv_read_start(UV.stream(tcp), { handle, _, buffer in
            let connection = HTTPServerConnection.from(handle!.pointee.data)
            buffer!.pointee = uv_buf_init(connection.loop.readBuffer.baseAddress!.assumingMemoryBound(to: CChar.self),
                                          UInt32(connection.loop.readBuffer.count))
        }, { stream, count, buffer in
            let connection = HTTPServerConnection.from(stream!.pointee.data)
            if count > 0 {
                connection.received(UnsafeRawBufferPointer(start: buffer!.pointee.base, count: count))
            } else if count < 0 {
                connection.peerEnded()
            }
        })
    }

    func stopReading() {
        guard isReading, !isClosed else { return }
        isReading = false
        uv_read_stop(UV.stream(tcp))
    }

    private func received(_ bytes: UnsafeRawBufferPointer) {
        if machine.bytesArrived() { armDeadline() }
        switch machine.phase {
        case .webSocket:
            webSocket?.received(bytes)
        case .lingering, .closed:
            return
        case .handling, .streaming:
            pending.append(contentsOf: bytes)
            if pending.count > Self.maxPendingBytes { stopReading() }
        case .waiting, .receiving:
            if pending.isEmpty {
                parse(bytes)
            } else {
                pending.append(contentsOf: bytes)
                parsePending()
            }
        }
    }

    private func parsePending() {
        let bytes = pending
        pending = []
        bytes.withUnsafeBytes { parse($0) }
    }

    private func parse(_ bytes: UnsafeRawBufferPointer) {
        let output = parser.feed(bytes)
        var upgrade = false
        var complete = false
        for event in output.events {
            switch event {
            case .head(var found, let isUpgrade):
                found.remoteAddress = remote.address
                found.remotePort = remote.port
                head = found
                body = Data()
                upgrade = isUpgrade
                if !isUpgrade && output.failure == nil && found.expectsContinue
                    && (found.contentLength > 0 || found.isChunked) {
                    write(HTTPResponseEncoder.continueHead)
                }
            case .body(let data):
                body.append(data)
            case .end:
                complete = true
            }
        }
        if let failure = output.failure {
            refuse(failure)
            return
        }
        let rest = UnsafeRawBufferPointer(rebasing: bytes[output.consumed...])
        if upgrade, let head {
            if head.headers["Upgrade"]?.lowercased() == "websocket" {
                upgradeToWebSocket(head, leftover: rest)
                return
            }
            // Another protocol (`h2c`, say) is offered: ignore the offer and answer over HTTP/1.1, as RFC 9110
            // allows. http-parser stopped at the head, so a body cannot be read; such a request is refused.
            guard head.contentLength <= 0 && !head.isChunked else {
                refuse(HTTPRequestParser.Failure(status: 400, reason: "a body with an unsupported Upgrade"))
                return
            }
            parser.reset()
            complete = true
        }
        guard complete else { return }
        pending = Array(rest)
        if pending.count > Self.maxPendingBytes { stopReading() }
        dispatch()
    }

    /// The peer closed its side or the connection failed.
    private func peerEnded() {
        stopReading()
        switch machine.phase {
        case .handling:
            // A client may half-close after its request; it still gets the answer, then the connection closes.
            peerFinished = true
        default:
            closeWhenWritten()
        }
    }

    // MARK: Answering

    private func dispatch() {
        guard let head else { return }
        machine.requestComplete()
        armDeadline()
        let isHead = head.method == .head
        let keepAlive = head.allowsKeepAlive(configured: configuration.keepAlive)
        switch server.routes.decide(method: head.method, path: head.path) {
        case .handler(let handler):
            let exchange = HTTPServerExchange(connection: self)
            self.exchange = exchange
            exchange.start(handler, request: head.request(body: body))
            body = Data()
        case .refusal(let status, let text, let headers):
            answer(HTTPResponseEncoder.text(status: status, text, headers: headers, keepAlive: keepAlive, isHead: isHead),
                   keepAlive: keepAlive)
        }
    }

    /// Writes a complete answer to the current request and finishes it.
    private func answer(_ bytes: Data, keepAlive: Bool) {
        write(bytes)
        finishResponse(keepAlive: keepAlive)
    }

    /// An event from the current request's handler task.
    func exchangeEvent(_ event: HTTPServerExchange.Event, from source: HTTPServerExchange) {
        guard !isClosed, source === exchange else { return }
        switch event {
        case .response(let answered):
            guard machine.phase == .handling else { return }
            respond(answered)
        case .end:
            guard case .streaming = machine.phase else { return }
            if response.chunked { write(HTTPResponseEncoder.lastChunk) }
            finishResponse(keepAlive: response.keepAlive)
        case .failed:
            // No terminating chunk: the client sees a truncated body, not a complete one.
            close()
        }
    }

    private func respond(_ answered: HTTPServerResponse) {
        guard let head else { return }
        let isHead = head.method == .head
        let status = (100...999).contains(answered.status) ? answered.status : 500
        let noBody = status < 200 || status == 204 || status == 304
        let keepAlive = head.allowsKeepAlive(configured: configuration.keepAlive) && !peerFinished
            && !(answered.headers["Connection"]?.lowercased().contains("close") ?? false) && server.isRunning
        switch answered.body {
        case .data(let data):
            var bytes = HTTPResponseEncoder.head(status: status, headers: answered.headers,
                                                 framing: noBody ? .none : .length(data.count), keepAlive: keepAlive)
            if !isHead && !noBody { bytes.append(data) }
            answer(bytes, keepAlive: keepAlive)
        case .stream, .writer:
            let chunked = head.httpVersion == "1.1"
            guard !isHead && !noBody else {
                let framing: HTTPServerFraming = noBody ? .none : .chunked
                answer(HTTPResponseEncoder.head(status: status, headers: answered.headers, framing: framing,
                                                keepAlive: keepAlive && chunked), keepAlive: keepAlive && chunked)
                return
            }
            response = ResponseState(chunked: chunked, keepAlive: keepAlive && chunked,
                                     heartbeat: answered.heartbeat.flatMap { $0.chunk.isEmpty ? nil : $0.chunk })
            write(HTTPResponseEncoder.head(status: status, headers: answered.headers,
                                           framing: chunked ? .chunked : .untilClose, keepAlive: response.keepAlive))
            machine.responseStarted(streamed: true, heartbeat: response.heartbeat == nil ? nil : answered.heartbeat?.interval)
            armDeadline()
            // A stream from a client that already went away ends at once.
            if peerFinished { close() }
        }
    }

    /// A chunk of the current streamed response; `completion` learns whether it was written.
    func streamChunk(_ data: Data, from source: HTTPServerExchange, completion: @escaping (Bool) -> Void) {
        guard !isClosed, source === exchange, case .streaming = machine.phase, !exceedsBudget(adding: data.count) else {
            completion(false)
            return
        }
        write(response.chunked ? HTTPResponseEncoder.chunk(data) : data, completion: completion)
        armDeadline()
    }

    private func finishResponse(keepAlive: Bool) {
        exchange?.close()
        exchange = nil
        head = nil
        guard machine.responseFinished(keepAlive: keepAlive) else {
            closeWhenWritten()
            return
        }
        armDeadline()
        parser.next()
        if !pending.isEmpty {
            _ = machine.bytesArrived()
            armDeadline()
            parsePending()
        }
        if !isClosed && pending.count <= Self.maxPendingBytes { startReading() }
    }

    /// Refuses a connection over the server's limits with 503, without reading from it.
    func refuseConnection() {
        write(HTTPResponseEncoder.text(status: 503, "too many connections\n", keepAlive: false))
        closeWhenWritten()
    }

    /// Answers a request that cannot be served (malformed, too large, too slow) and closes; a refused body is
    /// drained for a moment first, so the answer is not lost to a reset.
    private func refuse(_ failure: HTTPRequestParser.Failure) {
        let isHead = head?.method == .head
        write(HTTPResponseEncoder.text(status: failure.status, failure.reason + "\n", keepAlive: false, isHead: isHead))
        exchange?.close()
        exchange = nil
        if failure.status == 413 && !(head?.expectsContinue ?? false) {
            machine.linger()
            armDeadline()
        } else {
            closeWhenWritten()
        }
    }

    // MARK: Deadlines

    func armDeadline() {
        guard !isClosed else { return }
        uv_timer_stop(timer)
        guard let (after, _) = machine.deadline else { return }
        uv_timer_start(timer, { timer in
            HTTPServerConnection.from(timer!.pointee.data).deadlinePassed()
        }, UV.milliseconds(after), 0)
    }

    private func deadlinePassed() {
        let phase = machine.phase
        switch machine.expired() {
        case .close?:
            if phase == .receiving {
                write(HTTPResponseEncoder.text(status: 408, "request not received in time\n", keepAlive: false))
                closeWhenWritten()
            } else {
                close()
            }
        case .answerTimedOut?:
            write(HTTPResponseEncoder.text(status: 503, "the handler did not answer in time\n", keepAlive: false,
                                           isHead: head?.method == .head))
            exchange?.close()
            exchange = nil
            closeWhenWritten()
        case .heartbeat?:
            if let chunk = response.heartbeat, !exceedsBudget(adding: chunk.count) {
                write(response.chunked ? HTTPResponseEncoder.chunk(chunk) : chunk)
            }
            armDeadline()
        case .ping?:
            webSocket?.ping()
            armDeadline()
        case .rearm?:
            armDeadline()
        case .drop?:
            close()
        case nil:
            break
        }
    }

    // MARK: Shutdown

    /// The server is stopping: an unanswered request gets 503, a stream ends (cleanly when chunked), an idle
    /// connection closes. WebSockets are closed by the server with a close frame first.
    func abort() {
        switch machine.phase {
        case .handling:
            write(HTTPResponseEncoder.text(status: 503, "server stopping\n", keepAlive: false, isHead: head?.method == .head))
            exchange?.close()
            exchange = nil
            closeWhenWritten()
        case .streaming:
            if response.chunked { write(HTTPResponseEncoder.lastChunk) }
            exchange?.close()
            exchange = nil
            closeWhenWritten()
        case .webSocket:
            break
        default:
            close()
        }
    }

    // MARK: Writing and closing

    /// Queues `bytes`; `completion` learns whether they reached the kernel. A failed write closes the connection.
    func write(_ bytes: Data, completion: ((Bool) -> Void)? = nil) {
        guard !bytes.isEmpty else {
            completion?(!isClosed)
            return
        }
        guard !isClosed else {
            completion?(false)
            return
        }
        let request = ServerWriteRequest(bytes: bytes, connection: self, completion: completion)
        if queuedBytes == 0 { armStallTimer() }
        queuedBytes += bytes.count
        let status = request.start(on: UV.stream(tcp))
        if status != 0 {
            queuedBytes -= bytes.count
            request.finish(ok: false)
            close()
        }
    }

    private func armStallTimer() {
        guard !isClosed else { return }
        uv_timer_start(stallTimer, { timer in
            let connection = HTTPServerConnection.from(timer!.pointee.data)
            connection.configuration.logger.warning("closing the connection from \(connection.remote.address): "
                                                    + "it took no bytes for \(connection.configuration.writeTimeout)")
            connection.close()
        }, UV.milliseconds(configuration.writeTimeout), 0)
    }

    fileprivate func writeFinished(count: Int, ok: Bool) {
        queuedBytes -= count
        // The peer took bytes: it has another `writeTimeout` for the rest.
        if queuedBytes > 0 { armStallTimer() } else if !isClosed { uv_timer_stop(stallTimer) }
        if !ok {
            close()
        } else if closeWhenFlushed && queuedBytes == 0 {
            close()
        }
    }

    /// Closes once everything queued has been written (or, for a peer that does not read, after the close
    /// timeout); reads stop now.
    func closeWhenWritten() {
        guard !isClosed else { return }
        machine.closed()
        stopReading()
        uv_timer_stop(timer)
        guard queuedBytes > 0 else {
            close()
            return
        }
        closeWhenFlushed = true
        uv_timer_start(timer, { timer in HTTPServerConnection.from(timer!.pointee.data).close() },
                       UV.milliseconds(configuration.closeHandshakeTimeout), 0)
    }

    /// Whether `count` more queued bytes would exceed the per-connection budget for bytes in flight; if so, the
    /// peer is not reading and the connection is closed.
    func exceedsBudget(adding count: Int) -> Bool {
        guard queuedBytes + count > configuration.maxBytesInFlightPerConnection else { return false }
        configuration.logger.warning("closing the connection from \(remote.address): more than "
                                     + "\(configuration.maxBytesInFlightPerConnection) bytes unread by the peer")
        close()
        return true
    }

    /// Closes the connection now: pending writes fail, the handler's task is cancelled, a WebSocket ends.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        machine.closed()
        uv_timer_stop(timer)
        uv_timer_stop(stallTimer)
        uv_close(UV.handle(timer)) { handle in HTTPServerConnection.from(handle!.pointee.data).handleClosed() }
        uv_close(UV.handle(stallTimer)) { handle in HTTPServerConnection.from(handle!.pointee.data).handleClosed() }
        uv_close(UV.handle(tcp)) { handle in HTTPServerConnection.from(handle!.pointee.data).handleClosed() }
        exchange?.close()
        exchange = nil
        webSocket?.transportEnded()
    }

    private func handleClosed() {
        openHandles -= 1
        guard openHandles == 0 else { return }
        tcp.deallocate()
        timer.deallocate()
        stallTimer.deallocate()
        server.connectionClosed(self)
    }
}

/// One `uv_write` in flight: the request, a copy of the bytes, and who to tell when it is done.
final class ServerWriteRequest {
    private let request: UnsafeMutablePointer<uv_write_t>
    private let bytes: UnsafeMutableRawBufferPointer
    private let connection: HTTPServerConnection
    private var completion: ((Bool) -> Void)?

    init(bytes data: Data, connection: HTTPServerConnection, completion: ((Bool) -> Void)?) {
        request = .allocate(capacity: 1)
        bytes = .allocate(byteCount: data.count, alignment: 1)
        _ = data.copyBytes(to: bytes.bindMemory(to: UInt8.self))
        self.connection = connection
        self.completion = completion
    }

    /// Starts the write (keeping this object alive until libuv calls back); libuv's status code.
    func start(on stream: UnsafeMutablePointer<uv_stream_t>) -> Int32 {
        request.pointee.data = Unmanaged.passRetained(self).toOpaque()
        var buffer = uv_buf_init(bytes.baseAddress!.assumingMemoryBound(to: CChar.self), UInt32(bytes.count))
        let status = uv_write(request, stream, &buffer, 1) { request, status in
            let write = Unmanaged<ServerWriteRequest>.fromOpaque(request!.pointee.data).takeRetainedValue()
            write.finish(ok: status == 0)
            write.connection.writeFinished(count: write.bytes.count, ok: status == 0)
        }
        if status != 0 { Unmanaged.passUnretained(self).release() }
        return status
    }

    /// Tells the writer once.
    func finish(ok: Bool) {
        let completion = completion
        self.completion = nil
        completion?(ok)
    }

    deinit {
        request.deallocate()
        bytes.deallocate()
    }
}
