import Foundation
@testable import SupabaseServer
import SupabaseProtocol
import SwitchboardCore
import SwitchboardPostgres
import Testing
import TestSupport

/// The change feed against a real cluster: which rows it reads whole, and what it dispatches.
@Suite("Realtime change feed", .serialized, .postgresCluster)
struct RealtimeChangeFeedTests {
    private static let messages = RealtimeTableName(schema: "public", table: "messages")

    /// A started feed over the test cluster, its dispatched changes, and a superuser connection with a fresh
    /// conversation.
    private struct Running {
        let feed: RealtimeChangeFeed
        let dispatched: DispatchBox
        let connection: PostgresConnection
        let conversation: String
    }

    private func start(isWatched: @escaping @Sendable (RealtimeTableName) -> Bool,
                       omitsRecords: (@Sendable (RealtimeTableName) -> Bool)? = nil) throws -> Running {
        let url = try PostgresTestCluster.required().url
        let connection = try PostgresConnection(url: url)
        try ChatSchema.apply(to: connection)
        let box = DispatchBox()
        let feed = RealtimeChangeFeed(databaseURL: url, logger: Logger(label: "realtime"), isWatched: isWatched, omitsRecords: omitsRecords,
                                      dispatch: { changes in box.append(changes) })
        _ = try feed.install()
        feed.start()
        let conversation = try #require(
            try connection.query("INSERT INTO conversations (title) VALUES ('feed') RETURNING id").rows.first?[0] ?? nil)
        return Running(feed: feed, dispatched: box, connection: connection, conversation: conversation)
    }

    /// Hands dispatched changes to the test (the feed calls it on its listener thread).
    private final class DispatchBox: Sendable {
        private let changes = Locked<[RealtimeChange]>([])
        func append(_ batch: [RealtimeChange]) { changes.withLock { $0 += batch } }
        var all: [RealtimeChange] { changes.withLock { $0 } }
    }

    /// Inserts `count` messages and waits until the feed has read past them; returns their bodies in order.
    private func insertAndWait(_ running: Running, count: Int, tag: String) async throws -> [String] {
        let bodies = (0..<count).map { "\(tag) \($0) \"quoted\" \\ back" }
        for body in bodies {
            try running.connection.query("""
                INSERT INTO messages (conversation_id, sender_id, body, metadata) VALUES ($1, 'alice', $2, '{"k": "v"}')
                """, [running.conversation, body])
        }
        let text = try running.connection.query("SELECT max(id)::text FROM realtime.change_log").rows.first?[0] ?? nil
        let last = try #require(text.flatMap { Int64($0) })
        let deadline = TestTime.deadline(after: .seconds(10))
        while running.feed.position < last, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(running.feed.position >= last)
        return bodies
    }

    @Test("A table nobody watches is read past without its records and dispatches nothing")
    func unwatchedTable() async throws {
        let running = try start(isWatched: { _ in false })
        _ = try await insertAndWait(running, count: 5, tag: "unwatched")
        await running.feed.stop()
        #expect(running.dispatched.all.isEmpty)
    }

    @Test("Rows read without their records but watched by the time they are looked at arrive whole")
    func recordsReadAfterAll() async throws {
        // Every read leaves the records out; the table is watched: the feed must read them for each row.
        let running = try start(isWatched: { $0 == Self.messages }, omitsRecords: { _ in true })
        let bodies = try await insertAndWait(running, count: RealtimeChangeFeed.batchLimit + 7, tag: "late")
        await running.feed.stop()
        // Other suites may write to the same cluster meanwhile: only this conversation's rows are compared.
        let changes = running.dispatched.all.filter {
            $0.table == Self.messages && $0.record?["conversation_id"]?.stringValue == running.conversation
        }
        #expect(changes.map { $0.record?["body"]?.stringValue } == bodies)
        #expect(changes.allSatisfy { $0.type == "INSERT" && $0.record?["metadata"]?["k"]?.stringValue == "v" })
        #expect(changes.allSatisfy { $0.primaryKey.first?.column == "id" && $0.primaryKey.first?.value == $0.record?["id"] })
        // The commit time is read with the records (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
        #expect(changes.allSatisfy { $0.commitTimestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil })
    }

    @Test("The read's list of tables whose records it leaves out quotes every name")
    func arrayLiteral() {
        #expect(RealtimeChangeFeed.arrayLiteral([]) == "{}")
        #expect(RealtimeChangeFeed.arrayLiteral(["public", "a\"b", "c\\d", "e,f"]) == #"{"public","a\"b","c\\d","e,f"}"#)
    }
}
