import Foundation
import SwitchboardCore

/// A task executor with one thread of its own: a test that must block inside an actor (a synchronous callback
/// holding a step back on purpose) runs that actor's work here through `withTaskExecutorPreference`, so the
/// blocking holds this thread instead of one of the cooperative pool's (one per core), which the code under test
/// and every other test of the process need meanwhile.
public final class DedicatedThreadExecutor: TaskExecutor, Sendable {
    /// The jobs waiting, and whether `shutDown` was called.
    private struct Queue {
        var jobs: [UnownedJob] = []
        var isShutDown = false
    }

    private let queue = Locked(Queue())
    private let wake = DispatchSemaphore(value: 0)
    private let thread = Locked<pthread_t?>(nil)

    /// Starts the thread (named `name`); call `shutDown` when done.
    public init(name: String = "dedicated-executor") {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Queues `job` to run on the thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        queue.withLock { $0.jobs.append(unowned) }
        wake.signal()
    }

    /// Lets the thread end once the jobs queued so far have run.
    public func shutDown() {
        queue.withLock { $0.isShutDown = true }
        wake.signal()
    }

    /// Whether the caller runs on this executor's thread.
    public var isCurrentThread: Bool {
        thread.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// The thread's loop: runs jobs in arrival order until shut down and drained.
    private func run() {
        thread.withLock { $0 = pthread_self() }
        while true {
            wake.wait()
            while let job = queue.withLock({ $0.jobs.isEmpty ? nil : $0.jobs.removeFirst() }) {
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
            if queue.withLock({ $0.isShutDown && $0.jobs.isEmpty }) { return }
        }
    }
}
