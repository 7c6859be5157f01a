import Foundation
import SwitchboardCore

/// The delegate behind `send` and `upload`: gathers the whole body and resumes the caller when the transfer ends.
final class CurlResponseCollector: CurlTransferDelegate, @unchecked Sendable {
    /// The waiting caller; taken exactly once.
    private let continuation = Locked<CheckedContinuation<HTTPResponse, any Error>?>(nil)
    /// The body so far (curl thread only).
    private var body = Data()

    /// Makes an empty collector.
    init() {}

    /// Remembers the caller to resume; install before the transfer starts.
    func install(_ continuation: CheckedContinuation<HTTPResponse, any Error>) {
        self.continuation.withLock { $0 = continuation }
    }

    /// Nothing to do: the head is part of the final response.
    func transferReceivedHead(_ head: CurlResponseHead) {}

    /// Appends the bytes to the body.
    func transferReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        body.append(contentsOf: bytes)
        return true
    }

    /// Resumes the caller with the response or the error.
    func transferFinished(_ result: Result<CurlResponseHead, any Error>) {
        guard let continuation = continuation.withLock({ $0.take() }) else { return }
        let body = self.body
        self.body = Data()
        continuation.resume(with: result.map { HTTPResponse(status: $0.status, headers: $0.headers, body: body) })
    }
}
