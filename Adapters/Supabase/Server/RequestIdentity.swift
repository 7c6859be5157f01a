import Foundation
import SupabaseProtocol
import SwitchboardNet

/// Who a request acts as: the verified JWT claims and the database role they name.
public struct RequestIdentity: Sendable, Hashable {
    /// The verified claims (an empty set for a keyless anon request is never produced: a key is required).
    public let claims: JWTClaims
    /// The database role the request runs as (`anon` when the token names none).
    public var role: JWTRole { claims.effectiveRole }
    /// The `sub` claim, the user's ID for row-level security.
    public var userID: String? { claims.sub }
    /// Whether this identity bypasses row-level security.
    public var isServiceRole: Bool { role == .serviceRole }

    /// An identity from verified claims.
    public init(claims: JWTClaims) {
        self.claims = claims
    }
}

/// Turns `apikey` / `Authorization: Bearer` headers into a verified identity, or a PostgREST-shaped refusal.
public struct RequestAuthenticator: Sendable {
    /// The roles a token may name; anything else is refused rather than passed to `SET ROLE`.
    public static let allowedRoles: Set<String> = ["anon", "authenticated", "service_role"]

    private let signer: JWTSigner

    /// An authenticator checking tokens with `signer`.
    public init(signer: JWTSigner) {
        self.signer = signer
    }

    /// The identity of `headers`: the bearer token when present, otherwise the `apikey` header.
    public func identity(headers: HTTPHeaders, now: Date = Date()) throws(AuthenticationError) -> RequestIdentity {
        if let authorization = headers["Authorization"] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw AuthenticationError(message: "Authorization header must be 'Bearer <token>'")
            }
            return try identity(token: String(parts[1]).trimmingCharacters(in: .whitespaces), now: now)
        }
        if let key = headers["apikey"], !key.isEmpty {
            return try identity(token: key, now: now)
        }
        throw AuthenticationError(message: "No API key found in request", hint: "No `apikey` request header or url param was found.")
    }

    /// The identity of one token (a socket's `apikey` parameter or `access_token`).
    public func identity(token: String, now: Date = Date()) throws(AuthenticationError) -> RequestIdentity {
        let claims: JWTClaims
        do {
            claims = try signer.verify(token, now: now)
        } catch let error as JWTError {
            throw AuthenticationError(message: error.message, isExpired: error.reason == .expired)
        } catch {
            throw AuthenticationError(message: "JWT could not be verified")
        }
        guard Self.allowedRoles.contains(claims.effectiveRole.name) else {
            throw AuthenticationError(message: "role \"\(claims.effectiveRole.name)\" does not exist")
        }
        return RequestIdentity(claims: claims)
    }
}

/// Why a request's credentials were refused; always answered with 401 `PGRST301` (never echoes the token).
public struct AuthenticationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// PostgREST-style message.
    public let message: String
    /// An optional hint.
    public var hint: String?
    /// Whether the token was refused only because it expired.
    public var isExpired = false

    /// A refusal with `message`.
    public init(message: String, hint: String? = nil, isExpired: Bool = false) {
        self.message = message
        self.hint = hint
        self.isExpired = isExpired
    }

    /// The message.
    public var description: String { message }

    /// The PostgREST error for this refusal.
    public var postgrestError: PostgRESTError {
        PostgRESTError(status: 401, code: "PGRST301", message: message, hint: hint)
    }
}
