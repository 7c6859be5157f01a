import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardPostgres

/// What the REST gateway, storage and realtime share: configuration, the pool and the token checker.
public final class SupabaseServerContext: Sendable {
    /// The server's configuration.
    public let configuration: SupabaseServerConfiguration
    /// Connections for request work.
    public let pool: PostgresPool
    /// The database URL (never logged: it may carry a password).
    public let databaseURL: String
    /// Signs and verifies HS256 tokens with the configured secret.
    public let signer: JWTSigner
    /// Turns request headers and socket tokens into identities.
    public let authenticator: RequestAuthenticator

    /// A context over `pool`, connected to `databaseURL`.
    public init(configuration: SupabaseServerConfiguration, databaseURL: String, pool: PostgresPool) {
        self.configuration = configuration
        self.databaseURL = databaseURL
        self.pool = pool
        self.signer = JWTSigner(secret: configuration.jwtSecret)
        self.authenticator = RequestAuthenticator(signer: signer)
    }

    /// Where diagnostics go: the configured logger.
    public var logger: Logger { configuration.logger }

    /// Runs `body` in one transaction as `identity`, so PostgreSQL's row-level security decides what it sees.
    public func transaction<T: Sendable>(as identity: RequestIdentity,
                                         _ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await pool.withConnection { connection in
            try connection.transaction { connection in
                try Self.assume(identity, on: connection)
                return try body(connection)
            }
        }
    }

    /// Inside an open transaction: `SET LOCAL ROLE` to the identity's role and publish its claims to SQL.
    public static func assume(_ identity: RequestIdentity, on connection: PostgresConnection) throws {
        let role = identity.role.name
        guard RequestAuthenticator.allowedRoles.contains(role) else {
            throw PostgresError(code: .queryFailed, message: "role \"\(role)\" does not exist", sqlState: "22023")
        }
        try connection.execute("SET LOCAL ROLE \(PostgRESTSQLBuilder.quoteIdentifier(role))")
        try connection.query("SELECT set_config('request.jwt.claims', $1, true), set_config('request.jwt.claim.sub', $2, true), "
                             + "set_config('request.jwt.claim.role', $3, true)",
                             [identity.claims.json, identity.userID ?? "", role])
    }
}
