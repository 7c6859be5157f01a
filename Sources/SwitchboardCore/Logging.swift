import Foundation

/// How much a log line matters; libraries log at trace and debug, the command decides what people see.
public enum LogLevel: Int, Sendable, Comparable {
    /// Step-by-step detail.
    case trace
    /// Useful when debugging.
    case debug
    /// Normal but notable.
    case info
    /// Something went wrong and was handled.
    case warning
    /// Something went wrong and was not handled.
    case error

    /// Orders by severity.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Where library log lines go; the library accepts one, it never makes one.
public protocol LogSink: Sendable {
    /// Receives one line from or about `source` (`engine`, `pair general`); must never receive secrets
    /// (callers redact them).
    func log(_ level: LogLevel, _ message: @autoclosure () -> String, source: String)
}

/// A sink that drops everything (the default).
public struct SilentLogSink: LogSink {
    /// Creates the silent sink.
    public init() {}
    /// Drops the line.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, source: String) {}
}

extension LogLevel {
    /// The level's name in log lines: `trace`, `debug`, `info`, `warning`, `error`.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .warning: "warning"
        case .error: "error"
        }
    }
}

/// One line as a command prints it: `2026-11-30T10:00:00.123Z info pair general: took the lease as bridge-1`.
///
/// The time is RFC 3339 in UTC with milliseconds; the subject (what the line concerns, such as `pair general`) is
/// left out when there is none. A message spanning several lines is joined with ` | `, so that every line printed
/// starts with its time.
public struct LogLine: Sendable, Hashable {
    /// When it was written.
    public var date: Date
    /// How much it matters.
    public var level: LogLevel
    /// What it concerns (`pair general`, `postgres`), or nil for the process as a whole.
    public var subject: String?
    /// What happened.
    public var message: String

    /// A line from its parts.
    public init(date: Date, level: LogLevel, subject: String?, message: String) {
        self.date = date
        self.level = level
        self.subject = subject
        self.message = message
    }

    /// `2026-11-30T10:00:00.123Z` for `date`: RFC 3339, UTC, milliseconds (rounded down).
    public static func timestamp(_ date: Date) -> String {
        RFC3339.format(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), fractionDigits: 3)
    }

    /// The line as printed, without a line break.
    public var text: String {
        let lines = message.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
        let body = lines.joined(separator: " | ")
        return "\(Self.timestamp(date)) \(level.name) " + (subject.map { "\($0): " } ?? "") + body
    }
}
