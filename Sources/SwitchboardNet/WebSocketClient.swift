import CCivetweb
import Foundation
import SwitchboardCore

/// A WebSocket client: one object, one connection. `ws://` runs on civetweb's `mg_connect_websocket_client`,
/// `wss://` on our own OpenSSL transport (`WebSocketTLSTransport`) with the same frames and closing handshake.
///
/// civetweb (or, for `wss://`, our reader thread) reads each client connection on a thread of its own; `close` (or the peer closing) ends it and
/// `close` returns only after that thread has been joined and the socket closed (`mg_close_connection`). Pings
/// from the server are answered automatically. Drop the object without `close` and it closes with 1001 in the
/// background.
public final class WebSocketClient: Sendable {
    /// Client settings.
    public struct Configuration: Sendable, Hashable {
        /// The largest message accepted after reassembly; bigger ones close the connection with 1009.
        public var maxMessageSize = 16 << 20
        /// How long `close` waits for the server's close frame before tearing the connection down.
        public var closeTimeout: Duration = .seconds(5)
        /// How long `ping` waits for the pong.
        public var pingTimeout: Duration = .seconds(10)
        /// A PEM file of CA certificates that `wss://` servers must chain to instead of the system's default CAs.
        public var trustedCertificatesFile: String?
        /// How many received messages may wait in `frames` unread: a server that gets further ahead (a flood, or a
        /// reader that stopped) is cut off with 1008 and `frames` ends after the queued ones, so memory stays
        /// bounded; nil: no limit. Our adapters treat the end like any lost connection: reconnect and catch up.
        public var maxUnreadMessages: Int? = 16_384

        /// The defaults.
        public init() {}
    }

    /// Whether `wss://` can work here: always, since it runs over our own OpenSSL transport rather than civetweb's.
    public static var isTLSAvailable: Bool { true }

    /// The settings the client was made with.
    public let configuration: Configuration
    private let core: WebSocketClientCore

    /// A client that is not connected yet.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        core = WebSocketClientCore(configuration: configuration)
    }

    deinit {
        core.abandon()
    }

    /// Incoming text and binary messages; the last element is always a `.close` frame, then the stream ends.
    public var frames: AsyncStream<WebSocketFrame> { core.channel.frames }

    /// Whether messages may be sent (connected, and no close frame sent or received).
    public var isOpen: Bool { core.isConnected && core.channel.isOpen }

    /// Connects and completes the opening handshake; extra `headers` are sent with the upgrade request.
    ///
    /// `wss://` verifies the server's certificate chain (system CAs or `trustedCertificatesFile`) and host name,
    /// with TLS 1.2 or newer; any failure throws `.connectFailed`.
    public func connect(url: URL, headers: HTTPHeaders = HTTPHeaders()) async throws {
        let target = try WebSocketClientTarget(url: url, headers: headers)
        try await core.connect(to: target)
    }

    /// Sends a text message.
    public func send(text: String) async throws {
        try core.requireConnected()
        try await core.channel.send(opcode: WebSocketOpcode.text, payload: Data(text.utf8))
    }

    /// Sends a binary message.
    public func send(binary: Data) async throws {
        try core.requireConnected()
        try await core.channel.send(opcode: WebSocketOpcode.binary, payload: binary)
    }

    /// Sends text and binary messages in order as one write; a `.close` among them is refused (use `close`).
    public func send(_ messages: [WebSocketFrame]) async throws {
        try core.requireConnected()
        try await core.channel.send(messages: try WebSocketFrame.wireMessages(messages))
    }

    /// Sends a ping (at most 125 bytes; a unique payload when `nil`) and waits for its pong.
    public func ping(_ payload: Data? = nil) async throws {
        try core.requireConnected()
        try await core.channel.ping(payload: payload, timeout: configuration.pingTimeout)
    }

    /// Runs the closing handshake and releases the connection; returns once the reading thread has been joined.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        await core.shutdown(code: code, reason: reason)
    }
}

/// The client's state, handed to civetweb as callback data (retained until `mg_close_connection` has returned).
final class WebSocketClientCore: Sendable {
    private enum Handle {
        case idle, connecting, failed, released
        case connected(CivetwebHandle)
        case secure(WebSocketTLSTransport)
    }

