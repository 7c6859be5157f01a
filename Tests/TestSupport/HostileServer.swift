import Foundation
import SwitchboardCore
import SwitchboardNet

/// A server that misbehaves on purpose, for hostile-peer tests: each request is answered by the first script rule
/// whose method and path prefix match (garbage, wrong JSON types, a 429 with `Retry-After`, a huge or endless body,
/// a slow drip, or a handler of the test's own); WebSocket paths run scripts that send what a test wants (garbage
/// frames, duplicated or out-of-order events). Built on `HTTPServer`'s public API only.
///
/// Rules given a count answer that many requests and are then used up, so "two 429s, then the real answer" is two
/// rules; a request no rule matches gets 404. The server counts what it served and the body bytes its streamed
/// answers wrote, so a test can show an endless answer was cut rather than read forever.
public final class HostileServer: Sendable {
    /// How one request is answered.
    public enum Behaviour: Sendable {
        /// A complete answer.
        case answer(status: Int, headers: HTTPHeaders, body: Data)
        /// `status` and then a chunked body that never ends: `chunk` again and again until the client goes away.
        case endless(status: Int, headers: HTTPHeaders, chunk: Data)
        /// `chunk` every `interval`, `count` times (nil: until the client goes away), then the end of the body.
        case drip(status: Int, headers: HTTPHeaders, chunk: Data, interval: Duration, count: Int?)
        /// `body`, then the stream held open (`heartbeat` written every `interval`) until the client goes away.
        case holding(status: Int, headers: HTTPHeaders, body: Data, heartbeat: Data, interval: Duration)
        /// The test's own handler.
        case handler(HTTPServer.Handler)

        /// 200 with `json` as `application/json` (any text: it need not be valid JSON, nor of the expected shape).
        public static func json(_ json: String, status: Int = 200) -> Behaviour {
            .answer(status: status, headers: ["Content-Type": "application/json"], body: Data(json.utf8))
        }

