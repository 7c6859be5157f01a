import Foundation
@testable import SocketIOAdapter
@testable import SupabaseAdapter
@testable import SwitchboardBridge
import SwitchboardCore
import SwitchboardEngine
import SwitchboardNet
import SwitchboardPostgres
import SwitchboardSQLite
import Testing
@testable import XMTPAdapter

/// Every class of failure, built as its source raises it, with what it is classified as (code, retryable,
/// `Retry-After`) and what each retrying place then does with it: the engine's outbox (`OutboxAttemptMachine`)
/// retries or fails the message, the bridge (`BridgeDecision.failure`) backs off, holds the change or stops the
/// direction. One row per class; a row that retries is named so.
@Suite("Error classification: what is retried")
struct ErrorClassificationTests {
    /// What a failure must come to.
    struct Expected: Sendable, CustomStringConvertible {
        /// The classified code.
        var code: SwitchboardError.Code
        /// Whether it is retried (by the outbox and, unless it is about access, by the bridge).
        var retried: Bool
        /// The `Retry-After` it carries.
        var retryAfter: Duration?
        /// What the bridge does with it in the handling of a change.
        var bridge: BridgeDecision.Failure

        var description: String { "\(code), \(retried ? "retried" : "not retried"), bridge \(bridge)" }
    }

    /// Retried, with the bridge backing off (at least `after`).
    static func retried(_ code: SwitchboardError.Code, after: Duration? = nil) -> Expected {
        Expected(code: code, retried: true, retryAfter: after, bridge: .retry(after: after))
    }

    /// Not retried; the bridge does `bridge`.
    static func notRetried(_ code: SwitchboardError.Code, bridge: BridgeDecision.Failure) -> Expected {
        Expected(code: code, retried: false, retryAfter: nil, bridge: bridge)
    }

    /// An error no classification knows.
    struct UnknownSwiftError: Error, CustomStringConvertible {
        var description: String { "something nobody expected" }
    }

