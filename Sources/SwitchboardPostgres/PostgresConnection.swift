import CLibPQ
import Foundation
import SwitchboardCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One libpq connection; every call is serialised through a mutex around the `PGconn`.
public final class PostgresConnection: Sendable {
    private struct Handle: @unchecked Sendable {
        var connection: OpaquePointer?
    }

    private let handle: Locked<Handle>
    /// Where the server's notices go; lives as long as the `PGconn` that points at it.
    private let notices: NoticeReceiver

    /// Connects with a `postgresql://` URL or a key=value string; errors never contain the password or the URL.
    /// The server's notices (`NOTICE:  schema "x" already exists, skipping`, warnings) go to `notices`, one message
    /// at a time without its line break, and are dropped when it is nil: libpq would print them to standard error.
    public init(url: String, notices: (@Sendable (String) -> Void)? = nil) throws {
        guard let connection = PQconnectdb(url) else {
            throw PostgresError(code: .connectionFailed, message: "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let raw = Self.errorMessage(connection) ?? "connection failed"
            PQfinish(connection)
            throw PostgresError(code: .connectionFailed, message: Self.redact(raw, connectionString: url))
        }
        let receiver = NoticeReceiver(notices)
        PQsetNoticeProcessor(connection, { context, message in
            guard let context, let message else { return }
            Unmanaged<NoticeReceiver>.fromOpaque(context).takeUnretainedValue().receive(String(cString: message))
        }, Unmanaged.passUnretained(receiver).toOpaque())
        self.notices = receiver
        handle = Locked(Handle(connection: connection))
    }

    deinit {
        handle.withLock { state in
            if let connection = state.connection { PQfinish(connection) }
            state.connection = nil
        }
    }

    /// Closes the connection; later calls fail with `connectionClosed`.
    public func close() {
        handle.withLock { state in
            if let connection = state.connection { PQfinish(connection) }
            state.connection = nil
        }
    }

    /// Runs one statement with text parameters bound as `$1`, `$2`, …; values are never interpolated.
    ///
    /// A parameter holding a NUL character is refused before anything is sent (SQLSTATE `22021`, as the server
    /// would answer): PostgreSQL text cannot hold one, and libpq's C strings would silently end the value there.
    @discardableResult
    public func query(_ sql: String, _ parameters: [String?] = []) throws -> PostgresResult {
        if let index = parameters.firstIndex(where: { $0?.utf8.contains(0) == true }) {
            throw PostgresError(code: .queryFailed, message: "parameter $\(index + 1) holds a NUL character, which text cannot hold",
                                sqlState: "22021")
        }
        return try withConnection { connection in
            let cStrings: [UnsafeMutablePointer<CChar>?] = parameters.map { value in value.map { strdup($0) } }
            defer { for pointer in cStrings { free(pointer) } }
            let result = cStrings.withUnsafeBufferPointer { buffer -> OpaquePointer? in
                buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: max(buffer.count, 1)) {
                    values in
                    PQexecParams(connection, sql, Int32(parameters.count), nil, values, nil, nil, 0)
                }
            }
            return try Self.consume(result, connection: connection)
        }
    }

    /// Runs parameterless SQL, which may hold several statements; returns the last result.
    @discardableResult
    public func execute(_ sql: String) throws -> PostgresResult {
        try withConnection { connection in
            try Self.consume(PQexec(connection, sql), connection: connection)
        }
    }

