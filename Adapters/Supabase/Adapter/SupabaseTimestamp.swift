import Foundation
import SwitchboardCore

/// PostgreSQL `timestamptz` text as PostgREST and realtime send it, to and from `Date` at microsecond precision.
public enum SupabaseTimestamp {
    /// Parses `2026-11-30T07:55:00.123456+00:00` (also with a space, `Z`, `+hh`, `+hhmm`, or no fraction).
    public static func parse(_ text: String) -> Date? {
        guard let parsed = RFC3339.parse(text, options: .postgresOffsets) else { return nil }
        let totalMicros = parsed.epochSeconds * 1_000_000 + Int64(parsed.fraction(digits: 6))
        return Date(timeIntervalSince1970: Double(totalMicros) / 1_000_000)
    }

    /// Formats `date` as UTC with six fractional digits, e.g. `2026-11-30T07:55:00.123456Z`.
    public static func format(_ date: Date) -> String {
        RFC3339.format(Int64((date.timeIntervalSince1970 * 1_000_000).rounded()), fractionDigits: 6)
    }
}