        /// 200 `application/json` whose body is `count` bytes that are not JSON, nor UTF-8 (deterministic).
        public static func garbage(count: Int = 4096, status: Int = 200) -> Behaviour {
            var generator = SeededGenerator(seed: UInt64(count))
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) | 0x80 }
            return .answer(status: status, headers: ["Content-Type": "application/json"], body: Data(bytes))
        }

        /// 429 with `Retry-After: <retryAfter>` (delay-seconds or an HTTP-date) and a JSON error body.
        public static func rateLimited(retryAfter: String, body: String = #"{"message":"slow down"}"#) -> Behaviour {
            .answer(status: 429, headers: ["Retry-After": retryAfter, "Content-Type": "application/json"], body: Data(body.utf8))
        }

        /// 200 `application/json` starting a JSON array and then never ending (chunks of `chunkSize` bytes).
        public static func endlessJSON(chunkSize: Int = 64 * 1024) -> Behaviour {
            let element = Data("{\"id\":\"00000000-0000-0000-0000-000000000000\",\"pad\":\"".utf8)
            var chunk = Data("[".utf8) + element
            chunk.append(Data(repeating: UInt8(ascii: "x"), count: max(1, chunkSize - chunk.count)))
            return .endless(status: 200, headers: ["Content-Type": "application/json"], chunk: chunk)
        }
    }

    /// One scripted rule.
    private struct Rule: Sendable {
        var method: HTTPMethod?
        var path: String
        var remaining: Int?
        var behaviour: Behaviour
    }

    /// What the server counted.
    private struct Counters: Sendable {
        var requests: [(method: HTTPMethod, path: String)] = []
        var streamedBytes = 0
        var openStreams = 0
    }

    /// The underlying server.
    public let server: HTTPServer
    private let rules = Locked<[Rule]>([])
    private let counters = Locked(Counters())

    /// A stopped server (with `configuration`, e.g. for a handler timeout); add rules, then `start()`.
    public init(configuration: HTTPServer.Configuration = HTTPServer.Configuration()) {
        server = HTTPServer(configuration: configuration)
        for method in [HTTPMethod.get, .head, .post, .put, .patch, .delete, .options] {
            server.route(method, "/") { [weak self] request in
                guard let self else { return .text("gone", status: 503) }
                return try await self.answer(request)
            }
        }
    }

    /// Answers the next `times` requests (nil: every one) of `method` (nil: any) on `path` and below with `behaviour`;
    /// rules are tried in the order added.
    public func on(_ method: HTTPMethod?, _ path: String, times: Int? = nil, _ behaviour: Behaviour) {
        rules.withLock { $0.append(Rule(method: method, path: path, remaining: times, behaviour: behaviour)) }
    }

    /// Runs `script` for each WebSocket upgrade on `path` and below (the connection closes when it returns).
    public func webSocket(_ path: String, script: @escaping HTTPServer.WebSocketHandler) {
        server.webSocket(path, handler: script)
    }

    /// Starts listening on a free loopback port; returns the base URL.
    @discardableResult
    public func start() throws -> URL {
        let port = try server.start()
        return URL(string: "http://127.0.0.1:\(port)")!
    }

    /// The base URL while running.
    public var baseURL: URL? { server.port.map { URL(string: "http://127.0.0.1:\($0)")! } }

    /// Stops the server (streams still open end).
    public func stop() async { await server.stop() }

    /// Runs `body` with a started server, stopping it afterwards whatever happens.
    public static func with<T>(configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
                               _ body: (HostileServer, URL) async throws -> T) async throws -> T {
        let hostile = HostileServer(configuration: configuration)
        let url = try hostile.start()
        return try await withCleanup({ try await body(hostile, url) }, cleanup: { await hostile.stop() })
    }

    /// How many requests of `method` (any when nil) reached `path` or below (any path when nil).
    public func requestCount(_ path: String? = nil, method: HTTPMethod? = nil) -> Int {
        counters.withLock { counters in
            counters.requests.filter { request in
                (method == nil || request.method == method) && path.map { Self.covers($0, request.path) } ?? true
            }.count
        }
    }

    /// The body bytes streamed answers (`endless`, `drip`) have written so far.
    public var streamedBytes: Int { counters.withLock { $0.streamedBytes } }

    /// How many streamed answers are still writing.
    public var openStreams: Int { counters.withLock { $0.openStreams } }

    // MARK: Answering

    private func answer(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        counters.withLock { $0.requests.append((request.method, request.path)) }
        let behaviour: Behaviour? = rules.withLock { rules in
            guard let index = rules.firstIndex(where: { rule in
                (rule.method == nil || rule.method == request.method || (rule.method == .get && request.method == .head))
                    && Self.covers(rule.path, request.path) && rule.remaining.map { $0 > 0 } ?? true
            }) else { return nil }
            if let remaining = rules[index].remaining { rules[index].remaining = remaining - 1 }
            return rules[index].behaviour
        }
        switch behaviour {
        case nil:
            return .json(Data(#"{"message":"no hostile rule for this path"}"#.utf8), status: 404)
        case .answer(let status, let headers, let body):
            return HTTPServerResponse(status: status, headers: headers, body: body)
        case .handler(let handler):
            return try await handler(request)
        case .endless(let status, let headers, let chunk):
            return HTTPServerResponse(status: status, headers: headers, body: .writer { [self] writer in
                try await stream(chunk, to: writer, count: nil, interval: nil)
            })
        case .drip(let status, let headers, let chunk, let interval, let count):
            return HTTPServerResponse(status: status, headers: headers, body: .writer { [self] writer in
                try await stream(chunk, to: writer, count: count, interval: interval)
            })
        case .holding(let status, let headers, let body, let heartbeat, let interval):
            return HTTPServerResponse(status: status, headers: headers, body: .writer { [self] writer in
                try await stream(body, to: writer, count: 1, interval: nil)
                try await stream(heartbeat, to: writer, count: nil, interval: interval)
            })
        }
    }

    /// Writes `chunk` `count` times (nil: until the client goes away), waiting `interval` after each, counting bytes.
    private func stream(_ chunk: Data, to writer: HTTPServerResponseWriter, count: Int?, interval: Duration?) async throws {
        counters.withLock { $0.openStreams += 1 }
        defer { counters.withLock { $0.openStreams -= 1 } }
        var sent = 0
        while !Task.isCancelled, count.map({ sent < $0 }) ?? true {
            try await writer.write(chunk)
            counters.withLock { $0.streamedBytes += chunk.count }
            sent += 1
            if let interval { try await Task.sleep(for: interval) }
        }
    }

    /// Whether the rule path `prefix` covers `path` on a segment boundary (`/` covers everything).
    private static func covers(_ prefix: String, _ path: String) -> Bool {
        prefix == "/" || path == prefix || path.hasPrefix(prefix.hasSuffix("/") ? prefix : prefix + "/")
    }
}
