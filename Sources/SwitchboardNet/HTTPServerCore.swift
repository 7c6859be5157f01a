import Foundation
import SwitchboardCore

/// The server's life cycle: routes, start, and the orderly stop, around one `HTTPServerListener` on its event loop.
final class HTTPServerCore: Sendable {
    private enum Phase {
        case idle, starting, running, stopping, stopped
    }

    private struct State {
        var phase = Phase.idle
        var listener: HTTPServerListener?
    }

    let configuration: HTTPServer.Configuration
    let routes = HTTPServerRoutes()
    private let state = Locked(State())
    private let stopped = CivetwebCompletion()

    init(configuration: HTTPServer.Configuration) {
        self.configuration = configuration
    }

    var port: Int? { state.withLock { $0.phase == .running ? $0.listener?.port : nil } }

    func addRoute(method: HTTPMethod, prefix: String, handler: @escaping HTTPServer.Handler) {
        routes.add(method: method, prefix: prefix, handler: handler)
    }

    func addWebSocketRoute(path: String, admit: HTTPServer.WebSocketAdmission?,
                           handler: @escaping HTTPServer.WebSocketHandler) {
        routes.addWebSocket(path: path, route: HTTPServerWebSocketRoute(admit: admit, handler: handler))
    }

    // MARK: Life cycle

    func start() throws -> Int {
        try state.withLock { state in
            guard state.phase == .idle else { throw HTTPServerError(.alreadyStarted, "a server starts once") }
            state.phase = .starting
        }
        let listener: HTTPServerListener
        do {
            listener = try HTTPServerListener(configuration: configuration, routes: routes)
            try listener.start()
        } catch {
            state.withLock { $0.phase = .stopped }
            stopped.complete()
            throw error
        }
        state.withLock { state in
            state.listener = listener
            state.phase = .running
        }
        return listener.port
    }

    func stop() async {
        let claimed = state.withLock { state -> HTTPServerListener? in
            guard state.phase == .running else { return nil }
            state.phase = .stopping
            return state.listener
        }
        guard let listener = claimed else {
            let neverStarted = state.withLock { state -> Bool in
                guard state.phase == .idle else { return false }
                state.phase = .stopped
                return true
            }
            if neverStarted { stopped.complete() }
            await stopped.wait()
            return
        }
        // No new connections or requests; unanswered requests get 503 and streams end.
        _ = await listener.loop.submit { listener.stopAccepting() }
        let deadline = ContinuousClock.now + configuration.closeHandshakeTimeout
        // Start every WebSocket closing handshake, then give the peers one shared deadline.
        let sockets = listener.openWebSockets
        await withTaskGroup(of: Void.self) { group in
            for socket in sockets {
                group.addTask { await socket.channel.close(code: .goingAway, reason: "server stopping") }
            }
        }
        for completion in sockets.map(\.channel.ended) + [listener.drained] {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { break }
            _ = await completion.wait(timeout: remaining)
        }
        _ = await listener.loop.submit { listener.closeAll() }
        await listener.drained.wait()
        await listener.loop.shutDown()
        state.withLock { state in
            state.phase = .stopped
            state.listener = nil
        }
        stopped.complete()
    }

    /// Stops without waiting (the public server was released while running).
    func stopInBackground() {
        guard state.withLock({ $0.phase == .running }) else { return }
        Task { await self.stop() }
    }
}
