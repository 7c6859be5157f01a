import Foundation

/// How much a log record matters, from step-by-step detail to "something stopped and cannot go on by itself".
///
/// Progress is `info`, per-message detail `debug`, a retry or a change set aside `warning`, a failure that stops a
/// task `error`; the command decides which levels a person sees.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    /// Step-by-step detail.
    case trace
    /// Per-message detail, useful when debugging.
    case debug
    /// Progress: normal but notable.
    case info
    /// Normal but significant (a reconfiguration, a signal).
    case notice
    /// Something went wrong and was handled (a retry, a change set aside).
    case warning
    /// Something went wrong and stopped a task.
    case error
    /// Something went wrong and the process cannot go on.
    case critical

    /// Orders by severity.
    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}

extension LogLevel {
    /// The level's name in log lines: `trace`, `debug`, `info`, `notice`, `warning`, `error`, `critical`.
    public var name: String {
        switch self {
        case .trace: "trace"
        case .debug: "debug"
        case .info: "info"
        case .notice: "notice"
        case .warning: "warning"
        case .error: "error"
        case .critical: "critical"
        }
    }
}

/// One line as a command prints it: `2026-11-30T10:00:00.123Z info pair general: took the lease as bridge-1`.
///
/// The time is RFC 3339 in UTC with milliseconds; the subject (what the line concerns, such as `pair general`: the
/// logger's label) is left out when there is none. Metadata, when there is any, follows the message as
/// `[key=value, …]` sorted by key. A message spanning several lines is joined with ` | `, so that every line
/// printed starts with its time.
public struct LogLine: Sendable, Hashable {
    /// When it was written.
    public var date: Date
    /// How much it matters.
    public var level: LogLevel
    /// What it concerns (`pair general`, `postgres`), or nil for the process as a whole.
    public var subject: String?
    /// What happened.
    public var message: String
    /// The record's metadata (already redacted by the logger).
    public var metadata: Logger.Metadata

    /// A line from its parts.
    public init(date: Date, level: LogLevel, subject: String?, message: String, metadata: Logger.Metadata = [:]) {
        self.date = date
        self.level = level
        self.subject = subject
        self.message = message
        self.metadata = metadata
    }

    /// The line for `record`, written at `date`; an empty label means no subject.
    public init(date: Date, record: LogRecord) {
        self.init(date: date, level: record.level, subject: record.label.isEmpty ? nil : record.label,
                  message: record.message, metadata: record.metadata)
    }

    /// `2026-11-30T10:00:00.123Z` for `date`: RFC 3339, UTC, milliseconds (rounded down).
    public static func timestamp(_ date: Date) -> String {
        RFC3339.format(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), fractionDigits: 3)
    }

    /// The line as printed, without a line break.
    public var text: String {
        var body = Self.oneLine(message)
        if !metadata.isEmpty {
            let pairs = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\(Self.oneLine($0.value.description))" }
            body += (body.isEmpty ? "" : " ") + "[" + pairs.joined(separator: ", ") + "]"
        }
        return "\(Self.timestamp(date)) \(level.name) " + (subject.map { "\($0): " } ?? "") + body
    }

    /// `text`'s non-empty lines, trimmed and joined with ` | `.
    private static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: " | ")
    }
}
