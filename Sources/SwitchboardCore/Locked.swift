#if SWITCHBOARD_TSAN
import Foundation
#else
import Synchronization
#endif

// Every lock of the project is a `Locked`. Normally it is a `Synchronization.Mutex` (inline, no allocation).
// ThreadSanitizer reports state behind that `Mutex` as racing, a false positive of this toolchain
// (scripts/tsan-mutex-false-positive.swift shows it), so a build with `-Xswiftc -DSWITCHBOARD_TSAN` (what
// `make sanitize` does) makes it an `NSLock` over heap storage, which TSan understands: a TSan report is then a
// real race. Both variants have `Mutex`'s semantics and signatures.

#if SWITCHBOARD_TSAN
/// A value reachable only under its lock (the `NSLock` variant, for ThreadSanitizer runs).
public struct Locked<Value: ~Copyable>: ~Copyable, @unchecked Sendable {
    /// Guards `storage`; a pthread mutex underneath, intercepted by TSan.
    @usableFromInline let lock = NSLock()
    /// The value, touched only while `lock` is held (or in `deinit`, when nothing else can hold `self`).
    @usableFromInline let storage: UnsafeMutablePointer<Value>

    /// A lock guarding `initialValue`.
    public init(_ initialValue: consuming sending Value) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: initialValue)
    }

    deinit {
        storage.deinitialize(count: 1)
        storage.deallocate()
    }

    /// Runs `body` with the value while holding the lock and returns what it returns.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&storage.pointee)
    }
}
#else
/// A value reachable only under its lock.
public struct Locked<Value: ~Copyable>: ~Copyable, Sendable {
    /// The lock and the value it guards.
    @usableFromInline let mutex: Mutex<Value>

    /// A lock guarding `initialValue`.
    @inlinable
    public init(_ initialValue: consuming sending Value) {
        mutex = Mutex(initialValue)
    }

    /// Runs `body` with the value while holding the lock and returns what it returns.
    @inlinable
    public borrowing func withLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try mutex.withLock(body)
    }
}
#endif