    /// An HTTP answer with `status` and a `Retry-After` of 7 seconds.
    static func answer(_ status: Int) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Retry-After": "7"], body: Data(#"{"message":"no"}"#.utf8))
    }

    /// The error `HTTPResponse.ensureSuccess` throws for `status`.
    static func clientError(_ status: Int) -> any Error {
        do {
            try answer(status).ensureSuccess()
            return UnknownSwiftError()
        } catch {
            return error
        }
    }

    static let sevenSeconds = Duration.seconds(7)

    static let transportCases: [(String, any Error, Expected)] = [
        ("curl: connection refused", HTTPClientError(code: .transferFailed, curlCode: 7, message: "Couldn't connect to server"),
         retried(.transport)),
        ("curl: timeout", HTTPClientError(code: .transferFailed, curlCode: 28, message: "Timeout was reached"), retried(.transport)),
        ("HTTP client closed", HTTPClientError(code: .clientClosed, message: "the HTTP client was shut down"), retried(.transport)),
        ("HTTP request that cannot be sent", HTTPClientError(code: .invalidRequest, message: "header has a line break"),
         notRetried(.invalidArgument, bridge: .hold)),
        ("WebSocket connect failed", WebSocketError(.connectFailed, "connection refused"), retried(.transport)),
        ("WebSocket closed", WebSocketError(.connectionClosed, "closed"), retried(.transport)),
        ("WebSocket ping timed out", WebSocketError(.timedOut, "no pong"), retried(.transport)),
        ("WebSocket URL unusable", WebSocketError(.invalidURL, "ftp://"), notRetried(.invalidArgument, bridge: .hold)),
        ("cancellation", CancellationError(), retried(.cancelled)),
    ]

    /// Each HTTP status as the HTTP client classifies it and as each adapter maps its server's answer.
    static let httpCases: [(String, any Error, Expected)] = [
        ("HTTP 429 (HTTP client)", clientError(429), retried(.transport, after: sevenSeconds)),
        ("HTTP 429 (Supabase)", SupabaseREST.error(for: answer(429)), retried(.transport, after: sevenSeconds)),
        ("HTTP 429 (Socket-style)", SocketIOREST.error(for: answer(429)), retried(.transport, after: sevenSeconds)),
        ("HTTP 429 (XMTP node)", XMTPNodeClient.error(status: 429, body: Data(), retryAfter: sevenSeconds),
         retried(.transport, after: sevenSeconds)),
        ("HTTP 503 (HTTP client)", clientError(503), retried(.transport, after: sevenSeconds)),
        ("HTTP 503 (Supabase)", SupabaseREST.error(for: answer(503)), retried(.transport, after: sevenSeconds)),
        ("HTTP 503 (Socket-style)", SocketIOREST.error(for: answer(503)), retried(.transport, after: sevenSeconds)),
        ("HTTP 503 (XMTP node)", XMTPNodeClient.error(status: 503, body: Data(), retryAfter: sevenSeconds),
         retried(.transport, after: sevenSeconds)),
        ("HTTP 500 (HTTP client)", clientError(500), retried(.transport, after: sevenSeconds)),
        ("HTTP 408 (HTTP client)", clientError(408), retried(.transport, after: sevenSeconds)),
        ("HTTP 400 (HTTP client)", clientError(400), notRetried(.refused, bridge: .hold)),
        ("HTTP 400 (Supabase)", SupabaseREST.error(for: answer(400)), notRetried(.refused, bridge: .hold)),
        ("HTTP 400 (Socket-style)", SocketIOREST.error(for: answer(400)), notRetried(.invalidArgument, bridge: .hold)),
        ("HTTP 400 (XMTP node)", XMTPNodeClient.error(status: 400, body: Data()), notRetried(.invalidArgument, bridge: .hold)),
        ("HTTP 401 (HTTP client)", clientError(401), notRetried(.unauthorized, bridge: .stop(.access))),
        ("HTTP 401 (Supabase)", SupabaseREST.error(for: answer(401)), notRetried(.unauthorized, bridge: .stop(.access))),
        ("HTTP 401 (Socket-style)", SocketIOREST.error(for: answer(401)), notRetried(.unauthorized, bridge: .stop(.access))),
        ("HTTP 401 (XMTP node)", XMTPNodeClient.error(status: 401, body: Data()), notRetried(.unauthorized, bridge: .stop(.access))),
        ("HTTP 403 (HTTP client)", clientError(403), notRetried(.forbidden, bridge: .stop(.access))),
        ("HTTP 403 (Supabase, row-level security)",
         SupabaseREST.error(for: HTTPResponse(status: 403, body: Data(#"{"code":"42501","message":"rls"}"#.utf8))),
         notRetried(.forbidden, bridge: .stop(.access))),
        ("HTTP 403 (Supabase, other)", SupabaseREST.error(for: answer(403)), notRetried(.refused, bridge: .hold)),
        ("HTTP 403 (Socket-style)", SocketIOREST.error(for: answer(403)), notRetried(.refused, bridge: .hold)),
        ("HTTP 403 (XMTP node)", XMTPNodeClient.error(status: 403, body: Data()), notRetried(.forbidden, bridge: .stop(.access))),
        ("HTTP 404 (HTTP client)", clientError(404), notRetried(.notFound, bridge: .hold)),
        ("HTTP 404 (Supabase)", SupabaseREST.error(for: answer(404)), notRetried(.notFound, bridge: .hold)),
        ("HTTP 404 (Socket-style)", SocketIOREST.error(for: answer(404)), notRetried(.notFound, bridge: .hold)),
        ("HTTP 404 (XMTP node)", XMTPNodeClient.error(status: 404, body: Data()), notRetried(.notFound, bridge: .hold)),
    ]

    static let storageCases: [(String, any Error, Expected)] = [
        ("SQLite busy", SQLiteError(extendedCode: 5, message: "database is locked"), retried(.storage)),
        ("SQLite locked", SQLiteError(extendedCode: 6, message: "database table is locked"), retried(.storage)),
        ("SQLite busy snapshot", SQLiteError(extendedCode: 5 | (2 << 8), message: "stale snapshot"), retried(.storage)),
        ("SQLite unique constraint", SQLiteError(extendedCode: SQLiteError.constraintUnique, message: "UNIQUE failed"),
         notRetried(.conflict, bridge: .hold)),
        ("SQLite primary key constraint", SQLiteError(extendedCode: SQLiteError.constraintPrimaryKey, message: "PK failed"),
         notRetried(.conflict, bridge: .hold)),
        ("SQLite CHECK constraint (a bug)", SQLiteError(extendedCode: 19 | (1 << 8), message: "CHECK failed"),
         notRetried(.internal, bridge: .hold)),
        ("SQLite NOT NULL constraint (a bug)", SQLiteError(extendedCode: 19 | (5 << 8), message: "NOT NULL failed"),
         notRetried(.internal, bridge: .hold)),
        ("SQLite full", SQLiteError(extendedCode: 13, message: "database or disk is full"), notRetried(.storage, bridge: .stop(.store))),
        ("SQLite read-only", SQLiteError(extendedCode: 8, message: "attempt to write a readonly database"),
         notRetried(.storage, bridge: .stop(.store))),
        ("SQLite I/O error", SQLiteError(extendedCode: 10 | (4 << 8), message: "disk I/O error"), notRetried(.storage, bridge: .stop(.store))),
        ("SQLite corrupt", SQLiteError(extendedCode: 11, message: "database disk image is malformed"),
         notRetried(.corruptStore, bridge: .stop(.store))),
        ("SQLite not a database", SQLiteError(extendedCode: 26, message: "file is not a database"),
         notRetried(.corruptStore, bridge: .stop(.store))),
        ("PostgreSQL 40001 serialization failure", PostgresError(code: .queryFailed, message: "could not serialize", sqlState: "40001"),
         retried(.storage)),
        ("PostgreSQL 40P01 deadlock", PostgresError(code: .queryFailed, message: "deadlock detected", sqlState: "40P01"), retried(.storage)),
        ("PostgreSQL 08006 connection failure", PostgresError(code: .connectionClosed, message: "server closed the connection",
                                                              sqlState: "08006"), retried(.storage)),
        ("PostgreSQL 57P01 admin shutdown", PostgresError(code: .queryFailed, message: "terminating connection", sqlState: "57P01"),
         retried(.storage)),
        ("PostgreSQL connection lost (no SQLSTATE)", PostgresError(code: .connectionClosed, message: "connection lost"), retried(.storage)),
        ("PostgreSQL 55P03 lock not available", PostgresError(code: .queryFailed, message: "lock timeout", sqlState: "55P03"),
         retried(.storage)),
        ("PostgreSQL 23505 unique violation", PostgresError(code: .queryFailed, message: "duplicate key", sqlState: "23505"),
         notRetried(.conflict, bridge: .hold)),
        ("PostgreSQL 23502 not null (a bug)", PostgresError(code: .queryFailed, message: "null value", sqlState: "23502"),
         notRetried(.internal, bridge: .hold)),
        ("PostgreSQL 53100 disk full", PostgresError(code: .queryFailed, message: "could not extend file", sqlState: "53100"),
         notRetried(.storage, bridge: .stop(.store))),
        ("PostgreSQL 25006 read-only transaction", PostgresError(code: .queryFailed, message: "read-only", sqlState: "25006"),
         notRetried(.storage, bridge: .stop(.store))),
        ("PostgreSQL XX001 data corrupted", PostgresError(code: .queryFailed, message: "invalid page", sqlState: "XX001"),
         notRetried(.corruptStore, bridge: .stop(.store))),
    ]

    static let otherCases: [(String, any Error, Expected)] = [
        ("an unknown Swift error", UnknownSwiftError(), notRetried(.internal, bridge: .hold)),
        ("a decoding error", DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad")),
         notRetried(.internal, bridge: .hold)),
        ("a non-retryable transport error", SwitchboardError(.transport, "the answer has no token"),
         notRetried(.transport, bridge: .stop(.other))),
        ("a conversation that does not exist", SwitchboardError(.unknownConversation, "gone"),
         notRetried(.unknownConversation, bridge: .stop(.access))),
    ]

    @Test("transport failures", arguments: transportCases)
    func transport(_ name: String, _ error: any Error, _ expected: Expected) { check(name, error, expected) }

    @Test("HTTP statuses, from the HTTP client and from each adapter", arguments: httpCases)
    func http(_ name: String, _ error: any Error, _ expected: Expected) { check(name, error, expected) }

    @Test("SQLite result codes and PostgreSQL SQLSTATEs", arguments: storageCases)
    func storage(_ name: String, _ error: any Error, _ expected: Expected) { check(name, error, expected) }

    @Test("errors nothing classified, and the codes that stop a bridge direction", arguments: otherCases)
    func other(_ name: String, _ error: any Error, _ expected: Expected) { check(name, error, expected) }

    /// Checks the classification of `error` and what the outbox and the bridge do with it.
    private func check(_ name: String, _ error: any Error, _ expected: Expected) {
        let classified = SwitchboardError.wrapping(error)
        #expect(classified.code == expected.code, "\(name): \(classified)")
        #expect(classified.isRetryable == expected.retried, "\(name): \(classified)")
        #expect(classified.retryAfter == expected.retryAfter, "\(name): \(classified)")
        #expect(!classified.message.isEmpty, "\(name)")

        let now = Date(timeIntervalSince1970: 1_000)
        var machine = OutboxAttemptMachine(policy: RetryPolicy(), attempts: 0)
        switch machine.publishFailed(classified, now: now, random: 0) {
        case .retry(let at):
            #expect(expected.retried, "\(name): the outbox retries it")
            if let after = expected.retryAfter {
                #expect(at >= now.addingTimeInterval(Double(after.components.seconds)), "\(name): Retry-After honoured")
            }
        case .fail(_, let retryable):
            #expect(!expected.retried && !retryable, "\(name): the outbox gives up on it")
        case .complete:
            Issue.record("\(name): a failure completed the publish")
        }

        #expect(BridgeDecision.failure(error) == expected.bridge, "\(name)")
        #expect(Bridge.isPermanent(error) == (expected.bridge == .hold), "\(name): held in the quarantine")
        let stops = if case .retry = expected.bridge { false } else { true }
        #expect(Bridge.stopsTheDirection(error) == stops, "\(name): stops a direction when it reaches a pass")
    }
}
