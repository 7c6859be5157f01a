import Foundation
import SwitchboardCore

/// The bridge between one request's connection, on the server's event loop, and the Swift task running its handler.
///
/// The loop owns the socket and does every read and write; the task only posts events (the response, chunks, the
/// end). Each chunk's sender is resumed once the loop has handed the chunk to the kernel, which gives natural
/// back-pressure, and with `false` once the client has gone.
final class HTTPServerExchange: Sendable {
    /// What the handler's task tells the connection.
    enum Event: Sendable {
        /// The handler's response (head, and the body when it is `.data`).
        case response(HTTPServerResponse)
        /// The streamed body is complete.
        case end
        /// The `.writer` body threw: end the response so the client sees it truncated.
        case failed
    }

    private struct State {
        var isClosed = false
        var task: Task<Void, Never>?
    }

    private let connection: HTTPServerConnection
    private let state = Locked(State())

    /// An exchange for the request being answered on `connection`.
    init(connection: HTTPServerConnection) {
        self.connection = connection
    }

    /// Starts the handler in a new task.
    func start(_ handler: @escaping HTTPServer.Handler, request: HTTPServerRequest) {
        let task = Task { await self.run(handler, request: request) }
        let closedAlready = state.withLock { state -> Bool in
            state.task = task
            return state.isClosed
        }
        if closedAlready { task.cancel() }
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

    /// Hands a chunk to the connection and waits until it is written; `false` once the client is gone.
    func write(_ chunk: Data) async -> Bool {
        if chunk.isEmpty { return !state.withLock { $0.isClosed } }
        guard !state.withLock({ $0.isClosed }) else { return false }
        let connection = connection
        return await withCheckedContinuation { continuation in
            connection.loop.execute({
                connection.streamChunk(chunk, from: self) { continuation.resume(returning: $0) }
            }, ifDropped: { continuation.resume(returning: false) })
        }
    }

    private func post(_ event: Event) {
        guard !state.withLock({ $0.isClosed }) else { return }
        let connection = connection
        connection.loop.execute { connection.exchangeEvent(event, from: self) }
    }

    /// The connection is done with this request (answered, failed or gone): refuses further chunks and cancels
    /// the handler's task.
    func close() {
        let task = state.withLock { state -> Task<Void, Never>? in
            state.isClosed = true
            return state.task
        }
        task?.cancel()
    }
}
