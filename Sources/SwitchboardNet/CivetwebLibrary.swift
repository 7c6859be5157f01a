import CCivetweb
import Dispatch
import Foundation
import SwitchboardCore

/// Process-wide civetweb set-up and small helpers shared by the server and the WebSocket client.
enum CivetwebLibrary {
    /// The features `mg_init_library` managed to initialise (called once, never undone: civetweb counts calls).
    static let features: UInt32 = {
        let wanted = UInt32(MG_FEATURES_WEBSOCKET) | UInt32(MG_FEATURES_TLS)
        return UInt32(mg_init_library(wanted))
    }()

    /// Whether TLS is usable. civetweb loads `libssl.so` at run time and needs every symbol it knows; Debian 12's
    /// civetweb 1.15 asks for `SSL_get_peer_certificate`, which OpenSSL 3 no longer exports, so this is `false` there.
    static var supportsTLS: Bool { features & UInt32(MG_FEATURES_TLS) != 0 }

    /// Makes sure `mg_init_library` has run before any other civetweb call.
    static func ensureInitialized() { _ = features }

    /// Runs `body` on a Dispatch thread, for civetweb calls that block (connect, join, `mg_stop`),
    /// so they never hold one of the few cooperative-pool threads.
    static func offloaded<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: body()) }
        }
    }

    /// The milliseconds civetweb expects in its `*_ms` options (at least 1).
    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        let total = seconds.multipliedReportingOverflow(by: 1000)
        guard !total.overflow else { return Int.max / 2 }
        return max(1, Int(clamping: total.partialValue + attoseconds / 1_000_000_000_000_000))
    }
}

/// A NULL-terminated `name, value, name, value, …` option list that civetweb copies during `mg_start2`.
struct CivetwebOptions: ~Copyable {
    private let storage: UnsafeMutablePointer<UnsafePointer<CChar>?>
    private let count: Int

    /// Duplicates every string into C memory.
    init(_ pairs: [(String, String)]) {
        count = pairs.count * 2 + 1
        storage = .allocate(capacity: count)
        var index = 0
        for (name, value) in pairs {
            storage[index] = UnsafePointer(strdup(name))
            storage[index + 1] = UnsafePointer(strdup(value))
            index += 2
        }
        storage[index] = nil
    }

    /// The list in the shape `mg_start2` reads.
    var pointer: UnsafeMutablePointer<UnsafePointer<CChar>?> { storage }

    deinit {
        for index in 0..<(count - 1) { free(UnsafeMutableRawPointer(mutating: storage[index])) }
        storage.deallocate()
    }
}

/// A one-shot event that any number of tasks can await, with or without a time limit.
final class CivetwebCompletion: Sendable {
    private struct State {
        var isCompleted = false
        var nextWaiter: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
    }

    private let state = Locked(State())

    /// Whether `complete()` has been called.
    var isCompleted: Bool { state.withLock { $0.isCompleted } }

    /// Fires the event (only the first call counts) and wakes every waiter.
    func complete() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.isCompleted else { return [] }
            state.isCompleted = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Waits until the event fires.
    func wait() async {
        _ = await wait(timeout: nil)
    }

    /// Waits until the event fires (`true`) or `timeout` passes (`false`).
    func wait(timeout: Duration?) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withCheckedContinuation { continuation in
            let alreadyDone = state.withLock { state -> Bool in
                if state.isCompleted { return true }
                state.waiters[id] = continuation
                return false
            }
            if alreadyDone {
                continuation.resume(returning: true)
                return
            }
            if let timeout {
                Task {
                    try? await Task.sleep(for: timeout)
                    self.expire(id)
                }
            }
        }
    }

    private func expire(_ id: UInt64) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.resume(returning: false)
    }
}

/// A civetweb context or connection pointer that crosses threads.
///
/// `@unchecked` because civetweb is built for this: its calls on one connection are serialised by its own
/// connection lock, and every Swift-side holder keeps the pointer inside a `Locked` that is cleared before
/// civetweb recycles or frees the object.
struct CivetwebHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}
