import Foundation
import SwitchboardCore
import Testing

@Suite("RFC3339")
struct RFC3339Tests {
    @Test func civilDaysRoundTripAcrossLeapYears() {
        #expect(RFC3339.daysFromCivil(year: 1970, month: 1, day: 1) == 0)
        #expect(RFC3339.daysFromCivil(year: 2000, month: 2, day: 29) == 11_016)
        #expect(RFC3339.daysFromCivil(year: 2000, month: 3, day: 1) == 11_017)
        #expect(RFC3339.daysFromCivil(year: 1900, month: 3, day: 1) - RFC3339.daysFromCivil(year: 1900, month: 2, day: 28) == 1,
                "1900 is not a leap year")
        #expect(RFC3339.daysFromCivil(year: 2024, month: 3, day: 1) - RFC3339.daysFromCivil(year: 2024, month: 2, day: 28) == 2)
        #expect(RFC3339.daysFromCivil(year: 1969, month: 12, day: 31) == -1)
        for days in stride(from: -800_000, through: 800_000, by: 997) {
            let (year, month, day) = RFC3339.civilFromDays(days)
            #expect(RFC3339.daysFromCivil(year: year, month: month, day: day) == days)
        }
        let leapDay = RFC3339.civilFromDays(11_016)
        #expect(leapDay.year == 2000 && leapDay.month == 2 && leapDay.day == 29)
    }

    @Test func formatsWhatEachCallerWrote() {
        // Socket.IO server: milliseconds.
        #expect(RFC3339.format(0, fractionDigits: 3) == "1970-01-01T00:00:00.000Z")
        #expect(RFC3339.format(1_796_032_800_123, fractionDigits: 3) == "2026-11-30T10:00:00.123Z")
        #expect(RFC3339.format(951_782_400_000, fractionDigits: 3) == "2000-02-29T00:00:00.000Z")
        #expect(RFC3339.format(-1, fractionDigits: 3) == "1969-12-31T23:59:59.999Z")
        // Supabase: microseconds.
        #expect(RFC3339.format(1_796_032_800_123_456, fractionDigits: 6) == "2026-11-30T10:00:00.123456Z")
        #expect(RFC3339.format(-1, fractionDigits: 6) == "1969-12-31T23:59:59.999999Z")
        #expect(RFC3339.format(0, fractionDigits: 0) == "1970-01-01T00:00:00Z")
    }

    @Test func parsesStrictAndPostgresForms() throws {
        let strict = try #require(RFC3339.parse("2000-03-01T01:00:00.5+01:00"))
        #expect(strict.epochSeconds == 951_868_800)
        #expect(strict.fractionSeconds == 0.5)
        #expect(strict.fraction(digits: 6) == 500_000)
        #expect(RFC3339.parse("2026-11-30T10:00:00") == nil, "strict parsing needs an offset")
        #expect(RFC3339.parse("2026-11-30T10:00:00+01") == nil)
        #expect(RFC3339.parse("2026-11-30t10:00:00z") == nil)
        #expect(RFC3339.parse("2026-11-30t10:00:00z", options: .lowercaseDesignators)?.epochSeconds == 1_796_032_800)
        #expect(RFC3339.parse("2026-13-30T10:00:00Z") == nil)
        #expect(RFC3339.parse("2026-11-30T10:00:00.Z") == nil)

        let postgres: RFC3339.Options = .postgresOffsets
        #expect(RFC3339.parse("2026-11-30 10:00:00", options: postgres)?.epochSeconds == 1_796_032_800)
        #expect(RFC3339.parse("2026-11-30 11:00:00+01", options: postgres)?.epochSeconds == 1_796_032_800)
        #expect(RFC3339.parse("2026-11-30 05:30:00-0430", options: postgres)?.epochSeconds == 1_796_032_800)
        #expect(RFC3339.parse("2026-11-30 05:30:00-04:", options: postgres) == nil)
        let micros = try #require(RFC3339.parse("2026-11-30T07:55:00.1234567+00:00", options: postgres))
        #expect(micros.fraction(digits: 6) == 123_456)
        #expect(micros.fraction(digits: 3) == 123)
    }

    @Test func roundTripsThroughFormat() throws {
        for count: Int64 in [0, -1, 951_782_400_000_123, 1_796_032_800_123_456, -62_135_596_800_000_000] {
            let parsed = try #require(RFC3339.parse(RFC3339.format(count, fractionDigits: 6)))
            #expect(parsed.epochSeconds * 1_000_000 + Int64(parsed.fraction(digits: 6)) == count)
        }
    }
}