    /// Runs `body` between BEGIN and COMMIT; any throw rolls back and rethrows the first error.
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try execute("BEGIN")
        let value: T
        do {
            value = try body(self)
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            _ = try? execute("ROLLBACK")
            throw error
        }
        return value
    }

    /// Subscribes this connection to NOTIFY messages on `channel`.
    public func listen(channel: String) throws {
        try execute("LISTEN \(try quoteIdentifier(channel))")
    }

    /// Stops receiving NOTIFY messages on `channel`.
    public func unlisten(channel: String) throws {
        try execute("UNLISTEN \(try quoteIdentifier(channel))")
    }

    /// Sends `payload` on `channel` through `pg_notify`, with both values bound.
    public func notify(channel: String, payload: String) throws {
        try query("SELECT pg_notify($1, $2)", [channel, payload])
    }

    /// Returns pending notifications, waiting on the socket up to `timeout` when none are queued yet.
    public func notifications(timeout: Duration) throws -> [PostgresNotification] {
        try withConnection { connection in
            var received = try Self.drainNotifications(connection)
            if !received.isEmpty { return received }
            let socket = PQsocket(connection)
            guard socket >= 0 else {
                throw PostgresError(code: .connectionClosed, message: "connection has no socket")
            }
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: timeout)
            while received.isEmpty {
                let remaining = clock.now.duration(to: deadline)
                if remaining <= .zero { break }
                let (seconds, attoseconds) = remaining.components
                let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
                var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                let ready = poll(&descriptor, 1, milliseconds)
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw PostgresError(code: .connectionClosed, message: "poll failed: errno \(errno)")
                }
                if ready == 0 { break }
                received = try Self.drainNotifications(connection)
            }
            return received
        }
    }

    /// Quotes `identifier` for use as an SQL name (PQescapeIdentifier).
    public func quoteIdentifier(_ identifier: String) throws -> String {
        try withConnection { connection in
            let utf8Count = identifier.utf8.count
            guard let escaped = PQescapeIdentifier(connection, identifier, utf8Count) else {
                throw PostgresError(code: .queryFailed, message: Self.errorMessage(connection) ?? "cannot quote identifier")
            }
            defer { PQfreemem(escaped) }
            return String(cString: escaped)
        }
    }

    // MARK: - Private

    private func withConnection<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        try handle.withLock { state in
            guard let connection = state.connection else {
                throw PostgresError(code: .connectionClosed, message: "connection is closed")
            }
            if PQstatus(connection) != CONNECTION_OK {
                PQreset(connection)
                guard PQstatus(connection) == CONNECTION_OK else {
                    throw PostgresError(code: .connectionClosed,
                                        message: Self.errorMessage(connection) ?? "connection lost")
                }
            }
            return try body(connection)
        }
    }

    private static func drainNotifications(_ connection: OpaquePointer) throws -> [PostgresNotification] {
        guard PQconsumeInput(connection) == 1 else {
            throw PostgresError(code: .connectionClosed, message: errorMessage(connection) ?? "connection lost")
        }
        var notifications: [PostgresNotification] = []
        while let notify = PQnotifies(connection) {
            let entry = notify.pointee
            notifications.append(PostgresNotification(
                channel: String(cString: entry.relname),
                payload: entry.extra.map { String(cString: $0) } ?? "",
                processID: entry.be_pid))
            PQfreemem(notify)
        }
        return notifications
    }

    private static func consume(_ result: OpaquePointer?, connection: OpaquePointer) throws -> PostgresResult {
        guard let result else {
            throw PostgresError(code: .connectionClosed, message: errorMessage(connection) ?? "no result")
        }
        defer { PQclear(result) }
        switch PQresultStatus(result) {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY:
            break
        default:
            let sqlState = field(result, clibpq_diag_sqlstate())
            let message = field(result, clibpq_diag_message_primary())
                ?? PQresultErrorMessage(result).map { String(cString: $0) }.flatMap(trimmed)
                ?? "statement failed"
            throw PostgresError(code: PQstatus(connection) == CONNECTION_OK ? .queryFailed : .connectionClosed,
                                message: message, sqlState: sqlState,
                                detail: field(result, clibpq_diag_message_detail()),
                                hint: field(result, clibpq_diag_message_hint()))
        }
        let columnCount = PQnfields(result)
        let rowCount = PQntuples(result)
        let columns = (0..<columnCount).map { String(cString: PQfname(result, $0)) }
        var rows: [[String?]] = []
        rows.reserveCapacity(Int(rowCount))
        for row in 0..<rowCount {
            rows.append((0..<columnCount).map { column in
                PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column))
            })
        }
        let affected = PQcmdTuples(result).map { String(cString: $0) }.flatMap { Int($0) } ?? 0
        return PostgresResult(columns: columns, rows: rows, affectedRows: affected)
    }

    private static func field(_ result: OpaquePointer, _ code: Int32) -> String? {
        PQresultErrorField(result, code).map { String(cString: $0) }
    }

    private static func errorMessage(_ connection: OpaquePointer) -> String? {
        PQerrorMessage(connection).map { String(cString: $0) }.flatMap(trimmed)
    }

    private static func trimmed(_ text: String) -> String? {
        let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return value.isEmpty ? nil : value
    }

    /// Removes the connection string and any password it carries from a libpq message.
    private static func redact(_ message: String, connectionString: String) -> String {
        var secrets: [String] = [connectionString]
        var parseError: UnsafeMutablePointer<CChar>?
        if let options = PQconninfoParse(connectionString, &parseError) {
            var option = options
            while let keyword = option.pointee.keyword {
                if String(cString: keyword) == "password", let value = option.pointee.val {
                    let password = String(cString: value)
                    if !password.isEmpty { secrets.append(password) }
                }
                option += 1
            }
            PQconninfoFree(options)
        }
        if let parseError { PQfreemem(parseError) }
        var text = message
        for secret in secrets.sorted(by: { $0.count > $1.count }) {
            text = text.replacing(secret, with: "[redacted]")
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != secret {
                text = text.replacing(encoded, with: "[redacted]")
            }
        }
        return text
    }
}

/// Hands the notices libpq reports on one connection to a handler (the context of its notice processor).
private final class NoticeReceiver: Sendable {
    /// The handler, or nil to drop notices.
    private let handler: (@Sendable (String) -> Void)?

    /// A receiver calling `handler`.
    init(_ handler: (@Sendable (String) -> Void)?) {
        self.handler = handler
    }

    /// Passes one notice on without its trailing line break.
    func receive(_ message: String) {
        guard let handler else { return }
        let text = message.trimmingCharacters(in: .whitespacesAndNewlines)
        if !text.isEmpty { handler(text) }
    }
}
