import Foundation

/// What a handler answers: a status, header fields and either a whole body or a chunked stream.
public struct HTTPServerResponse: Sendable {
    /// The response body.
    public enum Body: Sendable {
        /// A complete body, sent with `Content-Length`.
        case data(Data)
        /// A body sent chunk by chunk (`Transfer-Encoding: chunked`) as the stream yields; ends when the stream
        /// finishes. If the client goes away, iteration stops, so the stream's `onTermination` runs.
        case stream(AsyncStream<Data>)
        /// A body written by a closure, chunk by chunk; `write` throws once the client has gone. If the closure
        /// throws, the connection closes without the final chunk, so the client sees a truncated body.
        case writer(@Sendable (HTTPServerResponseWriter) async throws -> Void)
    }

    /// Bytes written to an idle stream at a fixed interval, so a vanished client is noticed (a socket gives no
    /// other sign until something is written). For JSON lines, `"\n"` is the usual choice.
    public struct Heartbeat: Sendable, Hashable {
        /// How long the stream may stay silent before `chunk` is written.
        public var interval: Duration
        /// What is written (must not be empty).
        public var chunk: Data

        /// Makes a heartbeat.
        public init(interval: Duration, chunk: Data = Data("\n".utf8)) {
            self.interval = interval
            self.chunk = chunk
        }
    }

    /// The status code, 100–999.
    public var status: Int
    /// Header fields; `Content-Length`, `Transfer-Encoding` and `Date` are set by the server.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Body
    /// For streamed bodies only: what to write while the stream is idle (default none).
    public var heartbeat: Heartbeat?

    /// A response with a complete body.
    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = .data(body)
    }

    /// A response with any kind of body.
    public init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: Body, heartbeat: Heartbeat? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.heartbeat = heartbeat
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ text: String, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Data(text.utf8))
    }

    /// An `application/json` response with already-encoded bytes.
    public static func json(_ data: Data, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: data)
    }

    /// A chunked response that sends each element of `stream` as it arrives.
    public static func stream(_ stream: AsyncStream<Data>, status: Int = 200, headers: HTTPHeaders = HTTPHeaders(),
                              heartbeat: Heartbeat? = nil) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: headers, body: .stream(stream), heartbeat: heartbeat)
    }
}

/// Writes the chunks of a `.writer` body; each `write` returns once civetweb has sent the chunk.
public struct HTTPServerResponseWriter: Sendable {
    let exchange: HTTPServerExchange

    /// Sends one chunk (empty data is skipped); throws `HTTPServerError.clientDisconnected` once the client has gone.
    public func write(_ data: Data) async throws {
        guard await exchange.write(data) else {
            throw HTTPServerError(.clientDisconnected, "the client closed the connection or the server is stopping")
        }
    }
}

/// A server failure: a stable code plus a human-readable message.
public struct HTTPServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The code's name.
        public var description: String { name }

        /// civetweb could not start (for example, the address is in use).
        public static let startFailed = Code("startFailed")
        /// `start()` was called on a server that already started.
        public static let alreadyStarted = Code("alreadyStarted")
        /// The streaming client went away, or the server is stopping.
        public static let clientDisconnected = Code("clientDisconnected")
    }

    /// The kind of failure.
    public let code: Code
    /// Details for people.
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "HTTPServerError.\(code): \(message)" }
}
