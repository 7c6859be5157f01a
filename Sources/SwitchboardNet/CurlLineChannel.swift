import SwitchboardCore

/// The delegate behind `lines(_:)`: splits the body into lines on the curl thread and hands them to one
/// consumer, pausing the transfer while too many wait unread.
final class CurlLineChannel: CurlTransferDelegate, @unchecked Sendable {
    /// What `nextLine()` hands back.
    struct Delivery: Sendable {
        /// The line, or nil at the end of the body.
        var line: String?
        /// Whether the consumer drained a paused transfer enough that it should continue.
        var resumesTransfer = false
    }

    /// State shared between the curl thread and the consumer.
    private struct State {
        var head: CheckedContinuation<CurlResponseHead, any Error>?
        var waiter: CheckedContinuation<Delivery, any Error>?
        var lines: [String] = []
        var firstLine = 0
        /// How the body ended, once it has; handed out after the buffered lines.
        var ending: Result<Void, any Error>?
        var paused = false
        var cancelled = false
        var reportedEnd = false

        var bufferedCount: Int { lines.count - firstLine }

        mutating func popLine() -> String? {
            guard firstLine < lines.count else { return nil }
            let line = lines[firstLine]
            firstLine += 1
            if firstLine == lines.count {
                lines.removeAll(keepingCapacity: true)
                firstLine = 0
            } else if firstLine >= 256, firstLine * 2 >= lines.count {
                lines.removeFirst(firstLine)
                firstLine = 0
            }
            return line
        }
    }

    private let state = Locked(State())
    private let maximumBufferedLines: Int
    /// The longest line held, or nil for no limit.
    private let maximumLineBytes: Int?
    /// The bytes after the last line break (curl thread only).
    private var partialLine: [UInt8] = []
    /// Set once a line passed `maximumLineBytes`: the rest of the body is dropped unread (curl thread only).
    private var overflowed = false

    /// A channel that pauses the transfer when `maximumBufferedLines` lines wait unread, and fails it with
    /// `.responseTooLarge` when a line passes `maximumLineBytes` (nil: no limit).
    init(maximumBufferedLines: Int, maximumLineBytes: Int? = nil) {
        self.maximumBufferedLines = max(1, maximumBufferedLines)
        self.maximumLineBytes = maximumLineBytes.map { max(1, $0) }
    }

    /// Remembers who waits for the head; install before the transfer starts.
    func installHead(_ continuation: CheckedContinuation<CurlResponseHead, any Error>) {
        state.withLock { $0.head = continuation }
    }

