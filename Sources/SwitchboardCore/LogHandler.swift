import Foundation

/// One record a `Logger` hands its handler: level, label, message and (redacted) metadata.
public struct LogRecord: Sendable, Hashable {
    /// How much it matters.
    public var level: LogLevel
    /// The logger's label: what the record concerns.
    public var label: String
    /// What happened.
    public var message: String
    /// The logger's metadata merged with the record's own, secrets redacted.
    public var metadata: Logger.Metadata

    /// A record from its parts.
    public init(level: LogLevel, label: String, message: String, metadata: Logger.Metadata = [:]) {
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
    }
}

/// Where a `Logger`'s records go: standard error, a collection for tests, nowhere.
public protocol LogHandler: Sendable {
    /// Takes one record that passed the logger's level.
    func log(_ record: LogRecord)
    /// Whether every record is dropped anyway, so that the logger need not build it (false unless said otherwise).
    var discardsRecords: Bool { get }
}

extension LogHandler {
    /// Records are kept by default.
    public var discardsRecords: Bool { false }
}

/// The handler that drops everything: a library's default.
public struct NoOpLogHandler: LogHandler {
    /// The no-op handler.
    public init() {}
    /// Drops the record.
    public func log(_ record: LogRecord) {}
    /// Always true: the logger skips building records for it.
    public var discardsRecords: Bool { true }
}

/// Writes each record as a timestamped `LogLine` (`2026-11-30T10:00:00.123Z info pair general: …`).
public struct StreamLogHandler: LogHandler {
    private let clock: @Sendable () -> Date
    private let write: @Sendable (String) -> Void

    /// A handler giving each line (without a line break) to `write`, stamped with `clock`'s time.
    public init(clock: @escaping @Sendable () -> Date = { Date() }, write: @escaping @Sendable (String) -> Void) {
        self.clock = clock
        self.write = write
    }

    /// A handler writing lines to standard error, one `write` each (a line of a pipe's atomic size or less is
    /// never interleaved with another process's).
    public static func standardError(clock: @escaping @Sendable () -> Date = { Date() }) -> StreamLogHandler {
        StreamLogHandler(clock: clock) { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
    }

    /// Writes the record's line.
    public func log(_ record: LogRecord) {
        write(LogLine(date: clock(), record: record).text)
    }
}

/// Keeps every record, for tests to assert on.
public final class CollectingLogHandler: LogHandler {
    private let state = Locked<[LogRecord]>([])

    /// An empty collection.
    public init() {}

    /// Keeps the record.
    public func log(_ record: LogRecord) {
        state.withLock { $0.append(record) }
    }

    /// Every record so far, oldest first.
    public var records: [LogRecord] { state.withLock { $0 } }

    /// Every record's message so far, oldest first.
    public var messages: [String] { records.map(\.message) }

    /// The messages of the records at `level` so far, oldest first.
    public func messages(at level: LogLevel) -> [String] {
        records.filter { $0.level == level }.map(\.message)
    }

    /// A logger labelled `label` writing every record from `level` up here.
    public func logger(label: String, level: LogLevel = .trace) -> Logger {
        Logger(label: label, handler: self, logLevel: level)
    }
}
