import COpenSSL
import Foundation
import SwitchboardCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A `wss://` connection of our own: a POSIX TCP socket, an OpenSSL client session and a reader thread.
///
/// civetweb 1.15's TLS client cannot load OpenSSL 3, so `wss://` runs here instead. The peer's certificate must
/// chain to the system CAs (or `trustedCertificatesFile`) and match the URL's host (`SSL_set1_host`, or the IP
/// address); TLS 1.2 is the minimum. After the handshake the socket is non-blocking and every `SSL_*` call on
/// the session happens under `lock`, so the reader thread and writers never use the session at the same time.
/// `release` stops and joins the reader thread, then shuts TLS down and frees everything.
final class WebSocketTLSTransport: WebSocketByteSink, @unchecked Sendable {
    // @unchecked: `ssl` and `context` are only used under `lock`; the descriptors never change.
    private let socket: Int32
    private let wakeReader: Int32
    private let wakeWriter: Int32
    private let ssl: OpaquePointer
    private let context: OpaquePointer
    private let lock = NSLock()
    private var isFreed = false
    private let stopping = Atomic<Bool>(false)
    private let releaseStarted = Atomic<Bool>(false)
    private let thread = Locked<pthread_t?>(nil)
    private let handshakeLeftover: [UInt8]

    /// How long one blocking step (TCP connect, TLS handshake, HTTP upgrade, a stalled write) may take.
    static let ioTimeout: Int32 = 10

    private init(socket: Int32, ssl: OpaquePointer, context: OpaquePointer, pipe: (Int32, Int32), leftover: [UInt8]) {
        self.socket = socket
        self.ssl = ssl
        self.context = context
        wakeReader = pipe.0
        wakeWriter = pipe.1
        handshakeLeftover = leftover
    }

    // MARK: Opening

