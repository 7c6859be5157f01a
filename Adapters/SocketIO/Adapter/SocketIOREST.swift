import Foundation
import SwitchboardCore
import SwitchboardNet

/// The adapter's REST client: builds requests with the bearer token, maps WIRE.md's error bodies to core errors.
final class SocketIOREST: Sendable {
    /// The most bytes of one answer read (unless a request sets its own): a larger or endless body is cut there.
    let maximumResponseBytes: Int
    let baseURL: URL
    let http: HTTPClient
    private let token: Locked<String>

    /// A client for the server at `baseURL` signed in with `token`.
    init(baseURL: URL, token: String, http: HTTPClient, maximumResponseBytes: Int = 16 << 20) {
        self.maximumResponseBytes = maximumResponseBytes
        self.baseURL = baseURL
        self.http = http
        self.token = Locked(token)
    }

    /// The bearer token in use.
    var currentToken: String { token.withLock { $0 } }

    /// Replaces the bearer token.
    func setToken(_ value: String) { token.withLock { $0 = value } }

    /// Characters left unescaped in a path segment or query component.
    private static let allowed = RESTURL.allowedCharacters(plus: "-._~@:")

    /// Percent-encodes one path segment or query component.
    static func encode(_ text: String) -> String { RESTURL.encode(text, allowed: allowed) }

    /// The URL of `path` (segments already encoded) below the base, with `query`.
    func url(_ path: String, _ query: [(String, String)] = []) -> URL {
        RESTURL.url(base: baseURL, path: path, query: query, allowed: Self.allowed)
    }

    /// `/conversations/{id}/messages[/{mid}[/suffix]]`.
    func messagesPath(_ conversation: ConversationID, _ message: RemoteID? = nil, _ suffix: String? = nil) -> String {
        var path = "/conversations/\(Self.encode(conversation.rawValue))/messages"
        if let message { path += "/\(Self.encode(message.rawValue))" }
        if let suffix { path += "/\(suffix)" }
        return path
    }

    /// Whether `url` is on the server's origin (only then does it get the bearer token).
    func isSameOrigin(_ url: URL) -> Bool {
        url.scheme?.lowercased() == baseURL.scheme?.lowercased() && url.host?.lowercased() == baseURL.host?.lowercased()
            && (url.port ?? Self.defaultPort(url.scheme)) == (baseURL.port ?? Self.defaultPort(baseURL.scheme))
    }

    private static func defaultPort(_ scheme: String?) -> Int { scheme?.lowercased() == "https" ? 443 : 80 }

    /// Sends a JSON request (or none) and returns the parsed JSON answer; non-2xx answers throw core errors.
    func json(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: JSONValue? = nil) async throws
        -> (status: Int, value: JSONValue) {
        var headers = HTTPHeaders()
        if body != nil { headers.add("Content-Type", "application/json") }
        let request = HTTPRequest(method: method, url: url(path, query), headers: headers,
                                  body: body.map { Data($0.serialized.utf8) }, timeout: .seconds(30))
        let response = try await send(request)
        guard let value = JSONValue.parseOrNil(response.body) else {
            throw SwitchboardError(.transport, "the server answered \(method) \(path) with invalid JSON", retryable: true)
        }
        return (response.status, value)
    }

    /// Sends `request` with the bearer token (same origin only; none while the token is empty, as when registering);
    /// a non-2xx answer becomes a `SwitchboardError`.
    func send(_ request: HTTPRequest, upload: Data? = nil, progress: (@Sendable (Double) -> Void)? = nil) async throws
        -> HTTPResponse {
        var request = request
        let token = currentToken
        if isSameOrigin(request.url), !token.isEmpty {
            request.headers.setBearer(token)
        }
        request.maximumResponseBytes = request.maximumResponseBytes ?? maximumResponseBytes
        let response: HTTPResponse
        do {
            if let upload {
                response = try await http.upload(request, body: upload, progress: progress ?? { _ in })
            } else {
                response = try await http.send(request)
            }
        } catch {
            // As the source classifies it: a failed transfer is a retryable `transport` error, an answer cut at the
            // size limit likewise, a request that cannot be sent is not, a cancellation is a retryable `cancelled`.
            let classified = SwitchboardError.wrapping(error)
            if classified.code == .cancelled { throw classified }
            if classified.code == .internal {
                throw SwitchboardError(.transport, "request to the Socket.IO-style server failed: \(error)", retryable: true)
            }
            throw SwitchboardError(classified.code, "request to the Socket.IO-style server failed: \(error)",
                                   retryable: classified.isRetryable, retryAfter: classified.retryAfter)
        }
        guard response.isSuccess else { throw Self.error(for: response) }
        return response
    }

    /// The core error for a failed answer, from WIRE.md's `{"error":{"code","message"}}`.
    static func error(for response: HTTPResponse) -> SwitchboardError {
        let body = JSONValue.parseOrNil(response.body)
        let code = body?["error"]?["code"]?.stringValue ?? ""
        let message = body?["error"]?["message"]?.stringValue.map { ServerErrorText.oneLine($0) }
            ?? ServerErrorText.oneLine(response.body)
        let text = "HTTP \(response.status)\(code.isEmpty ? "" : " \(code)"): \(message)"
        switch (response.status, code) {
        // A token the server does not know stays unknown however often it is sent.
        case (401, _): return SwitchboardError(.unauthorized, text)
        case (403, "edit_window_closed"): return SwitchboardError(.editWindowExpired, text)
        case (403, "delete_window_closed"): return SwitchboardError(.deleteWindowExpired, text)
        case (403, "not_sender"): return SwitchboardError(.notOwner, text)
        case (403, "forbidden"): return SwitchboardError(.forbidden, text)
        case (403, _): return SwitchboardError(.refused, text)
        case (404, _): return SwitchboardError(.notFound, text)
        case (409, _): return SwitchboardError(.conflict, text)
        case (413, _): return SwitchboardError(.contentTooLarge, text)
        case (408, _), (429, _): return SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        case (400..<500, _): return SwitchboardError(.invalidArgument, text)
        default: return SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        }
    }
}
