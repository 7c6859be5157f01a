import Foundation
import SwitchboardCore

/// How a command prints its lines: log records go to standard error as `LogLine`s (stamped with the time in RFC
/// 3339, UTC, milliseconds, then the level and the logger's label as what they concern); status lines go to
/// standard output in the same format.
enum CommandLog {
    /// A logger labelled `label` writing records from `level` up to standard error (`--verbose` passes `debug`).
    static func logger(_ label: String, level: LogLevel) -> Logger {
        Logger(label: label, handler: StreamLogHandler.standardError(), logLevel: level)
    }

    /// Writes a status line to standard output at once (a parent reading a pipe sees it before a kill).
    static func status(_ message: String) {
        writeLine(LogLine(date: Date(), level: .info, subject: nil, message: message).text)
    }
}
