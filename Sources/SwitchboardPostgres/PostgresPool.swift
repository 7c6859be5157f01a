import Dispatch
import Foundation
import SwitchboardCore

/// A fixed-size pool of PostgreSQL connections whose blocking libpq calls run on their own threads.
///
/// libpq blocks; running it on Swift's cooperative pool (two threads on a two-core machine) would stall every
/// other task. `withConnection` therefore hops to a dispatch queue, waits there for a free connection, runs
/// the body and resumes the caller. A connection that fails with `connectionClosed` is dropped and replaced.
public final class PostgresPool: Sendable {
    private struct State {
        var idle: [PostgresConnection] = []
        var open = 0
        var closed = false
    }

    private let url: String
    private let size: Int
    private let state = Locked(State())
    private let slots: DispatchSemaphore
    private let queue = DispatchQueue(label: "switchboard.postgres-pool", attributes: .concurrent)

    /// A pool of at most `size` connections to `url`; connections open lazily.
    public init(url: String, size: Int) {
        self.url = url
        self.size = max(1, size)
        self.slots = DispatchSemaphore(value: max(1, size))
    }

    /// Runs `body` with a connection of its own, off the cooperative thread pool.
    public func withConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try self.run(body) })
            }
        }
    }

    /// Runs `body` on the calling thread (which may block) with a pooled connection.
    public func run<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        slots.wait()
        defer { slots.signal() }
        let connection = try checkOut()
        do {
            let value = try body(connection)
            checkIn(connection)
            return value
        } catch let error as PostgresError where error.code == .connectionClosed || error.code == .connectionFailed {
            discard(connection)
            throw error
        } catch {
            checkIn(connection)
            throw error
        }
    }

    /// Closes every idle connection; later calls fail.
    public func close() {
        let idle = state.withLock { state -> [PostgresConnection] in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    private func checkOut() throws -> PostgresConnection {
        let reused = try state.withLock { state -> PostgresConnection? in
            guard !state.closed else {
                throw PostgresError(code: .connectionClosed, message: "the connection pool is closed")
            }
            if let connection = state.idle.popLast() { return connection }
            state.open += 1
            return nil
        }
        if let reused { return reused }
        do {
            return try PostgresConnection(url: url)
        } catch {
            state.withLock { $0.open -= 1 }
            throw error
        }
    }

    private func checkIn(_ connection: PostgresConnection) {
        let keep = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
    }

    private func discard(_ connection: PostgresConnection) {
        state.withLock { $0.open -= 1 }
        connection.close()
    }
}
