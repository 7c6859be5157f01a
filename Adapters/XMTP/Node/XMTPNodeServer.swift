import Foundation
import Synchronization
import SwitchboardNet

/// The XMTP-like node: XMTP's MLS API gateway (JSON) without MLS, plus identity, group registry and uploads.
///
/// `start()` opens the store (SQLite under the data directory, or PostgreSQL when `databaseURL` is set) and
/// serves `/mls/v1`, `/identity/v1` and `/upload/v1` over HTTP; `stop()` ends subscriptions, stops the HTTP
/// server and closes the store. See `NodeService` for the endpoints.
public final class XMTPNodeServer: Sendable {
    private struct Running: Sendable {
        var http: HTTPServer
        var service: NodeService
    }

    /// The configuration the server was made with.
    public let configuration: XMTPNodeConfiguration
    private let running = Mutex<Running?>(nil)

    /// A server that does nothing until `start()`.
    public init(configuration: XMTPNodeConfiguration) {
        self.configuration = configuration
    }

    /// The bound port while running.
    public var port: Int? { running.withLock { $0?.http.port } }

    /// `http://host:port` while running.
    public var baseURL: URL? { running.withLock { $0.flatMap { URL(string: $0.service.baseURL) } } }

    /// Live subscriptions currently registered (tests check closed clients leave none behind).
    public var activeSubscriptions: Int { running.withLock { $0?.service.hub.listenerCount ?? 0 } }

    /// Opens the store, starts serving and returns the bound port.
    @discardableResult
    public func start() async throws -> Int {
        if let port { return port }
        let configuration = self.configuration
        let runner = BlockingRunner(label: "switchboard.xmtp-node.store")
        let store: any XMTPNodeStore = try await runner.run {
            try FileManager.default.createDirectory(at: configuration.dataDirectory.appendingPathComponent("uploads"),
                                                    withIntermediateDirectories: true)
            if let url = configuration.databaseURL {
                return try PostgresNodeStore(url: url, poolSize: configuration.postgresPoolSize)
            }
            return try SQLiteNodeStore(path: configuration.dataDirectory.appendingPathComponent("xmtp-node.sqlite").path)
        }
        let service = NodeService(configuration: configuration, store: store, runner: runner)
        var httpConfiguration = HTTPServer.Configuration()
        httpConfiguration.host = configuration.host
        httpConfiguration.port = configuration.port
        httpConfiguration.maxRequestBodySize = max(configuration.maxRequestBodySize, configuration.maxUploadSize) + (64 << 10)
        httpConfiguration.requestTimeout = .seconds(30)
        httpConfiguration.workerThreads = max(4, configuration.workerThreads)
        httpConfiguration.keepAliveTimeout = configuration.keepAliveTimeout
        httpConfiguration.logger = configuration.logger
        let http = HTTPServer(configuration: httpConfiguration)
        for (method, prefix) in [(HTTPMethod.post, "/mls/v1"), (.post, "/identity/v1"), (.post, "/upload/v1"),
                                 (.put, "/upload/v1"), (.get, "/upload/v1")] {
            http.route(method, prefix) { request in await service.handle(request) }
        }
        let port: Int
        do {
            port = try http.start()
        } catch {
            store.close()
            throw error
        }
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        service.setBaseURL(configuration.publicBaseURL ?? "http://\(host):\(port)")
        running.withLock { $0 = Running(http: http, service: service) }
        return port
    }

    /// Ends subscriptions, stops serving and closes the store; safe to call twice.
    public func stop() async {
        guard let current = running.withLock({ state -> Running? in defer { state = nil }; return state }) else { return }
        current.service.hub.finishAll()
        await current.http.stop()
        current.service.store.close()
    }
}
