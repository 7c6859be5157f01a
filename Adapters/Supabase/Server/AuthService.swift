import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet
import SwitchboardPostgres

/// A GoTrue-like `/auth/v1` for email and password: sign-up (confirmed at once), password and refresh-token
/// grants, the signed-in user, and sign-out. Enough for the official clients' `auth.sign_up`,
/// `sign_in_with_password`, `get_user`, `update_user`, `refresh_session` and `sign_out`; the access tokens it
/// issues are the server's own HS256 JWTs with role `authenticated` and `sub` the user's UUID, so REST, storage and
/// realtime take them like any other token.
///
/// Users, sessions and refresh tokens live in the `auth` schema (never exposed to REST). Passwords are bcrypt
/// hashes made by pgcrypto's `crypt` (GoTrue's format), bound as parameters and never logged; refresh tokens are
/// stored as SHA-256 digests, rotate on every use, and a used one presented again ends its whole session.
final class AuthService: Sendable {
    /// The path every auth route lives under.
    static let pathPrefix = "/auth/v1"
    /// The bcrypt cost of new password hashes (GoTrue's default).
    static let bcryptCost = 10
    /// The largest request body accepted (credentials and user metadata are small).
    static let maxBodySize = 64 << 10

    /// The shared server context (configuration, pool, signer).
    let context: SupabaseServerContext
    /// Whether the auth tables and pgcrypto exist on this database (`/auth/v1` answers 503 otherwise).
    let isAvailable: Bool
    /// Sign-ups and password sign-ins per client IP (`authRateLimit` per five minutes).
    private let signInLimiter: Locked<AuthRateLimiter>
    /// Refresh-token grants per client IP (five times `authRateLimit` per five minutes).
    private let refreshLimiter: Locked<AuthRateLimiter>
    /// The clock the limiters run on.
    private let started = ContinuousClock.now
    /// The window of both limits, in seconds.
    static let rateWindow = 300.0

    /// Creates the `auth` tables (idempotent). On a database where that is not allowed (`--database-url` with a
    /// role that may not create extensions, say) the rest of the server still starts: `/auth/v1` answers 503.
    init(context: SupabaseServerContext) {
        self.context = context
        let limit = context.configuration.authRateLimit
        signInLimiter = Locked(AuthRateLimiter(limit: limit, window: Self.rateWindow))
        refreshLimiter = Locked(AuthRateLimiter(limit: limit * 5, window: Self.rateWindow))
        do {
            try context.pool.run { try ChatSchema.applyOne(Self.schema, to: $0) }
            isAvailable = true
        } catch {
            isAvailable = false
            context.logger.error("auth: /auth/v1 is unavailable: \(error)")
        }
    }

    /// The `auth` tables; pgcrypto goes into schema `extensions`, as on Supabase, so `/rpc` does not expose it.
    static let schema = """
        CREATE SCHEMA IF NOT EXISTS extensions;
        CREATE EXTENSION IF NOT EXISTS pgcrypto WITH SCHEMA extensions;
        CREATE TABLE IF NOT EXISTS auth.users (
          id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
          email text NOT NULL UNIQUE,
          encrypted_password text NOT NULL,
          email_confirmed_at timestamptz,
          raw_app_meta_data jsonb NOT NULL DEFAULT '{"provider": "email", "providers": ["email"]}',
          raw_user_meta_data jsonb NOT NULL DEFAULT '{}',
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now(),
          last_sign_in_at timestamptz
        );
        CREATE TABLE IF NOT EXISTS auth.sessions (
          id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
          user_id uuid NOT NULL REFERENCES auth.users (id) ON DELETE CASCADE,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX IF NOT EXISTS sessions_user_idx ON auth.sessions (user_id);
        CREATE TABLE IF NOT EXISTS auth.refresh_tokens (
          token_hash text PRIMARY KEY,
          session_id uuid NOT NULL REFERENCES auth.sessions (id) ON DELETE CASCADE,
          revoked boolean NOT NULL DEFAULT false,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX IF NOT EXISTS refresh_tokens_session_idx ON auth.refresh_tokens (session_id);
        REVOKE ALL ON auth.users, auth.sessions, auth.refresh_tokens FROM PUBLIC;
        """

