/// A streaming response: its status and header fields, then its body line by line as the lines arrive.
///
/// Lines are split on LF (a preceding CR is dropped) and decoded as UTF-8; empty lines are delivered too.
/// Iterate it once. Cancelling the iterating task, calling `cancel()` or dropping the stream stops the transfer
/// and closes its connection; the iteration then throws `CancellationError`. A transfer failure (a reset, a
/// timeout, the low-speed limit) is thrown as an `HTTPClientError` after the lines received before it.
public struct HTTPLineStream: AsyncSequence, Sendable {
    /// Lines of the body, without their line breaks.
    public typealias Element = String

    /// The status code.
    public let status: Int
    /// The header fields, in the order received.
    public let headers: HTTPHeaders
    /// Owns the transfer: releasing the last copy of the stream cancels it.
    private let handle: HTTPLineStreamHandle

    /// Wraps a started transfer whose head has arrived.
    init(head: CurlResponseHead, handle: HTTPLineStreamHandle) {
        self.status = head.status
        self.headers = head.headers
        self.handle = handle
    }

    /// Whether the status is in 200–299.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// Returns the stream when its status is 2xx; otherwise cancels it and throws an error carrying the status.
    @discardableResult
    public func ensureSuccess() throws(HTTPClientError) -> HTTPLineStream {
        guard isSuccess else {
            cancel()
            throw HTTPClientError(unsuccessfulStatus: status,
                                  retryAfter: HTTPResponse(status: status, headers: headers).retryAfter())
        }
        return self
    }

    /// Stops the transfer now and closes its connection.
    public func cancel() { handle.cancel() }

    /// The iterator over the lines.
    public func makeAsyncIterator() -> Iterator { Iterator(handle: handle) }

    /// Up to `limit` lines that have already arrived, in order, without waiting (empty when none has); the
    /// iterator continues after them. Lets a consumer handle a burst of lines in one go.
    public func bufferedLines(limit: Int) -> [String] { handle.buffered(limit: limit) }

    /// Delivers the lines in order, waiting for the network as needed.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        fileprivate let handle: HTTPLineStreamHandle

        /// The next line, or nil when the body ended.
        public mutating func next() async throws -> String? { try await handle.next() }
    }
}

/// Keeps a `lines(_:)` transfer alive while someone holds its stream, and cancels it when nobody does.
final class HTTPLineStreamHandle: Sendable {
    private let channel: CurlLineChannel
    private let transfer: CurlTransfer
    private let loop: CurlMultiLoop

    /// Owns `transfer`, which reports to `channel` and runs on `loop`.
    init(channel: CurlLineChannel, transfer: CurlTransfer, loop: CurlMultiLoop) {
        self.channel = channel
        self.transfer = transfer
        self.loop = loop
    }

    deinit { cancel() }

    /// The next line; cancelling the waiting task cancels the transfer.
    func next() async throws -> String? {
        try await withTaskCancellationHandler {
            let delivery = try await channel.nextLine()
            if delivery.resumesTransfer { loop.resume(transfer) }
            return delivery.line
        } onCancel: {
            cancel()
        }
    }

    /// Lines already received, up to `limit`, without waiting.
    func buffered(limit: Int) -> [String] {
        let (lines, resumes) = channel.takeBuffered(limit: limit)
        if resumes { loop.resume(transfer) }
        return lines
    }

    /// Ends consumption and has the curl thread remove the transfer.
    func cancel() {
        channel.cancel()
        loop.cancel(transfer)
    }
}
