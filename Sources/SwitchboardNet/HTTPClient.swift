import Foundation

/// An HTTP/1.1 and HTTP/2 client over libcurl, with async/await calls that really stop when cancelled.
///
/// One client owns one curl multi handle, driven by one dedicated thread, and a pool of reused easy handles, so
/// keep-alive connections, TLS sessions and DNS results are shared by every request it makes. Peers are always
/// verified. A status that is not 2xx is a response, not an error (see `HTTPResponse.ensureSuccess()`).
/// Create one client and share it; releasing it lets its thread finish the transfers still running and exit.
public final class HTTPClient: Sendable {
    /// How this client connects, verifies and gives up.
    public let configuration: Configuration
    /// The multi handle and its thread (internal so tests can watch it exit).
    let loop: CurlMultiLoop

    /// Makes a client and starts its curl thread.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.loop = CurlMultiLoop(configuration: configuration)
    }

    deinit { loop.shutDown() }

    /// How many new connections this client's transfers have opened (for tests of connection reuse).
    var connectionsOpened: Int { loop.connectionsOpened }

    /// Sends `request` and returns the whole response; throws `HTTPClientError` when no response arrived (or its
    /// body passed `request.maximumResponseBytes`), or `CancellationError` when the task was cancelled (the transfer
    /// is stopped first).
    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var plan = try CurlRequestPlan(request: request, body: request.body,
                                       timeout: request.timeout ?? configuration.timeout)
        plan.maximumBodyBytes = request.maximumResponseBytes
        return try await perform(plan)
    }

    /// Sends `body` as the request body (replacing `request.body`), calling `progress` with the fraction sent —
    /// only ever increasing, ending at 1.0 — from the curl thread; keep it quick.
    public func upload(_ request: HTTPRequest, body: Data,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> HTTPResponse {
        var plan = try CurlRequestPlan(request: request, body: body, timeout: request.timeout ?? configuration.timeout,
                                       progress: progress)
        plan.maximumBodyBytes = request.maximumResponseBytes
        return try await perform(plan)
    }

    /// Starts `request` and returns once its status and header fields have arrived; the body then arrives line by
    /// line through the returned stream. Only the request's own timeout applies (streams are long-lived); a non-2xx
    /// status still streams its body (check `status` or call `ensureSuccess()`).
    public func lines(_ request: HTTPRequest) async throws -> HTTPLineStream {
        let plan = try CurlRequestPlan(request: request, body: request.body, timeout: request.timeout)
        let channel = CurlLineChannel(maximumBufferedLines: configuration.maximumBufferedLines,
                                      maximumLineBytes: request.maximumResponseBytes)
        let transfer = CurlTransfer(plan: plan, delegate: channel, followsRedirects: configuration.followsRedirects)
        let handle = HTTPLineStreamHandle(channel: channel, transfer: transfer, loop: loop)
        let loop = self.loop
        let head = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                channel.installHead(continuation)
                loop.start(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
        return HTTPLineStream(head: head, handle: handle)
    }

    /// Runs a buffered transfer, cancelling it on the curl thread when the task is cancelled.
    private func perform(_ plan: CurlRequestPlan) async throws -> HTTPResponse {
        let collector = CurlResponseCollector()
        let transfer = CurlTransfer(plan: plan, delegate: collector, followsRedirects: configuration.followsRedirects)
        let loop = self.loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                collector.install(continuation)
                loop.start(transfer)
            }
        } onCancel: {
            loop.cancel(transfer)
        }
    }
}
