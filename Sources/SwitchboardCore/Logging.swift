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
    /// Receives one line; must never receive secrets (callers redact them).
    func log(_ level: LogLevel, _ message: @autoclosure () -> String, source: String)
}

/// A sink that drops everything (the default).
public struct SilentLogSink: LogSink {
    /// Creates the silent sink.
    public init() {}
    /// Drops the line.
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String, source: String) {}
}
