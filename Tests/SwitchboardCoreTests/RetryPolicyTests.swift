import Foundation
import SwitchboardCore
import SwitchboardEngine
import TestSupport
import Testing

@Suite("RetryPolicy")
struct RetryPolicyTests {
    @Test("default policy values")
    func defaults() {
        let policy = RetryPolicy()
        #expect(policy.baseDelay == 0.5)
        #expect(policy.maxDelay == 30)
        #expect(policy.maxAttempts == 6)
        #expect(policy.jitter == 0.2)
    }

    @Test("the base delay doubles after each failure and caps at maxDelay", arguments: [
        (0, 0.5), (1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 16.0), (7, 30.0), (8, 30.0), (100, 30.0),
        (10_000, 30.0), (-3, 0.5),
    ])
    func doublesAndCaps(failures: Int, expected: TimeInterval) {
        #expect(RetryPolicy().baseDelay(afterFailures: failures) == expected)
    }

    @Test("a custom policy doubles from its own base and caps at its own maximum")
    func customPolicy() {
        let policy = RetryPolicy(baseDelay: 3, maxDelay: 20, maxAttempts: 10, jitter: 0)
        #expect((1...6).map { policy.baseDelay(afterFailures: $0) } == [3, 6, 12, 20, 20, 20])
    }

    @Test("the delay never decreases as failures grow")
    func monotonic() {
        let policy = RetryPolicy(baseDelay: 0.25, maxDelay: 60)
        let delays = (1...64).map { policy.baseDelay(afterFailures: $0) }
        #expect(zip(delays, delays.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(delays.allSatisfy { $0 > 0 && $0 <= 60 && $0.isFinite })
    }
}

@Suite("OutboxAttemptMachine")
struct OutboxAttemptMachineTests {
    private let now = Date(timeIntervalSince1970: 1_700_000_000)
    private let transient = SwitchboardError(.transport, "timeout", retryable: true)

