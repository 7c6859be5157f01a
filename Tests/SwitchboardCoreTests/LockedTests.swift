import Foundation
import SwitchboardCore
import Testing

/// `Locked`: the project's one lock, in whichever variant this build compiled (`Mutex`, or `NSLock` for TSan).
@Suite("Locked")
struct LockedTests {
    /// A value that cannot be copied, as some locked state is.
    struct Token: ~Copyable {
        var uses = 0
    }

    /// Something thrown from inside the lock.
    struct Refusal: Error {}

    @Test("increments from many threads at once are all kept")
    func concurrentIncrements() {
        let count = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<10_000 { count.withLock { $0 += 1 } }
        }
        #expect(count.withLock { $0 } == 80_000)
    }

    @Test("a throwing body rethrows its own error type, keeps its changes and releases the lock")
    func throwingBody() {
        let state = Locked([Int]())
        #expect(throws: Refusal.self) {
            try state.withLock { (values: inout [Int]) throws(Refusal) in
                values.append(1)
                throw Refusal()
            }
        }
        #expect(state.withLock { $0 } == [1], "the lock was not released or the change was lost")
    }

    @Test("a noncopyable value is reachable and changed in place")
    func noncopyableValue() {
        let token = Locked(Token())
        token.withLock { $0.uses += 1 }
        token.withLock { $0.uses += 1 }
        #expect(token.withLock { $0.uses } == 2)
    }
}
