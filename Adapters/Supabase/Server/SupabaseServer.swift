import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet
import SwitchboardPostgres

/// The Supabase-like server: PostgREST-style REST, Phoenix realtime and storage over real PostgreSQL.
///
/// `start()` brings up a private PostgreSQL cluster under the data directory (unless a database URL is
/// configured), applies the chat schema and any extra SQL files, then serves `/rest/v1`, `/storage/v1`, `/auth/v1`
/// and `/realtime/v1/websocket` on loopback. `stop()` closes sockets, the pool and the private cluster.
public final class SupabaseServer: Sendable {
    private struct Running: Sendable {
        var http: HTTPServer
        var context: SupabaseServerContext
        var realtime: RealtimeHub
        var cluster: PostgresCluster?
    }

    /// The configuration the server was made with.
    public let configuration: SupabaseServerConfiguration
    private let running = Locked<Running?>(nil)
    private let blocking = BlockingRunner(label: "switchboard.supabase-server.lifecycle")

    /// A server that does nothing until `start()`.
    public init(configuration: SupabaseServerConfiguration) {
        self.configuration = configuration
    }

    /// The bound port while running.
    public var port: Int? { running.withLock { $0?.http.port } }

    /// The shared context while running (tests use it to reach the database).
    public var context: SupabaseServerContext? { running.withLock { $0?.context } }

    /// The id of the newest `realtime.change_log` row the realtime feed has dispatched, while running (lets a
    /// caller, such as a benchmark, wait until the feed has caught up with the writes so far).
    public var realtimeFeedPosition: Int64? { running.withLock { $0?.realtime.feedPosition } }

    /// Starts everything and returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        let configuration = self.configuration
        // initdb, pg_ctl and the migrations block for seconds: on a thread of their own, not the cooperative pool
        // (which has one thread per core, and every other task of the process waits while they are held).
        let (cluster, databaseURL) = try await blocking.run { () throws -> (PostgresCluster?, String) in
            try FileManager.default.createDirectory(at: configuration.dataDirectory, withIntermediateDirectories: true)
            var cluster: PostgresCluster?
            let databaseURL: String
            if let url = configuration.databaseURL {
                databaseURL = url
            } else {
                let privateCluster = PostgresCluster(dataDirectory: configuration.dataDirectory.appendingPathComponent("postgres"),
                                                     durable: configuration.durablePostgres)
                databaseURL = try privateCluster.start()
                cluster = privateCluster
            }
            do {
                try Self.migrate(databaseURL: databaseURL, extraSQLFiles: configuration.extraSQLFiles)
            } catch {
                try? cluster?.stop()
                throw error
            }
            return (cluster, databaseURL)
        }
        do {
            let pool = PostgresPool(url: databaseURL, size: configuration.poolSize)
            let context = SupabaseServerContext(configuration: configuration, databaseURL: databaseURL, pool: pool)
            let rest = RestGateway(context: context)
            let storage = try StorageService(context: context)
            let auth = AuthService(context: context)
            let realtime = RealtimeHub(context: context)
            try realtime.start()

            var httpConfiguration = HTTPServer.Configuration()
            httpConfiguration.host = configuration.host
            httpConfiguration.port = configuration.port
            httpConfiguration.maxRequestBodySize = max(configuration.maxRESTBodySize, configuration.maxObjectSize) + (64 << 10)
            httpConfiguration.requestTimeout = .seconds(30)
            httpConfiguration.logger = configuration.logger
            let http = HTTPServer(configuration: httpConfiguration)
            let logger = configuration.logger
            for method: HTTPMethod in [.get, .head, .post, .put, .patch, .delete, .options] {
                http.route(method, "/rest/v1", handler: Self.logging(logger) { request in await rest.handle(request) })
                http.route(method, "/storage/v1", handler: Self.logging(logger) { request in await storage.handle(request) })
                http.route(method, AuthService.pathPrefix, handler: Self.logging(logger) { request in await auth.handle(request) })
            }
            http.route(.post, RealtimeHub.broadcastPath, handler: Self.logging(logger) { request in realtime.handleBroadcastAPI(request) })
            http.webSocket("/realtime/v1/websocket", admit: { request in realtime.admit(request) }) { connection in
                await realtime.serve(connection)
            }
            let port = try http.start()
            running.withLock { $0 = Running(http: http, context: context, realtime: realtime, cluster: cluster) }
            return port
        } catch {
            _ = try? await blocking.run { try cluster?.stop() }
            throw error
        }
    }

    /// `handler`, with one access-log line per request at info level when `logger` logs it: method, path, status and
    /// time taken. The query string is left out (it can carry a signed URL's token or an `apikey`), and so are
    /// headers and bodies.
    static func logging(_ logger: Logger,
                        _ handler: @escaping @Sendable (HTTPServerRequest) async -> HTTPServerResponse) -> HTTPServer.Handler {
        guard logger.isLogging(.info) else { return handler }
        return { request in
            let started = ContinuousClock.now
            let response = await handler(request)
            let milliseconds = (ContinuousClock.now - started) / .milliseconds(1)
            logger.info("\(request.method.rawValue) \(StorageError.printable(request.path)) \(response.status) "
                + String(format: "%.1f ms", milliseconds))
            return response
        }
    }

    /// Stops serving, closes the pool and stops the private cluster; safe to call twice.
    public func stop() async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        await current.http.stop()
        await current.realtime.stop()
        let configuration = self.configuration
        _ = try? await blocking.run {
            current.context.pool.close()
            do {
                try current.cluster?.stop()
            } catch {
                configuration.logger.error("stopping PostgreSQL failed: \(error)")
            }
        }
    }

    /// Applies the chat schema, then each extra SQL file in its own transaction (an error names the file).
    static func migrate(databaseURL: String, extraSQLFiles: [URL]) throws {
        let connection = try PostgresConnection(url: databaseURL)
        defer { connection.close() }
        try ChatSchema.apply(to: connection)
        for file in extraSQLFiles {
            let sql: String
            do {
                sql = try String(contentsOf: file, encoding: .utf8)
            } catch {
                throw SupabaseServerError(message: "cannot read SQL file \(file.path): \(error.localizedDescription)")
            }
            do {
                _ = try connection.transaction { try $0.execute(sql) }
            } catch {
                throw SupabaseServerError(message: "SQL file \(file.lastPathComponent) failed: \(error)")
            }
        }
    }
}

/// A start-up failure with a message fit for the command line.
public struct SupabaseServerError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let message: String
    /// The message.
    public var description: String { message }
}