    /// Connects, verifies the server, runs the upgrade handshake; blocking, so call it off the cooperative pool.
    static func open(target: WebSocketClientTarget, trustedCertificatesFile: String?) throws(WebSocketError) -> WebSocketTLSTransport {
        let where_ = "\(target.host):\(target.port)"
        let socket = try connectTCP(host: target.host, port: target.port)
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            close(socket)
            throw WebSocketError(.connectFailed, "\(where_): SSL_CTX_new failed")
        }
        var ssl: OpaquePointer?
        var succeeded = false
        defer {
            if !succeeded {
                if let ssl { SSL_free(ssl) }
                SSL_CTX_free(context)
                close(socket)
            }
        }
        ERR_clear_error()
        guard copenssl_ctx_set_min_tls12(context) == 1 else { throw tlsError(where_, "cannot require TLS 1.2") }
        copenssl_ctx_set_moving_write_buffer(context)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let file = trustedCertificatesFile {
            guard SSL_CTX_load_verify_locations(context, file, nil) == 1 else {
                throw tlsError(where_, "cannot load the trusted certificates file \(file)")
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else { throw tlsError(where_, "cannot load the system CAs") }
        }
        ssl = SSL_new(context)
        guard let ssl else { throw tlsError(where_, "SSL_new failed") }
        guard SSL_set_fd(ssl, socket) == 1 else { throw tlsError(where_, "SSL_set_fd failed") }
        if isIPAddress(target.host) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), target.host) == 1 else {
                throw tlsError(where_, "cannot check the certificate against IP \(target.host)")
            }
        } else {
            guard copenssl_set_sni(ssl, target.host) == 1 else { throw tlsError(where_, "cannot set SNI") }
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, target.host) == 1 else { throw tlsError(where_, "cannot check the host name") }
        }

        let connected = withoutSIGPIPE { SSL_connect(ssl) }
        guard connected == 1 else {
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                let reason = String(cString: X509_verify_cert_error_string(verify))
                throw WebSocketError(.connectFailed, "\(where_): TLS certificate verification failed: \(reason)")
            }
            throw tlsError(where_, "TLS handshake failed")
        }

        let handshake = WebSocketTLSHandshake(target: target)
        let leftover = try upgrade(ssl: ssl, handshake: handshake, where: where_)

        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw WebSocketError(.connectFailed, "pipe failed: \(errno)") }
        for descriptor in fds {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        }
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        succeeded = true
        return WebSocketTLSTransport(socket: socket, ssl: ssl, context: context, pipe: (fds[0], fds[1]), leftover: leftover)
    }

    /// Sends the upgrade request and checks the 101; returns bytes that followed the head (early frames).
    private static func upgrade(ssl: OpaquePointer, handshake: WebSocketTLSHandshake, where where_: String) throws(WebSocketError) -> [UInt8] {
        let written = handshake.request.withUnsafeBytes { bytes in
            withoutSIGPIPE { SSL_write(ssl, bytes.baseAddress, Int32(bytes.count)) }
        }
        guard written == Int32(handshake.request.count) else { throw tlsError(where_, "sending the upgrade request failed") }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = SSL_read(ssl, &buffer, Int32(buffer.count))
            guard count > 0 else { throw tlsError(where_, "the connection ended during the upgrade handshake") }
            received.append(contentsOf: buffer[0..<Int(count)])
            if let end = WebSocketTLSHandshake.headEnd(in: received) {
                do {
                    try handshake.validate(head: Array(received[..<end]))
                } catch {
                    throw WebSocketError(.connectFailed, "\(where_): \(error.message)")
                }
                return Array(received[end...])
            }
            guard received.count <= WebSocketTLSHandshake.maxHeadSize else {
                throw WebSocketError(.connectFailed, "\(where_): the upgrade response head is too large")
            }
        }
    }

    /// A blocking TCP connection (every address `getaddrinfo` returns, in order), with I/O timeouts set.
    private static func connectTCP(host: String, port: Int) throws(WebSocketError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw WebSocketError(.connectFailed, "\(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            entry = current.pointee.ai_next
            let descriptor = Glibc.socket(current.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard descriptor >= 0 else { lastError = errno; continue }
            var timeout = timeval(tv_sec: Int(ioTimeout), tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 { return descriptor }
            lastError = errno
            close(descriptor)
        }
        throw WebSocketError(.connectFailed, "\(host):\(port): \(String(cString: strerror(lastError)))")
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
    }

    /// A `.connectFailed` error with OpenSSL's first queued error appended (the queue is then cleared).
    private static func tlsError(_ where_: String, _ what: String) -> WebSocketError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return WebSocketError(.connectFailed, "\(where_): \(what)") }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let detail = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return WebSocketError(.connectFailed, "\(where_): \(what) (TLS: \(detail))")
    }

    /// Runs `body` with SIGPIPE blocked on this thread and swallows one it raised (OpenSSL writes with `write`).
    static func withoutSIGPIPE<T>(_ body: () -> T) -> T {
        var block = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGPIPE)
        var pending = sigset_t()
        sigpending(&pending)
        let alreadyPending = sigismember(&pending, SIGPIPE) == 1
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        let result = body()
        if !alreadyPending {
            sigpending(&pending)
            if sigismember(&pending, SIGPIPE) == 1 {
                var zero = timespec(tv_sec: 0, tv_nsec: 0)
                _ = sigtimedwait(&block, nil, &zero)
            }
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return result
    }

    // MARK: Reading

    /// Starts the reader thread, which feeds `channel` until the connection ends or `release` stops it.
    func startReading(channel: WebSocketChannel, maxMessageSize: Int) {
        let body: @Sendable () -> Void = { [self] in readLoop(channel: channel, maxMessageSize: maxMessageSize) }
        guard let handle = JoinableThread.start(name: "wss-client", body) else {
            channel.connectionEnded()
            return
        }
        thread.withLock { $0 = handle }
    }

    private func readLoop(channel: WebSocketChannel, maxMessageSize: Int) {
        // A frame's payload is at most a message; control frames are checked by the state machine.
        var parser = WebSocketFrameParser(maxFramePayload: max(maxMessageSize, 125))
        parser.append(handshakeLeftover)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var keepReading = deliver(&parser, to: channel)
        while keepReading && !stopping.load(ordering: .acquiring) {
            let (count, error) = lock.withLock { () -> (Int32, Int32) in
                guard !isFreed else { return (0, SSL_ERROR_SSL) }
                ERR_clear_error()
                let count = Self.withoutSIGPIPE { SSL_read(ssl, &buffer, Int32(buffer.count)) }
                return (count, count > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, count))
            }
            if count > 0 {
                parser.append(buffer[0..<Int(count)])
                keepReading = deliver(&parser, to: channel)
            } else if error == SSL_ERROR_WANT_READ {
                keepReading = waitFor(Int16(POLLIN))
            } else if error == SSL_ERROR_WANT_WRITE {
                keepReading = waitFor(Int16(POLLOUT))
            } else {
                keepReading = false
            }
        }
        channel.connectionEnded()
    }

    /// Hands every complete frame to the channel; `false` once reading must stop.
    private func deliver(_ parser: inout WebSocketFrameParser, to channel: WebSocketChannel) -> Bool {
        while true {
            do {
                guard let frame = try parser.next() else { return true }
                guard channel.frameReceived(bits: frame.bits, payload: frame.payload) else { return false }
            } catch {
                channel.failFromReader(code: error.code, reason: error.reason)
                return false
            }
        }
    }

    /// Waits until the socket is ready for `events` or `release` wakes us; `false` when woken to stop.
    private func waitFor(_ events: Int16) -> Bool {
        var polls = [pollfd(fd: socket, events: events, revents: 0), pollfd(fd: wakeReader, events: Int16(POLLIN), revents: 0)]
        while true {
            let ready = poll(&polls, 2, -1)
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { return false }
            return polls[1].revents == 0
        }
    }

    // MARK: Writing and releasing

    /// Writes one whole frame with a single `SSL_write` (retried, never split), or returns `false`.
    func write(_ bytes: Data) -> Bool {
        lock.withLock {
            guard !isFreed else { return false }
            return bytes.withUnsafeBytes { raw -> Bool in
                while true {
                    ERR_clear_error()
                    let count = Self.withoutSIGPIPE { SSL_write(ssl, raw.baseAddress, Int32(raw.count)) }
                    if count == Int32(raw.count) { return true }
                    let error = SSL_get_error(ssl, count)
                    let events: Int16
                    if error == SSL_ERROR_WANT_WRITE {
                        events = Int16(POLLOUT)
                    } else if error == SSL_ERROR_WANT_READ {
                        events = Int16(POLLIN)
                    } else {
                        return false
                    }
                    var poller = pollfd(fd: socket, events: events, revents: 0)
                    guard poll(&poller, 1, Self.ioTimeout * 1000) > 0 else { return false }
                }
            }
        }
    }

    /// Stops and joins the reader thread, sends TLS close_notify, frees the session and closes every descriptor.
    func release() {
        guard !releaseStarted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopping.store(true, ordering: .releasing)
        var byte: UInt8 = 1
        _ = Glibc.write(wakeWriter, &byte, 1)
        if let handle = thread.withLock({ handle -> pthread_t? in
            defer { handle = nil }
            return handle
        }) {
            pthread_join(handle, nil)
        }
        lock.withLock {
            guard !isFreed else { return }
            isFreed = true
            ERR_clear_error()
            _ = Self.withoutSIGPIPE { SSL_shutdown(ssl) }
            SSL_free(ssl)
            SSL_CTX_free(context)
            ERR_clear_error()
            close(socket)
        }
        close(wakeReader)
        close(wakeWriter)
    }
}

/// The closure a reader thread runs, boxed so it can travel through `pthread_create`'s `void *`.
