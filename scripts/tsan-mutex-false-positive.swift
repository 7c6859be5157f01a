// ThreadSanitizer reports a data race on a counter behind `Synchronization.Mutex` (a false positive of this
// toolchain) and none on the same counter behind `NSLock`; that is why the project's locks go through `Locked`
// (Sources/SwitchboardCore/Locked.swift), which is an `NSLock` when built with `-DSWITCHBOARD_TSAN`.
// Run from the repository root:
//   swiftc -sanitize=thread -o /tmp/tsan-mutex scripts/tsan-mutex-false-positive.swift
//   /tmp/tsan-mutex mutex    # WARNING: ThreadSanitizer: data race ... exit status 66
//   /tmp/tsan-mutex nslock   # clean: prints 200000, exit status 0
import Foundation
import Synchronization

final class MutexCounter: Sendable {
    let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

final class LockCounter: @unchecked Sendable {
    let lock = NSLock()
    var count = 0
    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}

/// Runs `increment` 100,000 times on each of two threads (pthread_create/pthread_join, which TSan understands).
func onTwoThreads(_ increment: @escaping @Sendable () -> Void) {
    let threads = (0..<2).map { _ in
        var thread = pthread_t()
        let body = Unmanaged.passRetained(Box(increment)).toOpaque()
        pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            for _ in 0..<100_000 { box.run() }
            return nil
        }, body)
        return thread
    }
    for thread in threads { pthread_join(thread, nil) }
}

final class Box { let run: @Sendable () -> Void; init(_ run: @escaping @Sendable () -> Void) { self.run = run } }

switch CommandLine.arguments.dropFirst().first {
case "mutex":
    let counter = MutexCounter()
    onTwoThreads { counter.increment() }
    print(counter.value)
case "nslock":
    let counter = LockCounter()
    onTwoThreads { counter.increment() }
    print(counter.value)
default:
    print("usage: tsan-mutex mutex|nslock")
}
