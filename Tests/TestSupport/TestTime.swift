import Foundation

/// The time bounds of test waits, stretched on slow runs.
///
/// A test waits for the event it needs; its time bound only catches "never". Under a sanitizer (5–20 times slower)
/// or on a heavily loaded machine the same events take longer, so `SWITCHBOARD_TEST_TIME_SCALE` (a number ≥ 1,
/// default 1; `make sanitize` sets it) multiplies every bound taken through here.
public enum TestTime {
    /// The factor every bound is multiplied by.
    public static let scale: Double = {
        guard let text = ProcessInfo.processInfo.environment["SWITCHBOARD_TEST_TIME_SCALE"], let value = Double(text),
              value.isFinite, value >= 1 else { return 1 }
        return value
    }()

    /// `bound` stretched by `scale`.
    public static func limit(_ bound: Duration) -> Duration {
        scale == 1 ? bound : bound * scale
    }

    /// The instant `bound` (stretched by `scale`) from now.
    public static func deadline(after bound: Duration) -> ContinuousClock.Instant {
        ContinuousClock.now + limit(bound)
    }
}
