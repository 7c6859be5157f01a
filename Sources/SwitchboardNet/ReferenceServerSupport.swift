import Foundation
import SwitchboardCore

/// The base URL a reference server puts in the links it hands out (files, uploads), set once the port is known.
public final class ServerBaseURL: Sendable {
    private let value = Locked("")

    /// An empty base, until `set`.
    public init() {}

    /// The base, e.g. `http://127.0.0.1:8080`, without a trailing slash.
    public var current: String { value.withLock { $0 } }

    /// Sets the base, trailing slashes dropped.
    public func set(_ url: String) {
        var url = url
        while url.hasSuffix("/") { url.removeLast() }
        value.withLock { $0 = url }
    }
}

/// A reference server's run between `start()` and `stop()`: set once started, taken once by the stop.
public final class ReferenceServerSlot<Service: Sendable, Extra: Sendable>: Sendable {
    /// What a server holds while it runs: the HTTP server, the service behind it, and `Extra` (e.g. sockets).
    public typealias Run = (http: HTTPServer, service: Service, extra: Extra)

    private let run = Locked<Run?>(nil)

    /// An empty slot (not running).
    public init() {}

    /// The bound port while running.
    public var port: Int? { run.withLock { $0?.http.port } }

    /// `body` of the current run; nil when not running.
    public func read<T>(_ body: (Run) -> T) -> T? {
        run.withLock { $0 }.map(body)
    }

    /// Stores the run a start made.
    public func set(_ value: Run) { run.withLock { $0 = value } }

    /// Ends the run, if any (a second call does nothing): `first` (e.g. ending live listeners), then the HTTP
    /// server stops, then `last` (e.g. closing the store).
    public func stop(first: (Service) -> Void, last: (Service) -> Void) async {
        guard let current = run.withLock({ state -> Run? in defer { state = nil }; return state }) else { return }
        first(current.service)
        await current.http.stop()
        last(current.service)
    }

    /// A runner labelled `label` for a server's store, and the store `open` makes on it once
    /// `<dataDirectory>/uploads` exists.
    public func openStore<Store: Sendable>(label: String, dataDirectory: URL,
                                           _ open: @escaping @Sendable () throws -> Store) async throws
        -> (runner: BlockingRunner, store: Store) {
        let runner = BlockingRunner(label: label)
        let store = try await runner.run {
            try FileManager.default.createDirectory(at: dataDirectory.appendingPathComponent("uploads"),
                                                    withIntermediateDirectories: true)
            return try open()
        }
        return (runner, store)
    }
}

extension HTTPServer.Configuration {
    /// The reference servers' HTTP settings: bind `host:port`, a body limit with room for an upload (plus
    /// 64 KiB), 30 s to send a request, diagnostics to `logger`.
    public static func referenceServer(host: String, port: Int, maxRequestBodySize: Int, maxUploadSize: Int,
                                       logger: Logger) -> Self {
        var configuration = Self()
        configuration.host = host
        configuration.port = port
        configuration.maxRequestBodySize = max(maxRequestBodySize, maxUploadSize) + (64 << 10)
        configuration.requestTimeout = .seconds(30)
        configuration.logger = logger
        return configuration
    }
}

extension HTTPServer {
    /// Starts serving (running `cleanup` before rethrowing when that fails) and returns the bound port and the base
    /// URL links should use: `publicBaseURL`, else `http://host:port`, loopback for a wildcard host.
    public func startReferenceServer(publicBaseURL: String?, cleanup: () -> Void) throws -> (port: Int, baseURL: String) {
        let port: Int
        do {
            port = try start()
        } catch {
            cleanup()
            throw error
        }
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        return (port, publicBaseURL ?? "http://\(host):\(port)")
    }
}

extension HTTPServerResponse {
    /// `route`'s answer to `request`, never an error: a `Failure` becomes `respond(failure)`; any other error is
    /// logged to `logger` and becomes `respond(internalError)`.
    public static func answering<Failure: Error>(_ request: HTTPServerRequest, logger: Logger,
                                                 internalError: @autoclosure () -> Failure,
                                                 respond: (Failure) -> HTTPServerResponse,
                                                 route: () async throws -> HTTPServerResponse) async -> HTTPServerResponse {
        do {
            return try await route()
        } catch let error as Failure {
            return respond(error)
        } catch {
            logger.error("\(request.method) \(request.path) failed: \(error)")
            return respond(internalError())
        }
    }
}