    private struct State {
        var handle = Handle.idle
        var threadEnded = false
        var releaseStarted = false
    }

    let channel: WebSocketChannel
    private let configuration: WebSocketClient.Configuration
    private let state = Locked(State())
    private let attempted = CivetwebCompletion()
    private let released = CivetwebCompletion()

    init(configuration: WebSocketClient.Configuration) {
        self.configuration = configuration
        channel = WebSocketChannel(role: .client, maxMessageSize: configuration.maxMessageSize,
                                   maxUnreadMessages: configuration.maxUnreadMessages)
    }

    var isConnected: Bool {
        state.withLock { state in
            switch state.handle {
            case .connected, .secure: true
            case .idle, .connecting, .failed, .released: false
            }
        }
    }

    func requireConnected() throws {
        let connected = state.withLock { state -> Bool? in
            switch state.handle {
            case .connected, .secure: true
            case .idle, .connecting, .failed: nil
            case .released: false
            }
        }
        switch connected {
        case true?: return
        case false?: throw WebSocketError(.connectionClosed, "the connection is closed")
        case nil: throw WebSocketError(.notConnected, "call connect(url:headers:) first")
        }
    }

    func connect(to target: WebSocketClientTarget) async throws {
        try state.withLock { state in
            guard case .idle = state.handle else {
                throw WebSocketError(.alreadyConnected, "a WebSocketClient connects once; make a new one")
            }
            state.handle = .connecting
        }
        if target.isSecure {
            try await connectSecure(to: target)
            return
        }
        let caFile = configuration.trustedCertificatesFile
        let result = await CivetwebLibrary.offloaded { self.connectBlocking(to: target, caFile: caFile) }
        try result.get()
    }

