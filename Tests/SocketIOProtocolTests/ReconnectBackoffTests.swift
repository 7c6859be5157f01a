import Foundation
import Testing
@testable import SocketIOProtocol

/// Reconnect delays: 1 s doubling to 5 s with ±50 % jitter from an injected source.
@Suite("Reconnect backoff")
struct ReconnectBackoffTests {
    private func sequence(random: Double, count: Int = 7) -> [Duration] {
        var backoff = ReconnectBackoff(random: { random })
        return (0..<count).map { _ in backoff.nextDelay() }
    }

    @Test("without jitter (r = 0.5) the delays are 1, 2, 4, then capped at 5 s forever")
    func exactSequence() {
        #expect(sequence(random: 0.5) == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5),
                                          .seconds(5), .seconds(5)])
    }

    @Test("the jitter extremes are ±50 % of the doubling delay, and never above the 5 s cap")
    func jitterBounds() {
        #expect(sequence(random: 0) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(5),
                                        .seconds(5), .seconds(5)])
        #expect(sequence(random: 0.999_999) == [.milliseconds(1500), .seconds(3), .seconds(5), .seconds(5),
                                                .seconds(5), .seconds(5), .seconds(5)])
        let backoff = ReconnectBackoff()
        for attempt in 0..<50 {
            for r in stride(from: 0.0, to: 1.0, by: 0.125) {
                let delay = backoff.delay(forAttempt: attempt, random: r)
                let base = Double(1 << min(attempt, 20))
                #expect(delay >= .milliseconds(Int64(min(base * 0.5, 5) * 1000)))
                #expect(delay <= .seconds(5))
            }
        }
    }

    @Test("a pseudo-random source gives a deterministic sequence; reset starts again at ~1 s")
    func deterministicAndReset() {
        let values = [0.1, 0.9, 0.3, 0.7]
        let counter = Counter()
        var backoff = ReconnectBackoff(random: { values[counter.next() % values.count] })
        let delays = (0..<4).map { _ in backoff.nextDelay() }
        #expect(delays == [.milliseconds(600), .milliseconds(2800), .milliseconds(3200), .seconds(5)])
        #expect(backoff.attempts == 4)
        backoff.reset()
        #expect(backoff.attempts == 0)
        #expect(backoff.nextDelay() == .milliseconds(600))
    }

    @Test("custom parameters")
    func custom() {
        let backoff = ReconnectBackoff(initialDelay: .milliseconds(100), maximumDelay: .seconds(1),
                                       randomizationFactor: 0)
        #expect((0..<6).map { backoff.delay(forAttempt: $0, random: 0.9) }
                == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
    }
}

/// A thread-safe counter for the injected random source.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0

    /// Returns the current value and increments it.
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value - 1
    }
}
