import Foundation
import SwitchboardCore
import SwitchboardNet

/// A user signed in to `/auth/v1` with email and password, as `supabase.auth.sign_in_with_password` does: it keeps
/// the refresh token and hands out fresh access tokens, so an adapter whose `tokenProvider` is `freshToken` never
/// runs on an expired one.
///
/// Refreshing uses the (rotating) refresh token; when that is refused (the session was ended) it signs in again
/// with the password. The password and tokens are kept in memory only and never logged.
public actor SupabasePasswordSession {
    private let baseURL: URL
    private let apiKey: String
    private let email: String
    private let password: String
    private let http: HTTPClient
    private var refreshToken: String?

    /// A session for `email` at `baseURL` (the project's `apiKey` goes with every request); nothing is sent yet.
    public init(baseURL: URL, apiKey: String, email: String, password: String, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.apiKey = apiKey
        self.email = email
        self.password = password
        self.http = http
    }

    /// Signs in with the password; returns the access token and the user's ID (the token's `sub`).
    public func signIn() async throws -> (accessToken: String, user: UserID) {
        let session = try await grant("password", ["email": .string(email), "password": .string(password)])
        guard let id = session["user"]?["id"]?.stringValue else {
            throw SwitchboardError(.transport, "the auth server's session names no user")
        }
        return (try accessToken(session), UserID(id))
    }

    /// A new access token: by the refresh token, or by the password when there is none or it is refused.
    public func freshToken() async throws -> String {
        if let refreshToken {
            do {
                return try accessToken(try await grant("refresh_token", ["refresh_token": .string(refreshToken)]))
            } catch let error as SwitchboardError where error.code == .unauthorized {
                self.refreshToken = nil
            }
        }
        return try await signIn().accessToken
    }

    private func accessToken(_ session: JSONValue) throws -> String {
        guard let token = session["access_token"]?.stringValue, let refresh = session["refresh_token"]?.stringValue else {
            throw SwitchboardError(.transport, "the auth server's answer carries no tokens")
        }
        refreshToken = refresh
        return token
    }

    /// `POST /auth/v1/token?grant_type=<type>`; a refusal (4xx) is `unauthorized` with GoTrue's message, a rate
    /// limit (429), a timeout (408), a server failure (5xx) or an unreadable answer a retryable `transport` error.
    private func grant(_ type: String, _ body: [String: JSONValue]) async throws -> JSONValue {
        var components = URLComponents(url: baseURL.appendingPathComponent("auth/v1/token"), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "grant_type", value: type)]
        guard let url = components?.url else { throw SwitchboardError(.invalidArgument, "bad auth URL from \(baseURL)") }
        let request = HTTPRequest(method: .post, url: url,
                                  headers: ["apikey": apiKey, "Content-Type": "application/json"],
                                  body: Data(JSONValue.object(body.sorted { $0.key < $1.key }).serialized.utf8),
                                  timeout: .seconds(30), maximumResponseBytes: 1 << 20)
        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch let error as HTTPClientError {
            let classified = error.switchboardError  // a transfer that failed: retryable transport
            throw SwitchboardError(classified.code, "sign-in as \(email) failed: \(error)", retryable: classified.isRetryable)
        }
        let json = JSONValue.parseOrNil(response.body)
        guard response.isSuccess, let json else {
            let message = (json?["msg"]?.stringValue ?? json?["message"]?.stringValue).map { ServerErrorText.oneLine($0) }
                ?? "HTTP \(response.status): \(ServerErrorText.oneLine(response.body))"
            switch response.status {
            case 408, 429, 500..., 200..<300:
                throw SwitchboardError(.transport, "sign-in as \(email) failed: \(message)", retryable: true,
                                       retryAfter: response.retryAfter())
            case 400..<500:
                throw SwitchboardError(.unauthorized, "sign-in as \(email) failed: \(message)")
            default:
                throw SwitchboardError(.transport, "sign-in as \(email) failed: \(message)")
            }
        }
        return json
    }
}