    /// `wss://`: our own TCP + OpenSSL transport (civetweb 1.15's TLS client cannot load OpenSSL 3).
    private func connectSecure(to target: WebSocketClientTarget) async throws {
        let caFile = configuration.trustedCertificatesFile
        let result = await CivetwebLibrary.offloaded { () -> Result<WebSocketTLSTransport, WebSocketError> in
            do throws(WebSocketError) {
                return .success(try WebSocketTLSTransport.open(target: target, trustedCertificatesFile: caFile))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .failure(let error):
            fail()
            throw error
        case .success(let transport):
            state.withLock { $0.handle = .secure(transport) }
            channel.attach(sink: transport)
            transport.startReading(channel: channel, maxMessageSize: configuration.maxMessageSize)
            attempted.complete()
        }
    }

    /// The connection attempt failed: the frames stream ends (with a 1006 close) so no reader waits forever.
    private func fail() {
        state.withLock { $0.handle = .failed }
        channel.connectionEnded()
        attempted.complete()
    }

    /// Runs on a Dispatch thread: civetweb connects, sends the upgrade and waits for 101, then starts its thread.
    private func connectBlocking(to target: WebSocketClientTarget, caFile: String?) -> Result<Void, WebSocketError> {
        CivetwebLibrary.ensureInitialized()
        let retained = Unmanaged.passRetained(self).toOpaque()
        var errorText = [CChar](repeating: 0, count: 256)
        let onData: mg_websocket_data_handler = { connection, bits, payload, length, data in
            WebSocketClientCallbacks.data(connection, bits, payload, length, data)
        }
        let onClose: mg_websocket_close_handler = { connection, data in
            WebSocketClientCallbacks.closed(connection, data)
        }
        let pointer: OpaquePointer? = errorText.withUnsafeMutableBufferPointer { errors in
            target.host.withCString { host in
                target.path.withCString { path in
                    Self.withOptionalCString(target.originArgument) { origin in
                        guard target.isSecure else {
                            return mg_connect_websocket_client(host, Int32(target.port), 0, errors.baseAddress,
                                                               errors.count, path, origin, onData, onClose, retained)
                        }
                        return Self.withOptionalCString(caFile) { ca in
                            var options = mg_client_options(host: host, port: Int32(target.port), client_cert: nil,
                                                            server_cert: ca, host_name: host)
                            return mg_connect_websocket_client_secure(&options, errors.baseAddress, errors.count, path,
                                                                      origin, onData, onClose, retained)
                        }
                    }
                }
            }
        }
        guard let pointer else {
            Unmanaged<WebSocketClientCore>.fromOpaque(retained).release()
            fail()
            let message = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return .failure(WebSocketError(.connectFailed, "\(target.host):\(target.port): \(message)"))
        }
        let releaseAtOnce = state.withLock { state -> Bool in
            state.handle = .connected(CivetwebHandle(pointer: pointer))
            // Only attach while civetweb's thread runs; once it ended, `connectionEnded` has cleared the channel.
            if !state.threadEnded { channel.attach(pointer) }
            guard state.threadEnded && !state.releaseStarted else { return false }
            state.releaseStarted = true
            return true
        }
        attempted.complete()
        if releaseAtOnce { DispatchQueue.global().async { self.releaseNow() } }
        return .success(())
    }

    /// civetweb's thread is about to exit (from its close handler): end the channel and free the connection.
    func threadEnded() {
        let releaseAtOnce = state.withLock { state -> Bool in
            state.threadEnded = true
            guard case .connected = state.handle, !state.releaseStarted else { return false }
            state.releaseStarted = true
            return true
        }
        channel.connectionEnded()
        // mg_close_connection joins this very thread, so it must run elsewhere.
        if releaseAtOnce { DispatchQueue.global().async { self.releaseNow() } }
    }

    /// Closing handshake, then `mg_close_connection`; returns when the connection is gone.
    func shutdown(code: WebSocketCloseCode, reason: String) async {
        let connecting = state.withLock { state -> Bool in
            if case .connecting = state.handle { return true }
            return false
        }
        if connecting { await attempted.wait() }
        guard isConnected else {
            if state.withLock({ $0.releaseStarted }) { await released.wait() }
            return
        }
        await channel.close(code: code, reason: reason)
        _ = await channel.ended.wait(timeout: configuration.closeTimeout)
        let startRelease = state.withLock { state -> Bool in
            switch state.handle {
            case .connected, .secure: break
            case .idle, .connecting, .failed, .released: return false
            }
            guard !state.releaseStarted else { return false }
            state.releaseStarted = true
            return true
        }
        if startRelease {
            await CivetwebLibrary.offloaded { self.releaseNow() }
        } else {
            await released.wait()
        }
    }

    /// The public object went away: close with 1001 in the background.
    func abandon() {
        let active = state.withLock { state -> Bool in
            switch state.handle {
            case .connecting, .connected, .secure: true
            case .idle, .failed, .released: false
            }
        }
        guard active else { return }
        Task { await self.shutdown(code: .goingAway, reason: "client released") }
    }

    /// Joins the reading thread (civetweb's, or ours for `wss://`), closes the socket and frees the connection.
    private func releaseNow() {
        let handle = state.withLock { state -> Handle? in
            switch state.handle {
            case .connected, .secure:
                defer { state.handle = .released }
                return state.handle
            case .idle, .connecting, .failed, .released:
                return nil
            }
        }
        switch handle {
        case .connected(let civetweb)?:
            mg_close_connection(civetweb.pointer)
            Unmanaged.passUnretained(self).release()
        case .secure(let transport)?:
            transport.release()
        case .idle?, .connecting?, .failed?, .released?, nil:
            return
        }
        released.complete()
    }

    private static func withOptionalCString<T>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> T) -> T {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }
}

/// The C entry points civetweb's client thread calls; static members of a nonisolated type, context via `Unmanaged`.
enum WebSocketClientCallbacks {
    /// `mg_websocket_data_handler`: one frame from the server; 1 keeps reading, 0 ends the connection.
    static func data(_ connection: OpaquePointer?, _ bits: Int32, _ payload: UnsafeMutablePointer<CChar>?,
                     _ length: Int, _ data: UnsafeMutableRawPointer?) -> Int32 {
        guard let connection, let data else { return 0 }
        let core = Unmanaged<WebSocketClientCore>.fromOpaque(data).takeUnretainedValue()
        return core.channel.frameReceived(on: connection, bits: bits, payload: payload, length: length) ? 1 : 0
    }

    /// `mg_websocket_close_handler`: the read loop ended.
    static func closed(_ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
        guard let data else { return }
        Unmanaged<WebSocketClientCore>.fromOpaque(data).takeUnretainedValue().threadEnded()
    }
}