    @Test("success completes and counts the attempt", arguments: [0, 1, 5])
    func success(previousAttempts: Int) {
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: previousAttempts)
        #expect(machine.publishSucceeded() == .complete)
        #expect(machine.attempts == previousAttempts + 1)
    }

    @Test("retryable failures retry with the exact base delay when random is 0, then give up at maxAttempts")
    func retriesThenFails() {
        let policy = RetryPolicy()
        var machine = OutboxAttemptMachine(policy: policy, attempts: 0)
        var actions: [OutboxAttemptMachine.Action] = []
        for _ in 0..<policy.maxAttempts { actions.append(machine.publishFailed(transient, now: now, random: 0)) }
        #expect(actions.dropLast() == [
            .retry(at: now.addingTimeInterval(0.5)), .retry(at: now.addingTimeInterval(1)),
            .retry(at: now.addingTimeInterval(2)), .retry(at: now.addingTimeInterval(4)),
            .retry(at: now.addingTimeInterval(8)),
        ])
        #expect(actions.last == .fail(reason: "gave up after 6 attempts: timeout", retryable: true))
        #expect(machine.attempts == 6)
    }

    /// The delays a fresh machine on `policy` answers `failures` transient failures in a row with (nil where it
    /// did not retry), each drawn with `random`.
    private func retryDelays(_ policy: RetryPolicy, failures: Int, random: Double) -> [TimeInterval?] {
        var machine = OutboxAttemptMachine(policy: policy, attempts: 0)
        return (0..<failures).map { _ -> TimeInterval? in
            guard case .retry(let at) = machine.publishFailed(transient, now: now, random: random) else { return nil }
            return at.timeIntervalSince(now)
        }
    }

    @Test("random 1 stretches each delay by the full jitter")
    func fullJitter() {
        let delays = retryDelays(RetryPolicy(baseDelay: 1, maxDelay: 100, maxAttempts: 5, jitter: 0.5), failures: 4, random: 1)
        #expect(delays == [1.5, 3, 6, 12])
    }

    @Test("delays grow and stay within the jitter bounds for any random value", arguments: [UInt64(1), 2, 3, 4, 5])
    func jitterBounds(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let policy = RetryPolicy()
        var machine = OutboxAttemptMachine(policy: policy, attempts: 0)
        var previous: TimeInterval = 0
        for failure in 1..<policy.maxAttempts {
            let random = Double.random(in: 0...1, using: &generator)
            let action = machine.publishFailed(transient, now: now, random: random)
            guard case .retry(let at) = action else {
                Issue.record("expected a retry after failure \(failure), got \(action)")
                return
            }
            let delay = at.timeIntervalSince(now)
            let base = policy.baseDelay(afterFailures: failure)
            #expect(delay >= base)
            #expect(delay <= base * (1 + policy.jitter) + 1e-9)
            #expect(abs(delay - base * (1 + policy.jitter * random)) < 1e-6)
            #expect(delay > previous, "delays increase while under the cap")
            previous = delay
        }
        let last = machine.publishFailed(transient, now: now, random: 0.5)
        guard case .fail(_, let retryable) = last else {
            Issue.record("expected fail at maxAttempts, got \(last)")
            return
        }
        #expect(retryable)
    }

    @Test("at the cap the delays stop growing")
    func cappedDelays() {
        let delays = retryDelays(RetryPolicy(baseDelay: 1, maxDelay: 4, maxAttempts: 10, jitter: 0), failures: 6, random: 0.9)
        #expect(delays == [1, 2, 4, 4, 4, 4])
    }

    @Test("a machine resumed from persisted attempts gives up on the next failure at the limit")
    func resumed() {
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 5)
        #expect(machine.publishFailed(transient, now: now, random: 0)
            == .fail(reason: "gave up after 6 attempts: timeout", retryable: true))

        var earlier = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 3)
        #expect(earlier.publishFailed(transient, now: now, random: 0) == .retry(at: now.addingTimeInterval(4)))
        #expect(earlier.attempts == 4)
    }

    @Test("maxAttempts 1 gives up on the first failure")
    func singleAttempt() {
        var machine = OutboxAttemptMachine(policy: RetryPolicy(maxAttempts: 1), attempts: 0)
        #expect(machine.publishFailed(transient, now: now, random: 0)
            == .fail(reason: "gave up after 1 attempts: timeout", retryable: true))
    }

    @Test("a non-retryable error fails immediately with its message", arguments: [
        SwitchboardError(.refused, "blocked by recipient"),
        SwitchboardError(.contentTooLarge, "too big"),
        SwitchboardError(.unauthorized, "token expired", retryable: false),
    ])
    func nonRetryable(error: SwitchboardError) {
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 0)
        let action = machine.publishFailed(error, now: now, random: 0)
        guard case .fail(let reason, _) = action else {
            Issue.record("expected fail, got \(action)")
            return
        }
        #expect(reason == error.message)
        #expect(machine.attempts == 1)
    }

    /// `DeliveryState.failed(retryable:)` says whether a user retry can succeed; an error the backend marked
    /// non-retryable should not be reported as retryable.
    @Test("a non-retryable error produces a non-retryable failure")
    func nonRetryableFlag() {
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 0)
        let action = machine.publishFailed(SwitchboardError(.refused, "blocked"), now: now, random: 0)
        #expect(action == .fail(reason: "blocked", retryable: false))
    }

    @Test("a server's Retry-After is waited for at least, never less than the policy's delay")
    func retryAfterHonoured() {
        let now = Date(timeIntervalSince1970: 1_000)
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 0)
        let limited = SwitchboardError(.transport, "HTTP 429", retryable: true, retryAfter: .seconds(120))
        #expect(machine.publishFailed(limited, now: now, random: 0) == .retry(at: now.addingTimeInterval(120)))
        let short = SwitchboardError(.transport, "HTTP 503", retryable: true, retryAfter: .milliseconds(1))
        #expect(machine.publishFailed(short, now: now, random: 0) == .retry(at: now.addingTimeInterval(0.5 * 2)))
    }
}
