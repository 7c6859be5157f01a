/// A leveled logger shaped like swift-log's: a label (what its records concern), a level below which records are
/// dropped before their message is even built, metadata added to every record, and the handler records go to.
///
/// Libraries accept a `Logger` and never make the handler: the default one drops everything. Secrets never reach a
/// handler through metadata: values under keys that name one (`token`, `password`, `secret`, `apiKey`,
/// `authorization`, `jwt`, key material…) are replaced by `[redacted]` (see `isSecret(key:)`). Messages are free
/// text the caller writes; they must not contain secrets either.
public struct Logger: Sendable {
    /// Key-value pairs attached to records.
    public typealias Metadata = [String: MetadataValue]

    /// A metadata value: text (write it as a string literal or an interpolation).
    public enum MetadataValue: Sendable, Hashable, CustomStringConvertible, ExpressibleByStringLiteral,
        ExpressibleByStringInterpolation {
        /// A text value.
        case string(String)

        /// A value from a string literal or interpolation.
        public init(stringLiteral value: String) { self = .string(value) }

        /// The value as written in a log line.
        public var description: String {
            switch self {
            case .string(let text): text
            }
        }
    }

    /// What the records concern (`engine`, `pair general`, `postgres`); a line names it as its subject.
    public let label: String
    /// Where records go.
    public var handler: any LogHandler
    /// The least important level logged; records below it are dropped without building their message.
    public var logLevel: LogLevel
    /// Metadata added to every record (a record's own metadata wins on the same key).
    public var metadata: Metadata

    /// A logger labelled `label` writing records at `logLevel` and above to `handler` (by default: none anywhere).
    public init(label: String, handler: any LogHandler = NoOpLogHandler(), logLevel: LogLevel = .info,
                metadata: Metadata = [:]) {
        self.label = label
        self.handler = handler
        self.logLevel = logLevel
        self.metadata = metadata
    }

    /// The logger's metadata value for `key`.
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// The same logger (handler, level, metadata) under another label, such as `pair general` for one pair.
    public func labeled(_ label: String) -> Logger {
        Logger(label: label, handler: handler, logLevel: logLevel, metadata: metadata)
    }

    /// Whether a record at `level` would reach a handler (use it to skip work that only feeds a log line).
    public func isLogging(_ level: LogLevel) -> Bool {
        level >= logLevel && !handler.discardsRecords
    }

    /// Logs `message` at `level` with `metadata` merged over the logger's, secrets redacted; neither autoclosure
    /// runs when the level is below `logLevel`.
    public func log(level: LogLevel, _ message: @autoclosure () -> String,
                    metadata: @autoclosure () -> Metadata? = nil) {
        guard isLogging(level) else { return }
        var merged = self.metadata
        if let extra = metadata() { merged.merge(extra) { _, new in new } }
        handler.log(LogRecord(level: level, label: label, message: message(), metadata: Self.redacted(merged)))
    }

    /// Logs step-by-step detail.
    public func trace(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .trace, message(), metadata: metadata())
    }

    /// Logs per-message detail.
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .debug, message(), metadata: metadata())
    }

    /// Logs progress.
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .info, message(), metadata: metadata())
    }

    /// Logs something normal but significant.
    public func notice(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .notice, message(), metadata: metadata())
    }

    /// Logs something that went wrong and was handled (a retry, a change set aside).
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .warning, message(), metadata: metadata())
    }

    /// Logs something that went wrong and stopped a task.
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .error, message(), metadata: metadata())
    }

    /// Logs something that went wrong so that the process cannot go on.
    public func critical(_ message: @autoclosure () -> String, metadata: @autoclosure () -> Metadata? = nil) {
        log(level: .critical, message(), metadata: metadata())
    }
}

extension Logger {
    /// What a secret's value is replaced with.
    public static let redactedValue: MetadataValue = "[redacted]"

    /// The parts of a key that mark its value as a secret, compared with the key lowercased and without `-`, `_`,
    /// `.` and spaces: `accessToken`, `X-API-Key`, `jwt_secret`, `Authorization`, `privateKey` all match; `key`
    /// alone (an idempotency key) and `keyCount` do not.
    public static let secretKeyParts = ["token", "password", "passwd", "passphrase", "secret", "apikey",
                                        "authorization", "jwt", "cookie", "credential", "privatekey", "signingkey",
                                        "sessionkey", "keymaterial"]

    /// Whether values under `key` are secrets and must never be logged.
    public static func isSecret(key: String) -> Bool {
        let folded = String(key.lowercased().unicodeScalars.filter { !"-_. ".unicodeScalars.contains($0) })
        return secretKeyParts.contains { folded.contains($0) }
    }

    /// `metadata` with every secret's value replaced by `[redacted]`.
    public static func redacted(_ metadata: Metadata) -> Metadata {
        guard metadata.keys.contains(where: isSecret(key:)) else { return metadata }
        var result = metadata
        for key in metadata.keys where isSecret(key: key) { result[key] = redactedValue }
        return result
    }
}
