/// RFC 3339 timestamps and proleptic Gregorian day arithmetic, without a `DateFormatter`.
public enum RFC3339 {
    /// Which variations beyond strict `2026-11-30T10:00:00.123Z` / `±hh:mm` a parse accepts (a space for `T` always is).
    public struct Options: OptionSet, Sendable {
        /// The option bits.
        public let rawValue: Int

        /// Makes options from their raw bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Accepts lowercase `t` and `z`.
        public static let lowercaseDesignators = Options(rawValue: 1 << 0)
        /// Accepts a missing offset (read as UTC) and PostgreSQL's `±hh` and `±hhmm` offsets.
        public static let postgresOffsets = Options(rawValue: 1 << 1)
    }

    /// The fields of a parsed timestamp, as written.
    public struct Components: Sendable, Hashable {
        /// The year, month (1...12) and day (1...31).
        public var year: Int, month: Int, day: Int
        /// The hour (0...23), minute (0...59) and second (0...60).
        public var hour: Int, minute: Int, second: Int
        /// The fraction's digits (0...9 each), empty when there was no fraction.
        public var fractionDigits: [UInt8]
        /// The UTC offset in seconds (east positive).
        public var offsetSeconds: Int

        /// Whole seconds since 1970-01-01T00:00:00Z, ignoring the fraction.
        public var epochSeconds: Int64 {
            Int64(RFC3339.daysFromCivil(year: year, month: month, day: day)) * 86_400
                + Int64(hour * 3600 + minute * 60 + second) - Int64(offsetSeconds)
        }

        /// The fraction truncated to `digits` places, as an integer (e.g. microseconds for 6).
        public func fraction(digits: Int) -> Int {
            var value = 0
            for index in 0..<digits { value = value * 10 + (index < fractionDigits.count ? Int(fractionDigits[index]) : 0) }
            return value
        }

        /// The fraction as a `Double` of seconds, summing every digit.
        public var fractionSeconds: Double {
            var fraction = 0.0, scale = 0.1
            for digit in fractionDigits {
                fraction += Double(digit) * scale
                scale /= 10
            }
            return fraction
        }
    }

    /// The fields of `text`, or nil when it is malformed or out of range under `options`.
    public static func parse(_ text: String, options: Options = []) -> Components? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        let lowercase = options.contains(.lowercaseDesignators), postgres = options.contains(.postgresOffsets)
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect(lowercase ? "Tt " : "T "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
              second <= 60 else { return nil }
        var fractionDigits: [UInt8] = []
        if expect(".") {
            while index < bytes.count, (48...57).contains(bytes[index]) {
                fractionDigits.append(bytes[index] - 48)
                index += 1
            }
            guard !fractionDigits.isEmpty else { return nil }
        }
        var offset = 0
        if index == bytes.count, postgres {
            offset = 0
        } else if expect(lowercase ? "Zz" : "Z") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2) else { return nil }
            var minutes = 0
            if postgres {
                if index < bytes.count {
                    _ = expect(":")
                    guard let parsed = number(2) else { return nil }
                    minutes = parsed
                }
            } else {
                guard expect(":"), let parsed = number(2) else { return nil }
                minutes = parsed
            }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        return Components(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                          fractionDigits: fractionDigits, offsetSeconds: offset)
    }

    /// `count` units of 10^-`fractionDigits` s since 1970 as UTC text with that many fraction digits and `Z`,
    /// e.g. `2026-11-30T10:00:00.123Z` for milliseconds (3) or `….123456Z` for microseconds (6).
    public static func format(_ count: Int64, fractionDigits: Int) -> String {
        var unitsPerSecond: Int64 = 1
        for _ in 0..<fractionDigits { unitsPerSecond *= 10 }
        var seconds = count / unitsPerSecond, fraction = count % unitsPerSecond
        if fraction < 0 { fraction += unitsPerSecond; seconds -= 1 }
        var days = seconds / 86_400, secondOfDay = seconds % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let (year, month, day) = civilFromDays(Int(days))
        func pad(_ value: some BinaryInteger, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        let time = "\(pad(secondOfDay / 3600, 2)):\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2))"
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(time)"
            + (fractionDigits > 0 ? ".\(pad(fraction, fractionDigits))" : "") + "Z"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
    public static func civilFromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
