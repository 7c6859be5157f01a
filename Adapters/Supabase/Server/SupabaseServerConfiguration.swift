import Foundation
import SwitchboardCore

/// Everything `switchboard serve supabase` can be told; defaults suit tests and local use.
public struct SupabaseServerConfiguration: Sendable {
    /// The address to bind (loopback by default; the private PostgreSQL cluster stays on loopback whatever it is).
    public var host = "127.0.0.1"
    /// The port to bind; 0 picks a free one.
    public var port = 0
    /// Where the private PostgreSQL cluster (when no URL is given) and the storage buckets live.
    public var dataDirectory: URL
    /// The HS256 secret every JWT is checked against; never logged.
    public var jwtSecret: String
    /// An existing database to use instead of a private cluster.
    public var databaseURL: String?
    /// Whether the private cluster keeps fsync on; off by default (faster, but an operating-system crash or power
    /// loss can lose or corrupt its data). Its authentication is `trust` on 127.0.0.1 either way.
    public var durablePostgres = false
    /// Extra schema files applied, in order, after the built-in migrations.
    public var extraSQLFiles: [URL] = []
    /// Connections kept to PostgreSQL for REST, storage and realtime checks.
    public var poolSize = 8
    /// The largest REST request body accepted (413 beyond it).
    public var maxRESTBodySize = 1 << 20
    /// The largest storage object accepted (413 `EntityTooLarge` beyond it).
    public var maxObjectSize = 50 << 20
    /// How long a signed upload URL stays valid.
    public var signedUploadLifetime: Duration = .seconds(2 * 60 * 60)
    /// How long an access token issued by `/auth/v1` lives (GoTrue's default: one hour).
    public var authTokenLifetime: Duration = .seconds(3600)
    /// Sign-ups and password sign-ins one client IP may make per five minutes (Supabase's default: 30); token
    /// refreshes may be five times as many. 0 turns the limits off. Beyond them `/auth/v1` answers 429.
    public var authRateLimit = 30
    /// Where diagnostics and the access log (info) go (nowhere unless a handler is given); secrets and tokens are
    /// never passed to it.
    public var logger = Logger(label: "supabase")

    /// A configuration with the required data directory and secret.
    public init(dataDirectory: URL, jwtSecret: String) {
        self.dataDirectory = dataDirectory
        self.jwtSecret = jwtSecret
    }
}
