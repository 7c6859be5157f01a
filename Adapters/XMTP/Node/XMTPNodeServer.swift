import Foundation
import Synchronization
import SwitchboardNet

/// The XMTP-like node: XMTP's MLS API gateway (JSON) without MLS, plus identity, group registry and uploads.
///
/// `start()` opens the store (SQLite under the data directory, or PostgreSQL when `databaseURL` is set) and
/// serves `/mls/v1`, `/identity/v1` and `/upload/v1` over HTTP; `stop()` ends subscriptions, stops the HTTP
/// server and closes the store. See `NodeService` for the endpoints.
public final class XMTPNodeServer: Sendable {
    /// The configuration the server was made with.
    public let configuration: XMTPNodeConfiguration
    private let running = ReferenceServerSlot<NodeService, Void>()

    /// A server that does nothing until `start()`.
    public init(configuration: XMTPNodeConfiguration) {
        self.configuration = configuration
    }

    /// The bound port while running.
    public var port: Int? { running.port }

    /// `http://host:port` while running.
    public var baseURL: URL? { running.read { URL(string: $0.service.base.current) } ?? nil }

    /// Live subscriptions currently registered (tests check closed clients leave none behind).
    public var activeSubscriptions: Int { running.read { $0.service.hub.listenerCount } ?? 0 }

    /// Opens the store, starts serving and returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        let configuration = self.configuration
        let (runner, store) = try await running.openStore(
            label: "switchboard.xmtp-node.store", dataDirectory: configuration.dataDirectory) { () throws -> any XMTPNodeStore in
            if let url = configuration.databaseURL {
                return try PostgresNodeStore(url: url, poolSize: configuration.postgresPoolSize)
            }
            return try SQLiteNodeStore(path: configuration.dataDirectory.appendingPathComponent("xmtp-node.sqlite").path)
        }
        let service = NodeService(configuration: configuration, store: store, runner: runner)
        var httpConfiguration = HTTPServer.Configuration.referenceServer(
            host: configuration.host, port: configuration.port, maxRequestBodySize: configuration.maxRequestBodySize,
            maxUploadSize: configuration.maxUploadSize, logger: configuration.logger)
        httpConfiguration.keepAliveTimeout = configuration.keepAliveTimeout
        let http = HTTPServer(configuration: httpConfiguration)
        for (method, prefix) in [(HTTPMethod.post, "/mls/v1"), (.post, "/identity/v1"), (.post, "/upload/v1"),
                                 (.put, "/upload/v1"), (.get, "/upload/v1")] {
            http.route(method, prefix) { request in await service.handle(request) }
        }
        let (port, baseURL) = try http.startReferenceServer(publicBaseURL: configuration.publicBaseURL) { store.close() }
        service.base.set(baseURL)
        running.set((http: http, service: service, extra: ()))
        return port
    }

    /// Ends subscriptions, stops serving and closes the store; safe to call twice.
    public func stop() async {
        await running.stop { $0.hub.finishAll() } last: { $0.store.close() }
    }
}
