import Dispatch

/// Runs blocking calls (SQLite, libpq) on dispatch threads, never on Swift's cooperative pool.
public struct BlockingRunner: Sendable {
    private let queue: DispatchQueue

    /// A runner whose threads carry `label` (a concurrent queue: calls run in parallel).
    public init(label: String) {
        queue = DispatchQueue(label: label, attributes: .concurrent)
    }

    /// Runs `body` on a dispatch thread and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
