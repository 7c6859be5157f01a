import Foundation
import SupabaseServer
import SwitchboardPostgres
import Testing
import TestSupport

/// Exercises `ChatSchema` against a real cluster, acting as users via `SET LOCAL ROLE` plus JWT claims.
@Suite("Chat schema with row-level security", .serialized, .postgresCluster)
struct ChatSchemaRLSTests {
    /// A connected superuser session with the schema applied and a fresh conversation of alice and bob.
    private struct Fixture {
        let connection: PostgresConnection
        let conversation: String
    }

    private func fixture() throws -> Fixture {
        let connection = try PostgresConnection(url: try PostgresTestCluster.required().url)
        try ChatSchema.apply(to: connection)
        let conversation = try #require(
            try connection.query("INSERT INTO conversations (title) VALUES ($1) RETURNING id", ["chat"]).rows.first?[0] ?? nil)
        try connection.query("INSERT INTO members (conversation_id, user_id) VALUES ($1, 'alice'), ($1, 'bob')",
                             [conversation])
        return Fixture(connection: connection, conversation: conversation)
    }

    /// Runs `body` in a transaction as `user` with the given database role and matching claims.
    @discardableResult
    private func act<T>(_ connection: PostgresConnection, as user: String, role: String = "authenticated",
                        _ body: (PostgresConnection) throws -> T) throws -> T {
        try connection.transaction { connection in
            try connection.execute("SET LOCAL ROLE \(role)")
            try connection.query("SELECT set_config('request.jwt.claims', $1, true)",
                                 ["{\"sub\":\"\(user)\",\"role\":\"\(role)\"}"])
            return try body(connection)
        }
    }

    /// Inserts a message as service_role, `age` old (an SQL interval), and returns its id.
    private func seedMessage(_ fixture: Fixture, sender: String, age: String, body: String = "old") throws -> String {
        try act(fixture.connection, as: "server", role: "service_role") { connection in
            let result = try connection.query("""
                INSERT INTO messages (conversation_id, sender_id, body, created_at)
                VALUES ($1, $2, $3, now() - $4::interval) RETURNING id
                """, [fixture.conversation, sender, body, age])
            return try #require(result.rows.first?[0] ?? nil)
        }
    }

    private func send(_ fixture: Fixture, as user: String, body: String) throws -> String {
        try act(fixture.connection, as: user) { connection in
            let result = try connection.query(
                "INSERT INTO messages (conversation_id, sender_id, body) VALUES ($1, $2, $3) RETURNING id",
                [fixture.conversation, user, body])
            return try #require(result.rows.first?[0] ?? nil)
        }
    }

    private func expectDenied<R>(_ message: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                                 _ body: () throws -> R) {
        let error = #expect(throws: PostgresError.self, sourceLocation: sourceLocation) { _ = try body() }
        #expect(error?.sqlState == "42501", "\(String(describing: error))", sourceLocation: sourceLocation)
        if let message {
            #expect(error?.message.contains(message) == true, "\(String(describing: error))",
                    sourceLocation: sourceLocation)
        }
    }

    @Test("migrations apply twice idempotently and enable RLS on every table")
    func migrationsIdempotent() throws {
        let connection = try PostgresConnection(url: try PostgresTestCluster.required().url)
        try ChatSchema.apply(to: connection)
        try ChatSchema.apply(to: connection)
        #expect(ChatSchema.migrations.map(\.name) == ChatSchema.migrations.map(\.name).sorted())
        let rls = try connection.query("""
            SELECT relname, relrowsecurity::text FROM pg_class
            WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' ORDER BY relname
            """)
        #expect(rls.rows == [["conversations", "true"], ["members", "true"], ["messages", "true"],
                             ["reactions", "true"], ["receipts", "true"]])
        let roles = try connection.query("""
            SELECT rolname, rolcanlogin::text, rolbypassrls::text, rolinherit::text FROM pg_roles
            WHERE rolname IN ('anon', 'authenticated', 'service_role', 'authenticator') ORDER BY rolname
            """)
        #expect(roles.rows == [["anon", "false", "false", "false"], ["authenticated", "false", "false", "false"],
                               ["authenticator", "true", "false", "false"],
                               ["service_role", "false", "true", "false"]])
        let granted = try connection.query("""
            SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid
            JOIN pg_roles u ON u.oid = m.member
            WHERE u.rolname = 'authenticator' AND r.rolname IN ('anon', 'authenticated', 'service_role')
            """)
        #expect(granted.rows == [["3"]])
        let sequences = try connection.query(
            "SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relnamespace = 'public'::regnamespace")
        #expect(sequences.rows == [["1"]])
    }

    @Test("auth.uid() and auth.role() read the request claims")
    func authHelpers() throws {
        let fixture = try fixture()
        let row = try act(fixture.connection, as: "alice") {
            try $0.query("SELECT auth.uid(), auth.role(), current_user::text").rows
        }
        #expect(row == [["alice", "authenticated", "authenticated"]])
        #expect(try fixture.connection.query("SELECT auth.uid()").rows == [[nil]])
    }

    @Test("a member reads the conversation; a non-member and anon see nothing")
    func membersOnly() throws {
        let fixture = try fixture()
        _ = try send(fixture, as: "alice", body: "hi bob")
        let conversation = [fixture.conversation]
        let bob = try act(fixture.connection, as: "bob") { connection in
            (try connection.query("SELECT body FROM messages WHERE conversation_id = $1", conversation).rows,
             try connection.query("SELECT count(*) FROM members WHERE conversation_id = $1", conversation).rows,
             try connection.query("SELECT count(*) FROM conversations WHERE id = $1", conversation).rows)
        }
        #expect(bob.0 == [["hi bob"]])
        #expect(bob.1 == [["2"]])
        #expect(bob.2 == [["1"]])
        let carol = try act(fixture.connection, as: "carol") { connection in
            (try connection.query("SELECT count(*) FROM messages").rows,
             try connection.query("SELECT count(*) FROM members").rows,
             try connection.query("SELECT count(*) FROM conversations").rows)
        }
        #expect(carol.0 == [["0"]])
        #expect(carol.1 == [["0"]])
        #expect(carol.2 == [["0"]])
        expectDenied {
            try act(fixture.connection, as: "alice", role: "anon") { try $0.query("SELECT count(*) FROM messages") }
        }
    }

    @Test("inserting a message as someone else, or into a foreign conversation, fails with 42501")
    func insertOnlyAsSelf() throws {
        let fixture = try fixture()
        expectDenied("row-level security") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("INSERT INTO messages (conversation_id, sender_id, body) VALUES ($1, 'bob', 'x')",
                                     [fixture.conversation])
            }
        }
        expectDenied("row-level security") {
            try act(fixture.connection, as: "carol") { connection in
                try connection.query("INSERT INTO messages (conversation_id, sender_id, body) VALUES ($1, 'carol', 'x')",
                                     [fixture.conversation])
            }
        }
    }

    @Test("one sequence versions inserts and updates across messages, reactions and receipts")
    func versions() throws {
        let fixture = try fixture()
        let message = try send(fixture, as: "alice", body: "v")
        let versions: [Int] = try act(fixture.connection, as: "bob") { connection in
            func version(_ sql: String) throws -> Int {
                Int(try #require(try connection.query(sql, [message]).rows.first?[0] ?? nil)) ?? -1
            }
            let inserted = try version("SELECT version FROM messages WHERE id = $1")
            let reaction = try version(
                "INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'bob', '👍') RETURNING version")
            let receipt = try version(
                "INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'bob', 'delivered') RETURNING version")
            let read = try version("UPDATE receipts SET state = 'read' WHERE message_id = $1 RETURNING version")
            let reactionAgain = try version("UPDATE reactions SET symbol = '🎉' WHERE message_id = $1 RETURNING version")
            return [inserted, reaction, receipt, read, reactionAgain]
        }
        let edited = try act(fixture.connection, as: "alice") { connection in
            try connection.query("UPDATE messages SET body = 'v2' WHERE id = $1 RETURNING version", [message])
                .rows.first?[0].flatMap { Int($0) } ?? -1
        }
        let all = versions + [edited]
        #expect(all.allSatisfy { $0 > 0 })
        #expect(all == all.sorted() && Set(all).count == all.count, "\(all)")
    }

    @Test("editing an own message works within 15 minutes and fails with 42501 after")
    func editWindow() throws {
        let fixture = try fixture()
        let fresh = try send(fixture, as: "alice", body: "tpyo")
        let updated = try act(fixture.connection, as: "alice") { connection in
            try connection.query("UPDATE messages SET body = 'typo' WHERE id = $1 RETURNING body, edited_at IS NOT NULL",
                                 [fresh])
        }
        #expect(updated.rows == [["typo", "t"]])
        let old = try seedMessage(fixture, sender: "alice", age: "16 minutes")
        expectDenied("15 minutes") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("UPDATE messages SET body = 'too late' WHERE id = $1", [old])
            }
        }
        expectDenied("cannot change") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("UPDATE messages SET created_at = now() WHERE id = $1", [fresh])
            }
        }
        // Metadata is not part of the edit window.
        let tagged = try act(fixture.connection, as: "alice") { connection in
            try connection.query("UPDATE messages SET metadata = '{\"pinned\":true}' WHERE id = $1", [old]).affectedRows
        }
        #expect(tagged == 1)
    }

    @Test("deleting works within 2 hours (soft or hard) and fails with 42501 after")
    func deleteWindow() throws {
        let fixture = try fixture()
        let recent = try seedMessage(fixture, sender: "alice", age: "1 hour")
        let soft = try act(fixture.connection, as: "alice") { connection in
            try connection.query("UPDATE messages SET deleted_at = now() WHERE id = $1", [recent]).affectedRows
        }
        #expect(soft == 1)
        let old = try seedMessage(fixture, sender: "alice", age: "3 hours")
        expectDenied("2 hours") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("UPDATE messages SET deleted_at = now() WHERE id = $1", [old])
            }
        }
        expectDenied("2 hours") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("DELETE FROM messages WHERE id = $1", [old])
            }
        }
        let hard = try seedMessage(fixture, sender: "alice", age: "90 minutes")
        let deleted = try act(fixture.connection, as: "alice") { connection in
            try connection.query("DELETE FROM messages WHERE id = $1", [hard]).affectedRows
        }
        #expect(deleted == 1)
    }

    @Test("editing or deleting someone else's message changes zero rows")
    func othersMessagesUntouched() throws {
        let fixture = try fixture()
        let bobs = try send(fixture, as: "bob", body: "mine")
        let counts = try act(fixture.connection, as: "alice") { connection in
            [try connection.query("UPDATE messages SET body = 'hijacked' WHERE id = $1", [bobs]).affectedRows,
             try connection.query("UPDATE messages SET deleted_at = now() WHERE id = $1", [bobs]).affectedRows,
             try connection.query("DELETE FROM messages WHERE id = $1", [bobs]).affectedRows]
        }
        #expect(counts == [0, 0, 0])
        let row = try fixture.connection.query("SELECT body, deleted_at FROM messages WHERE id = $1", [bobs])
        #expect(row.rows == [["mine", nil]])
    }

    @Test("reactions are written only as oneself on messages of one's conversations")
    func reactionsAsSelf() throws {
        let fixture = try fixture()
        let message = try send(fixture, as: "bob", body: "react to me")
        try act(fixture.connection, as: "alice") { connection in
            try connection.query("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'alice', '❤️')",
                                 [message])
        }
        expectDenied("row-level security") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'bob', '👎')",
                                     [message])
            }
        }
        expectDenied("row-level security") {
            try act(fixture.connection, as: "carol") { connection in
                try connection.query("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'carol', '👀')",
                                     [message])
            }
        }
        let bob = try act(fixture.connection, as: "bob") { connection in
            (try connection.query("SELECT user_id, symbol FROM reactions WHERE message_id = $1", [message]).rows,
             try connection.query("DELETE FROM reactions WHERE message_id = $1", [message]).affectedRows)
        }
        #expect(bob.0 == [["alice", "❤️"]])
        #expect(bob.1 == 0)
        let carolSees = try act(fixture.connection, as: "carol") {
            try $0.query("SELECT count(*) FROM reactions").rows
        }
        #expect(carolSees == [["0"]])
        let removed = try act(fixture.connection, as: "alice") { connection in
            try connection.query("DELETE FROM reactions WHERE message_id = $1", [message]).affectedRows
        }
        #expect(removed == 1)
    }

    @Test("reactions and receipts take their message's conversation (a client cannot choose it); removal bumps the version")
    func syncColumns() throws {
        let fixture = try fixture()
        let message = try send(fixture, as: "bob", body: "sync me")
        let inserted = try act(fixture.connection, as: "alice") { connection in
            try connection.query("""
                INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'alice', '👍')
                RETURNING conversation_id, active, version
                """, [message]).rows
        }
        #expect(inserted.first?[0] == fixture.conversation)
        #expect(inserted.first?[1] == "t")
        let removed = try act(fixture.connection, as: "alice") { connection in
            try connection.query("""
                UPDATE reactions SET active = false WHERE message_id = $1 AND user_id = 'alice' AND symbol = '👍'
                RETURNING active, version
                """, [message]).rows
        }
        #expect(removed.first?[0] == "f")
        #expect(Int(removed.first?[1] ?? "") ?? 0 > Int(inserted.first?[2] ?? "") ?? .max)
        let receipt = try act(fixture.connection, as: "alice") { connection in
            try connection.query("""
                INSERT INTO receipts (message_id, user_id, state, conversation_id) VALUES ($1, 'alice', 'read', $2)
                RETURNING conversation_id
                """, [message, fixture.conversation]).rows
        }
        #expect(receipt == [[fixture.conversation]], "naming the message's own conversation is accepted")
    }

    /// A client acting on a message "in conversation A" must never touch a message of conversation B, even when it
    /// is a member of both: a reaction or receipt naming another conversation than its message's is refused (PT404,
    /// which the REST gateway answers as 404), at insert and at update, and nothing changes.
    @Test("a reaction or receipt naming another conversation than its message's is refused with PT404; nothing changes")
    func namedConversationMustMatch() throws {
        let fixture = try fixture()
        let message = try send(fixture, as: "bob", body: "in the first room")
        let other = try #require(try fixture.connection.query("INSERT INTO conversations (title) VALUES ('other') RETURNING id").rows.first?[0] ?? nil)
        try fixture.connection.query("INSERT INTO members (conversation_id, user_id) VALUES ($1, 'alice')", [other])
        func expectNotInConversation(_ sql: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let error = #expect(throws: PostgresError.self, sourceLocation: sourceLocation) {
                try act(fixture.connection, as: "alice") { try $0.query(sql, [message, other]) }
            }
            #expect(error?.sqlState == "PT404", "\(String(describing: error))", sourceLocation: sourceLocation)
            #expect(error?.message == "message \(message) is not in conversation \(other)", sourceLocation: sourceLocation)
        }
        expectNotInConversation("INSERT INTO reactions (message_id, user_id, symbol, conversation_id) VALUES ($1, 'alice', '👍', $2)")
        expectNotInConversation("INSERT INTO receipts (message_id, user_id, state, conversation_id) VALUES ($1, 'alice', 'read', $2)")
        // A standing reaction and receipt cannot be moved to, or upserted as, the other conversation either.
        try act(fixture.connection, as: "alice") { connection in
            try connection.query("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, 'alice', '❤️')", [message])
            try connection.query("INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'alice', 'delivered')", [message])
        }
        expectNotInConversation("UPDATE reactions SET conversation_id = $2, active = false WHERE message_id = $1")
        expectNotInConversation("""
            INSERT INTO receipts (message_id, user_id, state, conversation_id) VALUES ($1, 'alice', 'read', $2)
            ON CONFLICT (message_id, user_id) DO UPDATE SET state = EXCLUDED.state, conversation_id = EXCLUDED.conversation_id
            """)
        let reactions = try fixture.connection.query("SELECT symbol, active, conversation_id FROM reactions WHERE message_id = $1", [message])
        #expect(reactions.rows == [["❤️", "t", fixture.conversation]])
        let receipts = try fixture.connection.query("SELECT state, conversation_id FROM receipts WHERE message_id = $1", [message])
        #expect(receipts.rows == [["delivered", fixture.conversation]])
    }

    /// A delta-sync read of a quiet conversation probes its own (conversation, version) range, however much
    /// newer traffic other conversations have.
    @Test("a conversation's change read uses its (conversation, version) index, not the global version order")
    func changeReadFollowsTheConversation() throws {
        let fixture = try fixture()
        let busy = try #require(
            try fixture.connection.query("INSERT INTO conversations (title) VALUES ('busy') RETURNING id").rows.first?[0] ?? nil)
        try fixture.connection.query("INSERT INTO members (conversation_id, user_id) VALUES ($1, 'alice')", [busy])
        // The quiet conversation has a history of its own (so it is not rare enough for the planner to start
        // from it), then the busy one takes 5,000 newer changes.
        func seed(_ conversation: String) throws {
            try act(fixture.connection, as: "server", role: "service_role") { connection in
                try connection.query("INSERT INTO messages (conversation_id, sender_id, body) SELECT $1::uuid, 'alice', 'm' || n "
                                     + "FROM generate_series(1, 5000) AS n", [conversation])
            }
        }
        try seed(fixture.conversation)
        let cursor = try #require(try fixture.connection.query("SELECT max(version)::text FROM messages").rows.first?[0] ?? nil)
        try seed(busy)
        try fixture.connection.execute("ANALYZE messages")
        let plan = try act(fixture.connection, as: "alice") { connection in
            try connection.query("EXPLAIN SELECT * FROM public.messages WHERE conversation_id = $1::uuid AND version > $2::bigint "
                                 + "ORDER BY version LIMIT 500", [fixture.conversation, cursor]).rows.compactMap { $0.first ?? nil }
        }.joined(separator: "\n")
        #expect(plan.contains("messages_conversation_version_idx"), "\(plan)")
    }

    @Test("versions commit in order: a second writer waits for the first to commit, then gets a larger version")
    func versionsCommitInOrder() throws {
        let fixture = try fixture()
        let second = try PostgresConnection(url: try PostgresTestCluster.required().url)
        defer { second.close() }
        let insert = "INSERT INTO messages (conversation_id, sender_id, body) VALUES ($1, 'alice', $2) RETURNING version"
        try fixture.connection.execute("BEGIN")
        let first = try fixture.connection.query(insert, [fixture.conversation, "first"]).rows.first?[0] ?? nil
        let blocked = #expect(throws: PostgresError.self) {
            try second.transaction { connection in
                try connection.execute("SET LOCAL lock_timeout = '200ms'")
                return try connection.query(insert, [fixture.conversation, "too early"])
            }
        }
        #expect(blocked?.sqlState == "55P03", "\(String(describing: blocked))")
        try fixture.connection.execute("COMMIT")
        let later = try second.query(insert, [fixture.conversation, "second"]).rows.first?[0] ?? nil
        #expect(Int64(later ?? "") ?? 0 > Int64(first ?? "") ?? .max)
    }

    @Test("a receipt stepping back from read to delivered is ignored (zero rows, state stays read)")
    func receiptsNeverStepBack() throws {
        let fixture = try fixture()
        let message = try send(fixture, as: "alice", body: "did you read this?")
        let result = try act(fixture.connection, as: "bob") { connection in
            try connection.query("INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'bob', 'delivered')",
                                 [message])
            let read = try connection.query("UPDATE receipts SET state = 'read' WHERE message_id = $1 RETURNING version",
                                            [message])
            let back = try connection.query("UPDATE receipts SET state = 'delivered' WHERE message_id = $1", [message])
            let upsert = try connection.query("""
                INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'bob', 'delivered')
                ON CONFLICT (message_id, user_id) DO UPDATE SET state = excluded.state
                """, [message])
            let now = try connection.query("SELECT state, version FROM receipts WHERE message_id = $1", [message])
            return (read.affectedRows, back.affectedRows, upsert.affectedRows, now.rows, read.rows)
        }
        #expect(result.0 == 1)
        #expect(result.1 == 0)
        #expect(result.2 == 0)
        #expect(result.3 == [["read", result.4.first?[0] ?? nil]])
        expectDenied("row-level security") {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'bob', 'read')",
                                     [message])
            }
        }
        let invalid = #expect(throws: PostgresError.self) {
            try act(fixture.connection, as: "alice") { connection in
                try connection.query("INSERT INTO receipts (message_id, user_id, state) VALUES ($1, 'alice', 'seen')",
                                     [message])
            }
        }
        #expect(invalid?.sqlState == "23514")
    }

    @Test("service_role sees everything and bypasses the edit and delete windows")
    func serviceRole() throws {
        let fixture = try fixture()
        let outside = try fixture.connection.query(
            "INSERT INTO conversations (title) VALUES ('private') RETURNING id").rows[0][0]
        try fixture.connection.query("INSERT INTO messages (conversation_id, sender_id, body) VALUES ($1, 'carol', 's')",
                                     [outside])
        let old = try seedMessage(fixture, sender: "alice", age: "3 hours")
        let result = try act(fixture.connection, as: "server", role: "service_role") { connection in
            (try connection.query("SELECT count(*) FROM messages WHERE conversation_id IN ($1, $2)",
                                  [fixture.conversation, outside]).rows,
             try connection.query("UPDATE messages SET body = 'moderated' WHERE id = $1", [old]).affectedRows,
             try connection.query("UPDATE messages SET deleted_at = now() WHERE id = $1", [old]).affectedRows,
             try connection.query("DELETE FROM messages WHERE id = $1", [old]).affectedRows)
        }
        #expect(result.0 == [["2"]])
        #expect(result.1 == 1)
        #expect(result.2 == 1)
        #expect(result.3 == 1)
        let kept = try seedMessage(fixture, sender: "alice", age: "1 minute")
        expectDenied("cannot change") {
            try act(fixture.connection, as: "server", role: "service_role") { connection in
                try connection.query("UPDATE messages SET sender_id = 'bob' WHERE id = $1", [kept])
            }
        }
    }
}
