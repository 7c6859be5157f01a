import SwitchboardCore
import Foundation
import SupabaseProtocol

/// The signed-in user's access token, refreshed through a provider shortly before it expires.
///
/// Without a provider the token is used as given (and a server refusal surfaces as `unauthorized`). With
/// one, `current()` refreshes when the token expires within `margin` seconds, and `refresh()` forces a new
/// token (after a 401 or a realtime refusal).
actor SupabaseTokenSource {
    private var token: String
    private let provider: (@Sendable () async throws -> String)?
    private let margin: TimeInterval
    private var refreshing: Task<String, any Error>?

    /// A source starting at `token`.
    init(token: String, provider: (@Sendable () async throws -> String)?, margin: TimeInterval = 30) {
        self.token = token
        self.provider = provider
        self.margin = margin
    }

    /// The token to use now, refreshed first when it is about to expire and a provider exists.
    func current() async -> String {
        guard provider != nil, let expiry = Self.expiry(of: token), expiry.timeIntervalSinceNow < margin else { return token }
        return (try? await refresh()) ?? token
    }

    /// The token without any refresh.
    func peek() -> String { token }

    /// Replaces the token (an application-driven refresh).
    func set(_ newToken: String) { token = newToken }

    /// Whether a provider can refresh the token.
    var canRefresh: Bool { provider != nil }

    /// Asks the provider for a new token (one request at a time) and keeps it.
    @discardableResult
    func refresh() async throws -> String {
        guard let provider else { return token }
        if let refreshing { return try await refreshing.value }
        let task = Task { try await provider() }
        refreshing = task
        defer { refreshing = nil }
        let fresh = try await task.value
        token = fresh
        return fresh
    }

    /// The `exp` claim of a JWT, read without verifying (the server verifies).
    static func expiry(of token: String) -> Date? {
        let parts = token.split(separator: ".")
        guard parts.count == 3, let payload = JWTBase64URL.decode(parts[1]),
              let exp = JSONValue.parseOrNil(payload)?["exp"]?.doubleValue else { return nil }
        return Date(timeIntervalSince1970: exp)
    }
}
