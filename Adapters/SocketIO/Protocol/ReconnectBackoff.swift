import Foundation

/// socket.io-client's reconnect delays: 1 s doubling per attempt, randomized by ±50 %, capped at 5 s, unlimited
/// attempts, reset after a successful connect.
///
/// Attempt `n` (0-based) waits `min(maximumDelay, initialDelay · 2ⁿ · (1 + factor · (2r − 1)))` with `r` in
/// `0..<1` from the injected random source: socket.io-client's jitter (its backo2 picks the sign from the same
/// random number; this uses the equivalent symmetric form so a fixed `r` gives a predictable delay).
public struct ReconnectBackoff: Sendable {
    /// The delay before the first attempt before jitter (1 s).
    public var initialDelay: Duration
    /// The largest delay (5 s).
    public var maximumDelay: Duration
    /// The relative jitter, 0…1 (0.5).
    public var randomizationFactor: Double
    /// Attempts made since the last reset.
    public private(set) var attempts = 0
    private let random: @Sendable () -> Double

    /// A backoff with socket.io-client's defaults; `random` returns numbers in `0..<1` (inject a fixed one in tests).
    public init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(5),
                randomizationFactor: Double = 0.5,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
        self.randomizationFactor = min(max(randomizationFactor, 0), 1)
        self.random = random
    }

    /// The delay before the next attempt; counts the attempt.
    public mutating func nextDelay() -> Duration {
        let delay = delay(forAttempt: attempts, random: random())
        attempts += 1
        return delay
    }

    /// Forgets past attempts (call after a successful connect).
    public mutating func reset() { attempts = 0 }

    /// The delay for 0-based attempt `attempt` with the random number `random` in `0..<1`.
    public func delay(forAttempt attempt: Int, random: Double) -> Duration {
        let base = seconds(initialDelay) * pow(2, Double(min(max(attempt, 0), 40)))
        let r = min(max(random, 0), 1)
        let jittered = base * (1 + randomizationFactor * (2 * r - 1))
        let capped = min(jittered, seconds(maximumDelay))
        return .milliseconds(Int64((max(capped, 0) * 1000).rounded()))
    }

    private func seconds(_ duration: Duration) -> Double {
        let (whole, attoseconds) = duration.components
        return Double(whole) + Double(attoseconds) / 1e18
    }
}