    /// The user columns every statement returns, in `user(from:)`'s order.
    private static let userColumns = """
        u.id::text, u.email, u.raw_user_meta_data::text, u.raw_app_meta_data::text,
        to_json(u.created_at) #>> '{}', to_json(u.updated_at) #>> '{}',
        to_json(u.email_confirmed_at) #>> '{}', to_json(u.last_sign_in_at) #>> '{}'
        """

    /// Answers one request below `/auth/v1`; every failure is a GoTrue-shaped error body.
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard isAvailable else {
            let error = AuthError(status: 503, errorCode: "unexpected_failure",
                                  message: "Auth is unavailable on this database: pgcrypto and the auth tables could not be created")
            return Self.json(error.json, status: 503)
        }
        do {
            return try await respond(to: request)
        } catch let error as AuthError {
            return Self.json(error.json, status: error.status)
        } catch let error as AuthenticationError {
            let refusal = AuthError(status: 401, errorCode: error.isExpired ? "bad_jwt" : "no_authorization", message: error.message)
            return Self.json(refusal.json, status: 401)
        } catch {
            context.logger.error("auth: \(request.method) \(request.path) failed: \(type(of: error))")
            return Self.json(AuthError(status: 500, errorCode: "unexpected_failure", message: "Internal server error").json, status: 500)
        }
    }

    private func respond(to request: HTTPServerRequest) async throws -> HTTPServerResponse {
        var route = request.path.dropFirst(Self.pathPrefix.count)
        while route.hasPrefix("/") { route = route.dropFirst() }
        while route.hasSuffix("/") { route = route.dropLast() }
        if route == "health", request.method == .get {
            return Self.json(.object([("name", .string("GoTrue")), ("description", .string("Switchboard's GoTrue-like auth"))]))
        }
        // As the API gateway in front of GoTrue does: a valid key (or token) of this project is required.
        let caller = try context.authenticator.identity(headers: request.headers)
        switch (request.method, route) {
        case (.get, "settings"):
            return Self.json(.object([("external", .object([("email", .bool(true))])), ("disable_signup", .bool(false)),
                                      ("mailer_autoconfirm", .bool(true)), ("phone_autoconfirm", .bool(false))]))
        case (.post, "signup"):
            try admit(request, by: signInLimiter)
            return try await signUp(request)
        case (.post, "token"):
            switch request.queryValue("grant_type") {
            case "password":
                try admit(request, by: signInLimiter)
                return try await signIn(request)
            case "refresh_token":
                try admit(request, by: refreshLimiter)
                return try await refresh(request)
            default:
                throw AuthError(status: 400, errorCode: "validation_failed",
                                message: "unsupported_grant_type: only password and refresh_token are supported")
            }
        case (.get, "user"): return Self.json(try await signedInUser(caller).json)
        case (.put, "user"): return try await updateUser(caller, request)
        case (.post, "logout"): return try await signOut(caller, scope: request.queryValue("scope") ?? "global")
        default:
            throw AuthError(status: 404, errorCode: "not_found", message: "Not found: \(request.method) \(Self.pathPrefix)/\(route)")
        }
    }

    /// Takes a token of `limiter` for the request's client IP, or refuses with GoTrue's 429.
    private func admit(_ request: HTTPServerRequest, by limiter: borrowing Locked<AuthRateLimiter>) throws(AuthError) {
        let now = (ContinuousClock.now - started) / .seconds(1)
        let (admitted, wait) = limiter.withLock { limiter in
            limiter.admit(request.remoteAddress, now: now) ? (true, 0.0) : (false, limiter.retryAfter(request.remoteAddress, now: now))
        }
        guard admitted else { throw AuthError.rateLimited(retryAfter: wait) }
    }

    // MARK: - Grants

    private func signUp(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let body = try Self.body(request)
        let email = try AuthRules.email(body["email"]?.stringValue)
        let password = try AuthRules.password(body["password"]?.stringValue)
        let data = body["data"].flatMap { $0.objectValue == nil ? nil : $0 } ?? .object([])
        let session = try await context.pool.withConnection { connection in
            try connection.transaction { connection -> (AuthUser, String, String)? in
                let inserted = try connection.query("""
                    INSERT INTO auth.users AS u (email, encrypted_password, email_confirmed_at, raw_user_meta_data, last_sign_in_at)
                    VALUES ($1, extensions.crypt($2, extensions.gen_salt('bf', \(Self.bcryptCost))), now(), $3::jsonb, now())
                    ON CONFLICT (email) DO NOTHING
                    RETURNING \(Self.userColumns)
                    """, [email, password, data.serialized])
                guard let user = Self.user(from: inserted.rows.first) else { return nil }
                let (sessionID, refreshToken) = try Self.startSession(for: user.id, on: connection)
                return (user, sessionID, refreshToken)
            }
        }
        guard let (user, sessionID, refreshToken) = session else {
            throw AuthError(status: 422, errorCode: "user_already_exists", message: "User already registered")
        }
        return Self.json(issue(user, sessionID: sessionID, refreshToken: refreshToken, request: request).json)
    }

    private func signIn(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let body = try Self.body(request)
        guard let email = try? AuthRules.email(body["email"]?.stringValue),
              let password = body["password"]?.stringValue, !password.isEmpty else { throw AuthError.invalidCredentials }
        let session = try await context.pool.withConnection { connection in
            try connection.transaction { connection -> (AuthUser, String, String)? in
                let found = try connection.query("""
                    UPDATE auth.users u SET last_sign_in_at = now()
                    WHERE u.email = $1 AND u.encrypted_password = extensions.crypt($2, u.encrypted_password)
                    RETURNING \(Self.userColumns)
                    """, [email, password])
                guard let user = Self.user(from: found.rows.first) else {
                    // An unknown email costs a hash too, so the answer's time does not tell whether it exists.
                    if try connection.query("SELECT 1 FROM auth.users WHERE email = $1", [email]).rows.isEmpty {
                        _ = try connection.query("SELECT extensions.crypt($1, extensions.gen_salt('bf', \(Self.bcryptCost)))", [password])
                    }
                    return nil
                }
                let (sessionID, refreshToken) = try Self.startSession(for: user.id, on: connection)
                return (user, sessionID, refreshToken)
            }
        }
        guard let (user, sessionID, refreshToken) = session else { throw AuthError.invalidCredentials }
        return Self.json(issue(user, sessionID: sessionID, refreshToken: refreshToken, request: request).json)
    }

    private func refresh(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let body = try Self.body(request)
        guard let presented = body["refresh_token"]?.stringValue, !presented.isEmpty else {
            throw AuthError(status: 400, errorCode: "validation_failed", message: "A refresh_token is required")
        }
        let hash = Digest.sha256Hex(Array(presented.utf8))
        enum Outcome: Sendable { case rotated(AuthUser, String, String), reused, unknown }
        let outcome = try await context.pool.withConnection { connection in
            try connection.transaction { connection -> Outcome in
                let used = try connection.query("""
                    UPDATE auth.refresh_tokens SET revoked = true WHERE token_hash = $1 AND NOT revoked RETURNING session_id::text
                    """, [hash])
                guard let sessionID = used.rows.first?.first ?? nil else {
                    // A revoked token presented again was copied or replayed: end its whole session.
                    let ended = try connection.query("""
                        DELETE FROM auth.sessions WHERE id = (SELECT session_id FROM auth.refresh_tokens WHERE token_hash = $1)
                        """, [hash])
                    return ended.affectedRows > 0 ? .reused : .unknown
                }
                let found = try connection.query("""
                    SELECT \(Self.userColumns) FROM auth.users u JOIN auth.sessions s ON s.user_id = u.id WHERE s.id = $1::uuid
                    """, [sessionID])
                guard let user = Self.user(from: found.rows.first) else { return .unknown }
                let next = Self.newRefreshToken()
                _ = try connection.query("INSERT INTO auth.refresh_tokens (token_hash, session_id) VALUES ($1, $2::uuid)",
                                         [Digest.sha256Hex(Array(next.utf8)), sessionID])
                return .rotated(user, sessionID, next)
            }
        }
        switch outcome {
        case let .rotated(user, sessionID, next):
            return Self.json(issue(user, sessionID: sessionID, refreshToken: next, request: request).json)
        case .reused:
            throw AuthError(status: 400, errorCode: "refresh_token_already_used", message: "Invalid Refresh Token: Already Used")
        case .unknown:
            throw AuthError(status: 400, errorCode: "refresh_token_not_found", message: "Invalid Refresh Token: Refresh Token Not Found")
        }
    }

    // MARK: - The signed-in user

    /// The user a bearer token names, while its session lasts; 401/403 as GoTrue answers otherwise.
    private func signedInUser(_ caller: RequestIdentity) async throws -> AuthUser {
        let (userID, sessionID) = try Self.userToken(caller)
        let found = try await context.pool.withConnection { connection in
            try connection.query("""
                SELECT \(Self.userColumns), EXISTS (SELECT 1 FROM auth.sessions s WHERE s.id = $2::uuid AND s.user_id = u.id)::text
                FROM auth.users u WHERE u.id = $1::uuid
                """, [userID, sessionID])
        }
        guard let row = found.rows.first, let user = Self.user(from: row) else {
            throw AuthError(status: 403, errorCode: "user_not_found", message: "User from sub claim in JWT does not exist")
        }
        guard row.last == "true" else {
            throw AuthError(status: 403, errorCode: "session_not_found", message: "Session from session_id claim in JWT does not exist")
        }
        return user
    }

    private func updateUser(_ caller: RequestIdentity, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let user = try await signedInUser(caller)
        let body = try Self.body(request)
        let email = try body["email"].map { value throws(AuthError) in try AuthRules.email(value.stringValue) }
        let password = try body["password"].map { value throws(AuthError) in try AuthRules.password(value.stringValue) }
        let data = body["data"].flatMap { $0.objectValue == nil ? nil : $0.serialized }
        let updated = try await context.pool.withConnection { connection in
            try connection.transaction { connection -> AuthUser? in
                if let email, email != user.email,
                   !(try connection.query("SELECT 1 FROM auth.users WHERE email = $1", [email]).rows.isEmpty) {
                    return nil
                }
                let result = try connection.query("""
                    UPDATE auth.users u SET
                      email = coalesce($2, u.email),
                      encrypted_password = CASE WHEN $3::text IS NULL THEN u.encrypted_password
                                                ELSE extensions.crypt($3, extensions.gen_salt('bf', \(Self.bcryptCost))) END,
                      raw_user_meta_data = u.raw_user_meta_data || coalesce($4::jsonb, '{}'),
                      updated_at = now()
                    WHERE u.id = $1::uuid
                    RETURNING \(Self.userColumns)
                    """, [user.id, email, password, data])
                return Self.user(from: result.rows.first)
            }
        }
        guard let updated else {
            throw AuthError(status: 422, errorCode: "email_exists", message: "A user with this email address has already been registered")
        }
        return Self.json(updated.json)
    }

    /// Ends this session (`local`), every session of the user (`global`) or every other one (`others`): their
    /// refresh tokens stop working. Access tokens already issued live until they expire, as with GoTrue.
    private func signOut(_ caller: RequestIdentity, scope: String) async throws -> HTTPServerResponse {
        let (userID, sessionID) = try Self.userToken(caller)
        let (condition, parameters): (String, [String?]) = switch scope {
        case "global": ("user_id = $1::uuid", [userID])
        case "local": ("user_id = $1::uuid AND id = $2::uuid", [userID, sessionID])
        case "others": ("user_id = $1::uuid AND id <> $2::uuid", [userID, sessionID])
        default: throw AuthError(status: 400, errorCode: "validation_failed", message: "scope must be global, local or others")
        }
        _ = try await context.pool.withConnection { connection in
            try connection.query("DELETE FROM auth.sessions WHERE \(condition)", parameters)
        }
        return HTTPServerResponse(status: 204)
    }

    // MARK: - Pieces

    /// The user ID and session ID of a user's access token; 403 `bad_jwt` for a key or a token without them.
    private static func userToken(_ caller: RequestIdentity) throws(AuthError) -> (String, String) {
        guard caller.role == .authenticated, let userID = caller.userID, UUIDText.bytes(userID) != nil,
              let sessionID = caller.claims.object["session_id"]?.stringValue, UUIDText.bytes(sessionID) != nil else {
            throw AuthError(status: 403, errorCode: "bad_jwt", message: "invalid claim: missing sub or session_id claim")
        }
        return (userID, sessionID)
    }

    /// A new session for `userID` and its first refresh token (stored as a digest only).
    private static func startSession(for userID: String, on connection: PostgresConnection) throws -> (String, String) {
        let session = try connection.query("INSERT INTO auth.sessions (user_id) VALUES ($1::uuid) RETURNING id::text", [userID])
        guard let sessionID = session.rows.first?.first ?? nil else {
            throw AuthError(status: 500, errorCode: "unexpected_failure", message: "no session was created")
        }
        let token = newRefreshToken()
        _ = try connection.query("INSERT INTO auth.refresh_tokens (token_hash, session_id) VALUES ($1, $2::uuid)",
                                 [Digest.sha256Hex(Array(token.utf8)), sessionID])
        return (sessionID, token)
    }

    /// 32 random bytes from the system's cryptographic generator, base64url.
    private static func newRefreshToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A session for `user`: a fresh access token signed with the server's secret.
    private func issue(_ user: AuthUser, sessionID: String, refreshToken: String, request: HTTPServerRequest) -> AuthSession {
        let lifetime = Int(context.configuration.authTokenLifetime.components.seconds)
        let now = Int(Date().timeIntervalSince1970)
        let host = request.headers["Host"] ?? "\(context.configuration.host):\(context.configuration.port)"
        let claims = user.accessClaims(sessionID: sessionID, issuedAt: now, lifetime: lifetime, issuer: "http://\(host)\(Self.pathPrefix)")
        return AuthSession(accessToken: context.signer.sign(claims: claims), refreshToken: refreshToken,
                           expiresIn: lifetime, expiresAt: now + lifetime, user: user)
    }

    /// A user from a row of `userColumns` (nil for no row).
    private static func user(from row: [String?]?) -> AuthUser? {
        guard let row, row.count >= 8, let id = row[0], let email = row[1], let created = row[4], let updated = row[5] else { return nil }
        return AuthUser(id: id, email: email, userMetadata: JSONValue.parseOrNil(row[2] ?? "") ?? .object([]),
                        appMetadata: JSONValue.parseOrNil(row[3] ?? "") ?? .object([]), createdAt: created, updatedAt: updated,
                        emailConfirmedAt: row[6], lastSignInAt: row[7])
    }

    /// The request's JSON object body; `validation_failed` otherwise, 413 beyond `maxBodySize`.
    private static func body(_ request: HTTPServerRequest) throws(AuthError) -> JSONValue {
        guard request.body.count <= maxBodySize else {
            throw AuthError(status: 413, errorCode: "request_too_large", message: "The request body is larger than \(maxBodySize) bytes")
        }
        guard let body = JSONValue.parseOrNil(request.body), body.objectValue != nil else {
            throw AuthError(status: 400, errorCode: "validation_failed", message: "Could not read the request body: a JSON object is required")
        }
        return body
    }

    private static func json(_ value: JSONValue, status: Int = 200) -> HTTPServerResponse {
        HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"], body: Data(value.serialized.utf8))
    }
}
