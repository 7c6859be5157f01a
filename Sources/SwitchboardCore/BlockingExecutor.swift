import Foundation

/// Threads of its own that run blocking work (SQLite, libpq, a retry's pause) for async callers, so Swift's
/// cooperative pool never waits on a lock, a disk or a database server.
///
/// Jobs run first in, first out on at most `threads` threads (the `init` argument), started when work arrives.
/// With one thread the executor is serial: whatever it owns (an SQLite connection) is only ever touched by that
/// thread. The threads end when the executor is released and its queued work is done.
public final class BlockingExecutor: Sendable {
    /// The queue and its threads; shared with the threads, which outlive no queued job.
    private let queue: JobQueue

    /// An executor running at most `threads` jobs at once on threads named `name` (its first 15 bytes).
    public init(name: String, threads: Int = 1) {
        queue = JobQueue(name: name, threadLimit: max(1, threads))
    }

    deinit { queue.close() }

    /// Runs `body` on one of the executor's threads and returns its result; the caller suspends meanwhile.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.enqueue { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Whether the calling thread is one of this executor's.
    public var isCurrent: Bool { Thread.current.threadDictionary[JobQueue.ownerKey] as? ObjectIdentifier == ObjectIdentifier(queue) }
}

/// A first-in-first-out list of jobs served by lazily started threads; every field is guarded by `condition`.
private final class JobQueue: @unchecked Sendable {
    /// The thread-dictionary key naming the queue a thread serves.
    static let ownerKey = "switchboard.blocking-executor"

    let name: String
    let threadLimit: Int
    private let condition = NSCondition()
    private var jobs: [@Sendable () -> Void] = []
    private var head = 0
    private var threads = 0
    private var idle = 0
    private var closed = false

    init(name: String, threadLimit: Int) {
        self.name = name
        self.threadLimit = threadLimit
    }

    /// Queues `job`, starting a thread when the idle ones cannot take every queued job and the limit allows one.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        jobs.append(job)
        let start = jobs.count - head > idle && threads < threadLimit
        if start { threads += 1 }
        condition.signal()
        condition.unlock()
        if start { startThread() }
    }

    /// Lets the threads end once the queued jobs are done.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func startThread() {
        Thread { [self] in serve() }.start()
    }

    /// A thread's loop: take the oldest job, run it outside the lock, until closed and drained.
    private func serve() {
        // Named from inside, at most 15 bytes: Linux keeps no more, and only a thread's own name reaches the kernel
        // (`top -H`, `perf`).
        Thread.current.name = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        Thread.current.threadDictionary[Self.ownerKey] = ObjectIdentifier(self)
        condition.lock()
        while true {
            while head == jobs.count && !closed {
                idle += 1
                condition.wait()
                idle -= 1
            }
            if head == jobs.count {
                threads -= 1
                condition.unlock()
                return
            }
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            condition.unlock()
            job()
            condition.lock()
        }
    }
}
