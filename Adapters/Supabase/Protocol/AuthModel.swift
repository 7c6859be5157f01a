import Foundation
import SwitchboardCore

/// A refusal of the GoTrue-like auth API, shaped as GoTrue answers it: `{"code": 400, "error_code": "…", "msg": "…"}`.
public struct AuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The HTTP status.
    public var status: Int
    /// GoTrue's machine-readable code (`invalid_credentials`, `weak_password`, …).
    public var errorCode: String
    /// The human-readable message.
    public var message: String
    /// For `weak_password`: why (`length`), as GoTrue lists them.
    public var weakPasswordReasons: [String]?

    /// Creates a refusal.
    public init(status: Int, errorCode: String, message: String, weakPasswordReasons: [String]? = nil) {
        self.status = status
        self.errorCode = errorCode
        self.message = message
        self.weakPasswordReasons = weakPasswordReasons
    }

    /// The JSON body.
    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("code", .number(String(status))), ("error_code", .string(errorCode)),
                                            ("msg", .string(message))]
        if let reasons = weakPasswordReasons {
            pairs.append(("weak_password", .object([("reasons", .array(reasons.map { .string($0) }))])))
        }
        return .object(pairs)
    }

    /// `status error_code: message`.
    public var description: String { "\(status) \(errorCode): \(message)" }

    /// The email and password pair matches no user (the same answer for an unknown email and a wrong password).
    public static let invalidCredentials = AuthError(status: 400, errorCode: "invalid_credentials", message: "Invalid login credentials")

    /// Too many requests from one client (GoTrue's 429); `retryAfter` seconds until the next is allowed.
    public static func rateLimited(retryAfter: Double) -> AuthError {
        AuthError(status: 429, errorCode: "over_request_rate_limit",
                  message: "Request rate limit reached; try again in \(Int(retryAfter.rounded(.up))) s")
    }
}

/// The rules the GoTrue-like auth API checks its input against, without a database.
public enum AuthRules {
    /// The shortest password accepted (GoTrue's default).
    public static let minimumPasswordLength = 6
    /// The longest password accepted: bcrypt reads 72 bytes, so a longer one would be cut silently.
    public static let maximumPasswordBytes = 72

    /// The email trimmed and lower-cased; a `validation_failed` refusal when it is missing or not an address.
    public static func email(_ text: String?) throws(AuthError) -> String {
        let email = (text ?? "").trimmingCharacters(in: .whitespaces).lowercased()
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard !email.isEmpty else {
            throw AuthError(status: 400, errorCode: "validation_failed", message: "An email address is required")
        }
        guard email.utf8.count <= 255, parts.count == 2, !parts[0].isEmpty, parts[1].contains("."),
              !parts[1].hasPrefix("."), !parts[1].hasSuffix("."),
              !email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 }) else {
            throw AuthError(status: 400, errorCode: "validation_failed", message: "Unable to validate email address: invalid format")
        }
        return email
    }

    /// The password when it is long enough and not too long for bcrypt; `weak_password` (422) otherwise.
    public static func password(_ text: String?) throws(AuthError) -> String {
        guard let password = text, password.count >= minimumPasswordLength else {
            throw AuthError(status: 422, errorCode: "weak_password",
                            message: "Password should be at least \(minimumPasswordLength) characters.",
                            weakPasswordReasons: ["length"])
        }
        guard password.utf8.count <= maximumPasswordBytes else {
            throw AuthError(status: 422, errorCode: "validation_failed",
                            message: "Password cannot be longer than \(maximumPasswordBytes) characters")
        }
        return password
    }
}

/// A user as the auth API shows it (GoTrue's `User` object).
public struct AuthUser: Sendable, Equatable {
    /// The user's UUID: the `sub` of their access tokens, what `auth.uid()` returns.
    public var id: String
    /// The (lower-cased) email.
    public var email: String
    /// `raw_user_meta_data`: what the user set at sign-up or with `PUT /user`.
    public var userMetadata: JSONValue
    /// `raw_app_meta_data`: provider information only the server sets.
    public var appMetadata: JSONValue
    /// ISO 8601 times.
    public var createdAt: String, updatedAt: String, emailConfirmedAt: String?, lastSignInAt: String?

    /// Creates a user description.
    public init(id: String, email: String, userMetadata: JSONValue, appMetadata: JSONValue, createdAt: String,
                updatedAt: String, emailConfirmedAt: String?, lastSignInAt: String?) {
        self.id = id
        self.email = email
        self.userMetadata = userMetadata
        self.appMetadata = appMetadata
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.emailConfirmedAt = emailConfirmedAt
        self.lastSignInAt = lastSignInAt
    }

    /// GoTrue's JSON for the user.
    public var json: JSONValue {
        func time(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
        return .object([
            ("id", .string(id)), ("aud", .string("authenticated")), ("role", .string("authenticated")),
            ("email", .string(email)), ("email_confirmed_at", time(emailConfirmedAt)), ("phone", .string("")),
            ("confirmed_at", time(emailConfirmedAt)), ("last_sign_in_at", time(lastSignInAt)),
            ("app_metadata", appMetadata), ("user_metadata", userMetadata), ("identities", .array([])),
            ("created_at", .string(createdAt)), ("updated_at", .string(updatedAt)), ("is_anonymous", .bool(false)),
        ])
    }

    /// The claims of an access token for this user in session `sessionID`, issued at `issuedAt` for `lifetime`
    /// seconds: role `authenticated`, `sub` the user's ID, as GoTrue issues them.
    public func accessClaims(sessionID: String, issuedAt: Int, lifetime: Int, issuer: String) -> [String: JSONValue] {
        [
            "aud": .string("authenticated"), "exp": .number(String(issuedAt + lifetime)), "iat": .number(String(issuedAt)),
            "iss": .string(issuer), "sub": .string(id), "email": .string(email), "phone": .string(""),
            "app_metadata": appMetadata, "user_metadata": userMetadata, "role": .string("authenticated"),
            "aal": .string("aal1"),
            "amr": .array([.object([("method", .string("password")), ("timestamp", .number(String(issuedAt)))])]),
            "session_id": .string(sessionID), "is_anonymous": .bool(false),
        ]
    }
}

/// A signed-in session as the auth API returns it: an access token, a one-time refresh token and the user.
public struct AuthSession: Sendable, Equatable {
    /// The signed access token (a JWT).
    public var accessToken: String
    /// The refresh token (used once: refreshing revokes it).
    public var refreshToken: String
    /// Seconds the access token lives.
    public var expiresIn: Int
    /// When it expires, in seconds since 1970.
    public var expiresAt: Int
    /// The user.
    public var user: AuthUser

    /// Creates a session description.
    public init(accessToken: String, refreshToken: String, expiresIn: Int, expiresAt: Int, user: AuthUser) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
        self.expiresAt = expiresAt
        self.user = user
    }

    /// GoTrue's JSON for the session.
    public var json: JSONValue {
        .object([
            ("access_token", .string(accessToken)), ("token_type", .string("bearer")),
            ("expires_in", .number(String(expiresIn))), ("expires_at", .number(String(expiresAt))),
            ("refresh_token", .string(refreshToken)), ("user", user.json),
        ])
    }
}
