import Foundation
import SwitchboardCore

/// How a long-running command (`switchboard bridge`) prints its lines: each one a `LogLine`, stamped with the time
/// (RFC 3339, UTC, milliseconds), its level and what it concerns. Log lines go to standard error (below
/// `minimumLevel` they are dropped: debug lines show only with `--verbose`), status lines to standard output.
struct CommandLogger: LogSink {
    /// The least important level written.
    var minimumLevel: LogLevel
    /// The clock lines are stamped with.
    var clock: @Sendable () -> Date = { Date() }

    /// Writes a log line from or about `source` (`pair general`; empty for none) to standard error.
    func log(_ level: LogLevel, _ message: @autoclosure () -> String, source: String) {
        guard level >= minimumLevel else { return }
        let line = LogLine(date: clock(), level: level, subject: source.isEmpty ? nil : source, message: message())
        FileHandle.standardError.write(Data((line.text + "\n").utf8))
    }

    /// Writes a status line to standard output at once (a parent reading a pipe sees it before a kill).
    func status(_ message: String) {
        writeLine(LogLine(date: clock(), level: .info, subject: nil, message: message).text)
    }
}
