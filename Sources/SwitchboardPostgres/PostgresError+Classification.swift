import SwitchboardCore

/// What a PostgreSQL failure means to Switchboard, decided here by SQLSTATE so that no caller has to guess.
///
/// | SQLSTATE | code | retryable |
/// | --- | --- | --- |
/// | class 08, `57P01`–`57P03`, `57P05`, a refused or broken connection (the connection was lost) | `storage` | yes |
/// | `40001` serialization failure, `40P01` deadlock (a concurrent transaction won) | `storage` | yes |
/// | `55P03` lock not available, `57014` statement cancelled (a timeout), `53300` too many connections | `storage` | yes |
/// | `23505` unique, `23503` foreign key, `23001` restrict, `23P01` exclusion (the write collides with stored rows) | `conflict` | no |
/// | any other class 23 (NOT NULL, CHECK: a value the schema forbids, a bug) | `internal` | no |
/// | `XX001`, `XX002` (damaged data or index) | `corruptStore` | no |
/// | class 22 (data exception), `54000` (program limit) | `invalidArgument` | no |
/// | anything else: `53100` disk full, `53200` out of memory, `58030` I/O error, `25006` read-only, ... | `storage` | no |
///
/// A lost connection is a `storage` error, not `transport`: it is the store's connection, retried by the store and
/// its callers as storage, never mistaken for the chat backend's network.
extension PostgresError: SwitchboardErrorConvertible {
    /// Whether the connection itself failed (dropped, refused, server shutting down or starting up, idle timeout).
    public var isConnectionFailure: Bool {
        if code == .connectionClosed || code == .connectionFailed { return true }
        guard let sqlState else { return false }
        // Class 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now;
        // 57P05: idle session timeout.
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03", "57P05"].contains(sqlState)
    }

    /// Whether the server refused the transaction because of a concurrent one (serialization failure, deadlock).
    public var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// Whether the same work can succeed when tried again: a lost connection, a concurrent transaction, a lock or
    /// statement timeout, or no free connection slot.
    public var isTransient: Bool {
        isConnectionFailure || isSerializationFailure || ["55P03", "57014", "53300"].contains(sqlState)
    }

    /// Whether the error is a violated constraint that collides with stored rows (unique, foreign key, restrict,
    /// exclusion), as opposed to a value the schema forbids.
    public var isCollision: Bool { ["23505", "23503", "23001", "23P01"].contains(sqlState) }

    /// The Switchboard code for this failure (see the table above).
    public var switchboardCode: SwitchboardError.Code {
        guard let sqlState, !isConnectionFailure else { return .storage }
        if isCollision { return .conflict }
        if sqlState.hasPrefix("23") { return .internal }
        if sqlState == "XX001" || sqlState == "XX002" { return .corruptStore }
        if sqlState.hasPrefix("22") || sqlState == "54000" { return .invalidArgument }
        return .storage
    }

    /// The public error: `switchboardCode`, this error's description, retryable only when `isTransient`.
    public var switchboardError: SwitchboardError {
        SwitchboardError(switchboardCode, description, retryable: isTransient)
    }
}
