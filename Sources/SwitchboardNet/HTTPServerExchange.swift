import Dispatch
import Foundation
import Synchronization

/// The bridge between one civetweb worker thread and the Swift task running the handler.
///
/// The worker thread owns the connection: it blocks in `next` and does every read and write itself, so no
/// socket I/O ever runs on the cooperative pool. The task only posts events (the response, chunks, the end);
/// each chunk's sender is resumed once the worker has written it, which gives natural back-pressure.
final class HTTPServerExchange: Sendable {
    /// What the worker is told to do next.
    enum Event: Sendable {
        /// The handler's response (head, and the body when it is `.data`).
        case response(HTTPServerResponse)
        /// A body chunk; resume the continuation with whether it was written.
        case chunk(Data, CheckedContinuation<Bool, Never>)
        /// The streamed body is complete.
        case end
        /// The `.writer` body threw: end the response so the client sees it truncated.
        case failed
        /// The server is stopping: finish up now.
        case aborted
        /// `next(timeout:)` waited the whole timeout.
        case timedOut
    }

    private struct State {
        var queue: [Event] = []
        var isAborted = false
        var isClosed = false
        var task: Task<Void, Never>?
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    /// Fires when the worker is done with the connection (`close()`).
    let finished = CivetwebCompletion()

    /// Starts the handler in a new task.
    func start(_ handler: @escaping HTTPServer.Handler, request: HTTPServerRequest) {
        let task = Task { await self.run(handler, request: request) }
        let abortedAlready = state.withLock { state -> Bool in
            state.task = task
            return state.isAborted || state.isClosed
        }
        if abortedAlready { task.cancel() }
    }

    private func run(_ handler: HTTPServer.Handler, request: HTTPServerRequest) async {
        let response: HTTPServerResponse
        do {
            response = try await handler(request)
        } catch {
            response = .text("internal server error\n", status: 500)
        }
        post(.response(response))
        switch response.body {
        case .data:
            return
        case .stream(let stream):
            for await chunk in stream {
                guard await write(chunk) else { break }
            }
        case .writer(let body):
            do {
                try await body(HTTPServerResponseWriter(exchange: self))
            } catch {
                post(.failed)
                return
            }
        }
        post(.end)
    }

    /// Hands a chunk to the worker and waits until it is written; `false` once the client is gone.
    func write(_ chunk: Data) async -> Bool {
        if chunk.isEmpty { return !state.withLock { $0.isClosed } }
        return await withCheckedContinuation { continuation in
            let accepted = state.withLock { state -> Bool in
                guard !state.isClosed else { return false }
                state.queue.append(.chunk(chunk, continuation))
                return true
            }
            if accepted { signal.signal() } else { continuation.resume(returning: false) }
        }
    }

    private func post(_ event: Event) {
        let accepted = state.withLock { state -> Bool in
            guard !state.isClosed else { return false }
            state.queue.append(event)
            return true
        }
        if accepted { signal.signal() }
    }

    /// Server shutdown: wakes the worker with `.aborted` and cancels the handler task.
    func abort() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.isAborted = true
            return state.task
        }
        task?.cancel()
        signal.signal()
    }

    /// Worker side: blocks for the next event; with a timeout, `.timedOut` when nothing came in time.
    func next(timeout: Duration?) -> Event {
        var waitedOut = false
        while true {
            let event = state.withLock { state -> Event? in
                if !state.queue.isEmpty { return state.queue.removeFirst() }
                return state.isAborted ? .aborted : nil
            }
            if let event { return event }
            if waitedOut { return .timedOut }
            if let timeout {
                let deadline = DispatchTime.now() + .milliseconds(CivetwebLibrary.milliseconds(timeout))
                if signal.wait(timeout: deadline) == .timedOut { waitedOut = true }
            } else {
                signal.wait()
            }
        }
    }

    /// Worker side, when it is done with the connection: refuses further chunks and cancels the task.
    func close() {
        let (pending, task) = state.withLock { state -> ([CheckedContinuation<Bool, Never>], Task<Void, Never>?) in
            state.isClosed = true
            let pending = state.queue.compactMap { event -> CheckedContinuation<Bool, Never>? in
                if case .chunk(_, let continuation) = event { return continuation }
                return nil
            }
            state.queue.removeAll()
            return (pending, state.task)
        }
        for continuation in pending { continuation.resume(returning: false) }
        task?.cancel()
        finished.complete()
    }
}