    /// The next line, nil at the end; throws the transfer's failure, or `CancellationError` once after `cancel()`.
    func nextLine() async throws -> Delivery {
        try await withCheckedThrowingContinuation { continuation in
            enum Outcome { case deliver(Delivery), fail(any Error), wait }
            let outcome: Outcome = state.withLock { state in
                if state.cancelled || state.reportedEnd {
                    if state.reportedEnd { return .deliver(Delivery(line: nil)) }
                    state.reportedEnd = true
                    return .fail(CancellationError())
                }
                if let line = state.popLine() {
                    var delivery = Delivery(line: line)
                    if state.paused, state.bufferedCount <= maximumBufferedLines / 2 {
                        state.paused = false
                        delivery.resumesTransfer = true
                    }
                    return .deliver(delivery)
                }
                if let ending = state.ending {
                    state.reportedEnd = true
                    switch ending {
                    case .success: return .deliver(Delivery(line: nil))
                    case .failure(let error): return .fail(error)
                    }
                }
                state.waiter = continuation
                return .wait
            }
            switch outcome {
            case .deliver(let delivery): continuation.resume(returning: delivery)
            case .fail(let error): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// Up to `limit` lines already received, without waiting (none after the end or a cancel); whether the
    /// consumer drained a paused transfer enough that it should continue.
    func takeBuffered(limit: Int) -> (lines: [String], resumesTransfer: Bool) {
        state.withLock { state in
            guard !state.cancelled, !state.reportedEnd else { return ([], false) }
            var lines: [String] = []
            while lines.count < limit, let line = state.popLine() { lines.append(line) }
            var resumes = false
            if state.paused, state.bufferedCount <= maximumBufferedLines / 2 {
                state.paused = false
                resumes = true
            }
            return (lines, resumes)
        }
    }

    /// Ends consumption: a waiting `nextLine()` throws `CancellationError`, buffered lines are dropped.
    func cancel() {
        let (waiter, head) = state.withLock { state in
            guard !state.cancelled, !state.reportedEnd else { return (nil, nil) as (CheckedContinuation<Delivery, any Error>?, CheckedContinuation<CurlResponseHead, any Error>?) }
            state.cancelled = true
            state.lines.removeAll()
            state.firstLine = 0
            let waiter = state.waiter.take()
            if waiter != nil { state.reportedEnd = true }
            return (waiter, state.head.take())
        }
        waiter?.resume(throwing: CancellationError())
        head?.resume(throwing: CancellationError())
    }

    // MARK: CurlTransferDelegate (curl thread)

    /// Resumes whoever waits in `HTTPClient.lines(_:)`.
    func transferReceivedHead(_ head: CurlResponseHead) {
        state.withLock { $0.head.take() }?.resume(returning: head)
    }

    /// Splits the bytes into lines; refuses them (pausing the transfer) while the buffer is full.
    func transferReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        enum Admission { case accept, discard, pause }
        let admission: Admission = state.withLock { state in
            if state.cancelled { return .discard }
            if state.bufferedCount >= maximumBufferedLines {
                state.paused = true
                return .pause
            }
            return .accept
        }
        switch admission {
        case .discard: return true
        case .pause: return false
        case .accept: if overflowed { return true }
        }

        var newLines: [String] = []
        var start = bytes.startIndex
        while let newline = bytes[start...].firstIndex(of: 0x0A) {
            partialLine.append(contentsOf: bytes[start..<newline])
            newLines.append(takeLine())
            start = newline + 1
        }
        partialLine.append(contentsOf: bytes[start...])
        if let limit = maximumLineBytes, partialLine.count > limit || newLines.contains(where: { $0.utf8.count > limit }) {
            overflowLine(limit: limit)
            return true
        }
        guard !newLines.isEmpty else { return true }

        let delivery: (CheckedContinuation<Delivery, any Error>, String)? = state.withLock { state in
            state.lines.append(contentsOf: newLines)
            guard let waiter = state.waiter.take(), let line = state.popLine() else { return nil }
            return (waiter, line)
        }
        delivery?.0.resume(returning: Delivery(line: delivery?.1))
        return true
    }

    /// A line passed `limit`: the body ends for the consumer with `.responseTooLarge` after the lines already queued,
    /// and whatever curl still delivers is dropped until the consumer cancels the transfer.
    private func overflowLine(limit: Int) {
        overflowed = true
        partialLine = []
        let error = HTTPClientError(responseLargerThan: limit)
        let waiter: CheckedContinuation<Delivery, any Error>? = state.withLock { state in
            state.ending = .failure(error)
            guard let waiter = state.waiter.take() else { return nil }
            state.reportedEnd = true
            return waiter
        }
        waiter?.resume(throwing: error)
    }

    /// Records the end; a final line without a line break counts when the body ended cleanly.
    func transferFinished(_ result: Result<CurlResponseHead, any Error>) {
        if overflowed {
            // The consumer was already told why the body ended; only a waiter for the head may remain.
            state.withLock { $0.head.take() }?.resume(with: result)
            return
        }
        var trailing: String?
        if case .success = result, !partialLine.isEmpty { trailing = takeLine() }
        partialLine = []
        let (head, waiter, outcome) = state.withLock { state in
            if let trailing, !state.cancelled { state.lines.append(trailing) }
            state.ending = result.map { _ in () }
            let waiter = state.waiter.take()
            var outcome: Result<Delivery, any Error> = .success(Delivery(line: nil))
            if waiter != nil {
                if let line = state.popLine() {
                    outcome = .success(Delivery(line: line))
                } else {
                    state.reportedEnd = true
                    if case .failure(let error) = result { outcome = .failure(error) }
                }
            }
            return (state.head.take(), waiter, outcome)
        }
        head?.resume(with: result)
        waiter?.resume(with: outcome)
    }

    /// The partial line as text, without its CR, emptying the partial buffer.
    private func takeLine() -> String {
        if partialLine.last == 0x0D { partialLine.removeLast() }
        defer { partialLine.removeAll(keepingCapacity: true) }
        return String(decoding: partialLine, as: UTF8.self)
    }
}
