import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// The adapter's PostgREST client: builds `/rest/v1` requests with the key and token, maps errors to the core's.
final class SupabaseREST: Sendable {
    let baseURL: URL
    let apiKey: String
    let http: HTTPClient
    /// The user's access token (refreshed through the provider, when there is one).
    let tokens: SupabaseTokenSource
    /// The most bytes of one answer read (unless a request sets its own): a larger or endless body is cut there.
    let maximumResponseBytes: Int

    /// The default answer limit: far above the largest page of rows the adapter asks for.
    static let defaultMaximumResponseBytes = 16 << 20

    /// A client for the server at `baseURL`, authenticating with `apiKey` and the user's tokens.
    init(baseURL: URL, apiKey: String, tokens: SupabaseTokenSource, http: HTTPClient,
         maximumResponseBytes: Int = SupabaseREST.defaultMaximumResponseBytes) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.http = http
        self.tokens = tokens
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// Query-string characters left unescaped: unreserved plus PostgREST's operators and punctuation.
    private static let allowed = RESTURL.allowedCharacters(plus: "-._~,()*:")

    /// Percent-encodes one query component (so `+` in a timestamp stays a plus).
    static func encode(_ text: String) -> String { RESTURL.encode(text, allowed: allowed) }

    /// The URL of `path` (below the base) with `query` items in order.
    func url(_ path: String, _ query: [(String, String)] = []) -> URL {
        RESTURL.url(base: baseURL, path: path, query: query, allowed: Self.allowed)
    }

    /// The headers every request carries (the token is added by `send`).
    func headers(prefer: String? = nil, json: Bool = false) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add("apikey", apiKey)
        if json { headers.add("Content-Type", "application/json") }
        if let prefer { headers.add("Prefer", prefer) }
        return headers
    }

    /// `GET /rest/v1/<table>` with `query`; the rows.
    func select(_ table: String, _ query: [(String, String)]) async throws -> [JSONValue] {
        let request = HTTPRequest(method: .get, url: url("/rest/v1/\(table)", query), headers: headers(), timeout: .seconds(30))
        return try Self.rows(try await send(request))
    }

    /// A write (`POST`/`PATCH`) of `body` to `table` with `query` and `Prefer`; the returned rows.
    func write(_ method: HTTPMethod, _ table: String, query: [(String, String)], body: JSONValue,
               prefer: String) async throws -> [JSONValue] {
        try await write(method, table, query: query, json: Data(body.serialized.utf8), prefer: prefer)
    }

    /// `write` with a body that is JSON text already.
    func write(_ method: HTTPMethod, _ table: String, query: [(String, String)], json: Data,
               prefer: String) async throws -> [JSONValue] {
        let request = HTTPRequest(method: method, url: url("/rest/v1/\(table)", query),
                                  headers: headers(prefer: prefer, json: true), body: json, timeout: .seconds(30))
        return try Self.rows(try await send(request))
    }

    /// Sends `request` with the current token; a 401 with a token provider refreshes the token and retries once;
    /// a non-2xx answer becomes a `SwitchboardError` carrying PostgREST's code and message.
    func send(_ request: HTTPRequest, authorized: Bool = true) async throws -> HTTPResponse {
        var response = try await attempt(request, token: authorized ? await tokens.current() : nil)
        if response.status == 401, authorized, await tokens.canRefresh {
            let fresh = try await tokens.refresh()
            response = try await attempt(request, token: fresh)
        }
        guard response.isSuccess else { throw Self.error(for: response) }
        return response
    }

    private func attempt(_ request: HTTPRequest, token: String?) async throws -> HTTPResponse {
        var request = request
        if let token {
            request.headers.setBearer(token)
        }
        request.maximumResponseBytes = request.maximumResponseBytes ?? maximumResponseBytes
        do {
            return try await http.send(request)
        } catch {
            throw Self.failure("request to the Supabase server failed", error)
        }
    }

    /// A failed exchange as its source classifies it (a transfer that failed is a retryable `transport` error, an
    /// answer cut at the size limit likewise, a request that cannot be sent is not, a cancellation stays `cancelled`),
    /// with `what` in the message.
    static func failure(_ what: String, _ error: any Error) -> SwitchboardError {
        let classified = SwitchboardError.wrapping(error)
        if classified.code == .cancelled { return classified }
        if classified.code == .internal {
            return SwitchboardError(.transport, "\(what): \(error)", retryable: true)
        }
        return SwitchboardError(classified.code, "\(what): \(error)", retryable: classified.isRetryable,
                                retryAfter: classified.retryAfter)
    }

    /// Uploads `body` with progress through `request` (no token: the URL is signed).
    func upload(_ request: HTTPRequest, body: Data, progress: @escaping @Sendable (Double) -> Void) async throws -> HTTPResponse {
        var request = request
        request.maximumResponseBytes = request.maximumResponseBytes ?? maximumResponseBytes
        let response: HTTPResponse
        do {
            response = try await http.upload(request, body: body, progress: progress)
        } catch {
            throw Self.failure("upload failed", error)
        }
        guard response.isSuccess else { throw Self.error(for: response) }
        return response
    }

    /// The core error for a failed PostgREST response.
    static func error(for response: HTTPResponse) -> SwitchboardError {
        let body = JSONValue.parseOrNil(response.body)
        let code = body?["code"]?.stringValue ?? ""
        let message = body?["message"]?.stringValue.map { ServerErrorText.oneLine($0) } ?? ServerErrorText.oneLine(response.body)
        let text = "HTTP \(response.status)\(code.isEmpty ? "" : " \(code)"): \(message)"
        switch response.status {
        case 401:
            // `send` has already refreshed the token once when it could: the credentials are wrong or expired for
            // good, and repeating the request cannot change that.
            return SwitchboardError(.unauthorized, text)
        case 403 where code == "42501":
            // Row-level security: the account may not do this in the conversation (not a member of it).
            return SwitchboardError(.forbidden, text)
        case 403:
            return SwitchboardError(.refused, text)
        case 404:
            return SwitchboardError(.notFound, text)
        case 409 where code == "23503":
            return SwitchboardError(.unknownConversation, text)
        case 409:
            return SwitchboardError(.conflict, text, retryable: true)
        case 413:
            return SwitchboardError(.contentTooLarge, text)
        case 408, 429:
            return SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        case 400..<500:
            return SwitchboardError(.refused, text)
        default:
            return SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        }
    }

    /// The JSON array of rows in a response (empty body: none).
    static func rows(_ response: HTTPResponse) throws -> [JSONValue] {
        if response.body.isEmpty { return [] }
        guard let json = JSONValue.parseOrNil(response.body) else {
            throw SwitchboardError(.transport, "the Supabase server answered with invalid JSON", retryable: true)
        }
        if let array = json.arrayValue { return array }
        if case .object = json { return [json] }
        throw SwitchboardError(.transport, "the Supabase server answered with unexpected JSON", retryable: true)
    }
}
