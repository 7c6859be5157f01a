@testable import SwitchboardSQLite
import CSQLite
import Foundation
@testable import SwitchboardStore
import SwitchboardCore
import TestSupport
import Testing

/// What only the SQLite store promises: files, WAL, migrations, recognising foreign and damaged files.
@Suite("SQLiteStore")
struct SQLiteStoreTests {
    @Test("A new file records its migrations; reopening it runs none again")
    func migrationsRecorded() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let first = try SQLiteStore(path: path)
        #expect(first.migrationsAppliedAtOpen == SwitchboardSchema.migrations.names)
        #expect(try first.appliedMigrations() == SwitchboardSchema.migrations.names)
        first.close()

        let second = try SQLiteStore(path: path)
        defer { second.close() }
        #expect(second.migrationsAppliedAtOpen.isEmpty)
        #expect(try second.appliedMigrations() == SwitchboardSchema.migrations.names)
        #expect(try RawDatabase(path: path).integer("PRAGMA application_id") == Int64(SQLiteStore.applicationID))
    }

    /// SQLite keeps memory statistics by default, and their upkeep takes one process-wide mutex around every
    /// allocation; the first connection turns them off (a busy bridge spent several percent of its CPU there).
    @Test("SQLite's memory statistics are off in this process: allocations take no global lock")
    func memoryStatisticsOff() throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let store = file.store
        try store.writeBlocking { tx in
            for index in 0..<100 { try tx.upsertMessage(Fixtures.message(MessageID("m\(index)"), text: String(repeating: "x", count: 500))) }
        }
        #expect(SQLiteConnection.processSettings == SQLITE_OK)
        #expect(SQLiteConnection.countedMemoryBytes == 0, "SQLite counts its memory: statistics are on")
    }

    @Test("Data survives closing and reopening a file store")
    func survivesReopen() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        var message = Fixtures.message(delivery: .uploading(progress: 0.5))
        message.content.attachments = [Fixtures.attachment("photo.png", upload: .uploading(progress: 0.5))]
        message.reactions = [Reaction(user: "bob", symbol: "👀", at: Fixtures.time(1))]
        let entry = Fixtures.outbox(message.id, created: 0, due: 1)
        do {
            let store = try SQLiteStore(path: path)
            try store.writeBlocking { transaction in
                try transaction.upsertMessage(message)
                try transaction.upsertOutbox(entry)
                try transaction.setCursor("c-7", conversation: "room-1", backend: "memory", kind: .history)
            }
            store.close()
        }
        let reopened = try SQLiteStore(path: path)
        defer { reopened.close() }
        try reopened.readBlocking { transaction throws in
            #expect(try transaction.message(message.id) == message)
            #expect(try transaction.outboxEntry(message.id) == entry)
            #expect(try transaction.cursor(conversation: "room-1", backend: "memory", kind: .history) == "c-7")
        }
    }

    @Test("A file store runs in WAL mode; an in-memory one cannot")
    func walMode() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let store = try SQLiteStore(path: path)
        #expect(try store.journalMode() == "wal")
        try store.writeBlocking { try $0.upsertMessage(Fixtures.message()) }
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        store.close()
        // WAL is persistent: another program opening the file sees it too.
        #expect(try RawDatabase(path: path).text("PRAGMA journal_mode") == "wal")

        let memory = try SQLiteStore(path: ":memory:")
        #expect(try memory.journalMode() == "memory")
    }

    @Test("A checkpoint that copied the whole WAL back restarts the WAL itself, so no commit pays the header sync")
    func checkpointRestartsTheWAL() async throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let (path, store) = (file.path, file.store)
        let raw = try RawDatabase(path: path)
        #expect(try raw.text("SELECT count FROM wal_restarts") == "0")
        // One checkpoint's worth of commits, then a pause: the background checkpoint catches up and restarts the WAL.
        for _ in 0..<WALCheckpointer.commitsPerCheckpoint {
            let message = Fixtures.message()
            try store.writeBlocking { try $0.upsertMessage(message) }
        }
        let deadline = TestTime.deadline(after: .seconds(10))
        while try raw.text("SELECT count FROM wal_restarts") == "0", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(try raw.text("SELECT count FROM wal_restarts") == "1")
        // The store keeps working on the restarted WAL, and everything written is there.
        let last = Fixtures.message()
        try store.writeBlocking { try $0.upsertMessage(last) }
        #expect(try store.readBlocking { try $0.message(last.id) } == last)
        #expect(try raw.text("SELECT count(*) FROM messages") == String(WALCheckpointer.commitsPerCheckpoint + 1))
    }

    @Test("The store's connection keeps an 8 MB page cache (a burst's dirty pages stay in it until the commit)")
    func pageCache() throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let store = file.store
        #expect(SQLiteStore.pageCacheKiB == 8192)
        #expect(try store.pageCacheSize() == -8192)
    }

    @Test("Checkpoints run off the commit path and keep the WAL small; under writes without pause it stays bounded")
    func checkpointsOffTheCommitPath() async throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let (path, store) = (file.path, file.store)
        #expect(try store.walAutocheckpoint() == WALCheckpointer.fallbackPages, "commits checkpoint only as a fallback")
        func walSize() -> Int { (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0 }
        func write(_ index: Int) throws {
            var message = Fixtures.message()
            message.content.text = String(repeating: "payload \(index) ", count: 40)
            try store.writeBlocking { try $0.upsertMessage(message) }
        }
        // Bursts of 50 commits with pauses, as a chat client writes: the background checkpoint catches up in each
        // pause and the WAL restarts, so it never grows past a few bursts' pages (without any checkpoint: ~16 MB).
        var largest = 0
        for index in 0..<1_000 {
            try write(index)
            if index % 50 == 49 { try await Task.sleep(for: .milliseconds(30)) }
            largest = max(largest, walSize())
        }
        #expect(largest > 0 && largest < 4 << 20, "with pauses the WAL grew to \(largest) bytes")
        // Writes without any pause: the fallback bounds the WAL near 4,000 pages.
        largest = 0
        for index in 1_000..<5_000 {
            try write(index)
            largest = max(largest, walSize())
        }
        #expect(largest < 24 << 20, "without pauses the WAL grew to \(largest) bytes")
        #expect(try RawDatabase(path: path).text("SELECT count(*) FROM messages") == "5000")
    }

    @Test("An empty existing file becomes a new store")
    func emptyFile() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("empty.sqlite")
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(store.migrationsAppliedAtOpen == SwitchboardSchema.migrations.names)
    }

    @Test("A file of random bytes or text is reported as corrupt, by path, and left untouched",
          arguments: ["random", "text"])
    func garbageFile(_ kind: String) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("garbage.sqlite")
        var generator = SystemRandomNumberGenerator()
        let bytes = kind == "random"
            ? Data((0..<8192).map { _ in UInt8.random(in: 0...255, using: &generator) })
            : Data(String(repeating: "This is a shopping list, not a database.\n", count: 40).utf8)
        try bytes.write(to: URL(fileURLWithPath: path))

        let error = #expect(throws: SwitchboardError.self) { try SQLiteStore(path: path) }
        #expect(error?.code == .corruptStore)
        #expect(error?.message.contains(path) == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
    }

    @Test("Another application's SQLite database is refused, by path, and left untouched")
    func foreignDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("photos.db")
        do {
            let raw = try RawDatabase(path: path)
            try raw.execute("CREATE TABLE albums (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO albums VALUES (1, 'x')")
            #expect(try raw.integer("PRAGMA application_id") == 0)
        }
        let error = #expect(throws: SwitchboardError.self) { try SQLiteStore(path: path) }
        #expect(error?.code == .corruptStore)
        #expect(error?.message.contains(path) == true)

        let raw = try RawDatabase(path: path)
        #expect(try raw.text("PRAGMA journal_mode") == "delete")
        #expect(try raw.integer("SELECT COUNT(*) FROM sqlite_schema WHERE name = 'schema_migrations'") == 0)
        #expect(try raw.integer("SELECT COUNT(*) FROM albums") == 1)
    }

    @Test("A database with another application id is refused even when empty of tables")
    func otherApplicationID() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("other.db")
        try RawDatabase(path: path).execute("PRAGMA application_id = 1234")
        let error = #expect(throws: SwitchboardError.self) { try SQLiteStore(path: path) }
        #expect(error?.code == .corruptStore)
    }

    @Test("A database written by a newer version (an unknown migration) is refused")
    func newerVersion() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        try SQLiteStore(path: path).close()
        try RawDatabase(path: path).execute("""
            INSERT INTO schema_migrations (name, applied_order, applied_at) VALUES ('v99-from-the-future', 99, 0)
            """)
        let error = #expect(throws: SwitchboardError.self) { try SQLiteStore(path: path) }
        #expect(error?.code == .corruptStore)
        #expect(error?.message.contains(path) == true)
        #expect(error?.message.contains("v99-from-the-future") == true)
    }

    @Test("Two stores on one file, written from two threads, lose nothing")
    func twoConnectionsHammering() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("store.sqlite")
        let first = try SQLiteStore(path: path)
        let second = try SQLiteStore(path: path)
        defer {
            first.close()
            second.close()
        }
        try Hammer.run(stores: [first, second], writesPerThread: 150)
        try Hammer.verify(first, threads: 2, writesPerThread: 150)
        try Hammer.verify(second, threads: 2, writesPerThread: 150)
    }

    @Test("A read transaction refuses writes and leaves the store writable")
    func readIsReadOnly() throws {
        let store = try SQLiteStore(path: ":memory:")
        let error = #expect(throws: SwitchboardError.self) {
            try store.readBlocking { try $0.upsertMessage(Fixtures.message()) }
        }
        #expect(error?.code == .storage)
        let stored = Fixtures.message()
        try store.writeBlocking { try $0.upsertMessage(stored) }
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 1)
        // Every kind of write is refused inside a read, also with a statement a write already prepared.
        #expect(throws: SwitchboardError.self) { try store.readBlocking { try $0.insertNewMessage(Fixtures.message()) } }
        #expect(throws: SwitchboardError.self) { try store.readBlocking { try $0.upsertMessage(stored) } }
        #expect(throws: SwitchboardError.self) { try store.readBlocking { try $0.removeMessage(stored.id) } }
        #expect(throws: SwitchboardError.self) {
            try store.readBlocking { try $0.insertMapping(IDMapping(messageID: stored.id, backend: "memory", conversation: "room-1",
                                                            remoteID: "r-1")) }
        }
        #expect(try store.readBlocking { try $0.message(stored.id) } == stored)
        #expect(try store.readBlocking { try $0.messageID(backend: "memory", remoteID: "r-1") } == nil)
        try store.writeBlocking { try $0.removeMessage(stored.id) }
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 0)
    }

    @Test("Reads do not make SQLite compile the cached statements again (no PRAGMA expiring them per read)")
    func readsKeepCompiledStatements() throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let store = file.store
        let before = try store.statementReprepares()
        let rounds = 50
        for index in 0..<rounds {
            let message = Fixtures.message(at: Double(index))
            try store.writeBlocking { try $0.insertNewMessage(message) }
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
            #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == index + 1)
        }
        // A `PRAGMA query_only` around each read expired every statement: the ~15 a round runs (transaction control
        // included) were compiled again in every round, 740 in all. SQLite may still recompile one now and then on its
        // own, so a handful is tolerated; once per round is not.
        let recompiled = try store.statementReprepares() - before
        #expect(recompiled < rounds / 10, "\(recompiled) statements compiled again in \(rounds) rounds")
    }

    @Test("A batch's delivery update is compiled once, not again for every batch")
    func batchDeliveryUpdateKeepsItsPlan() throws {
        let store = try SQLiteStore(path: ":memory:")
        for batch in 0..<10 {
            var messages: [Message] = []
            for index in 0..<3 {
                var message = Fixtures.message(at: Double(batch * 3 + index))
                message.delivery = .pending
                messages.append(message)
            }
            let ids = messages.map(\.id)
            let before = try store.statementReprepares()
            let moved = try store.writeBlocking { tx in
                for message in messages { try tx.insertNewMessage(message) }
                return try tx.updateDeliveries(of: ids, from: .pending, to: .received)
            }
            #expect(moved == 3)
            #expect(try store.readBlocking { tx in try ids.compactMap { try tx.message($0)?.delivery } } == Array(repeating: .received, count: 3))
            // The first batch prepares its statements; no later one compiles any of them again.
            if batch > 0 { #expect(try store.statementReprepares() == before, "batch \(batch)") }
        }
    }

    @Test("A transaction kept past its end cannot touch the database")
    func escapedTransaction() throws {
        let store = try SQLiteStore(path: ":memory:")
        var escaped: (any StoreTransaction)?
        try store.writeBlocking { escaped = $0 }
        let transaction = try #require(escaped)
        #expect(throws: SwitchboardError.self) { try transaction.upsertMessage(Fixtures.message()) }
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 0)
    }

    @Test("A closed store throws instead of crashing")
    func closedStore() throws {
        let store = try SQLiteStore(path: ":memory:")
        store.close()
        let error = #expect(throws: SwitchboardError.self) { try store.readBlocking { try $0.messageCount(in: "x") } }
        #expect(error?.code == .storage)
        store.close()
    }

    @Test("Errors name the SQL and code but never the bound values")
    func errorsHideArguments() throws {
        let store = try SQLiteStore(path: ":memory:")
        var message = Fixtures.message()
        let attachment = Fixtures.attachment("tax-return-2024.pdf", upload: .pending)
        message.content.attachments = [attachment, attachment]  // the same attachment twice breaks its key
        let error = #expect(throws: SwitchboardError.self) { try store.writeBlocking { try $0.upsertMessage(message) } }
        #expect(error?.code == .conflict)
        #expect(error?.message.contains("INSERT INTO attachments") == true)
        #expect(error?.message.contains("tax-return-2024") == false)
        #expect(error?.message.contains(attachment.id.rawValue) == false)
        #expect(try store.readBlocking { try $0.message(message.id) } == nil)

        let raw = SQLiteError(extendedCode: SQLiteError.constraintUnique, message: "UNIQUE constraint failed: t.x",
                              sql: "INSERT INTO t (x) VALUES (?)")
        #expect(raw.description == "SQLite error 2067 (constraint failed): UNIQUE constraint failed: t.x "
                + "in `INSERT INTO t (x) VALUES (?)`")
    }

    @Test("Prepared statements are cached and reused by SQL text")
    func statementCache() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let first = try connection.cachedStatement("SELECT ?")
        let second = try connection.cachedStatement("SELECT ?")
        #expect(first === second)
        #expect(try connection.queryFirst("SELECT ?", ["a"]) { $0.string(at: 0) } == "a")
        #expect(try connection.queryFirst("SELECT ?", [nil]) { $0.optionalString(at: 0) } == .some(nil))
        #expect(try connection.queryFirst("SELECT ?", [Data()]) { $0.optionalData(at: 0) } == Data())
        #expect(try connection.queryFirst("SELECT ?", [""]) { $0.optionalString(at: 0) } == "")
        // A statement someone left mid-run (one row of three read, never reset) runs again from the start.
        let rows = "SELECT value FROM json_each(?)"
        let left = try connection.cachedStatement(rows)
        try left.bind(["[1,2,3]"])
        #expect(try left.step() && left.isBusy)
        #expect(try connection.query(rows, ["[4,5,6]"]) { $0.int(at: 0) } == [4, 5, 6])
        #expect(!left.isBusy, "left reset after the query")
    }

    @Test("The statement cache keeps texts apart that share their length and their last 64 bytes")
    func statementCacheSeparatesSameTails() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        let tail = String(repeating: " ", count: StatementKey.tailBytes) + "AS v"
        let one = "SELECT 'one'" + tail, two = "SELECT 'two'" + tail
        #expect(one.utf8.count == two.utf8.count)
        #expect(StatementKey(one).digest == StatementKey(two).digest)  // same digest: only the text tells them apart
        #expect(try connection.queryFirst(one) { $0.string(at: 0) } == "one")
        #expect(try connection.queryFirst(two) { $0.string(at: 0) } == "two")
        #expect(try connection.cachedStatement(one) !== connection.cachedStatement(two))
        #expect(StatementKey("SELECT 1") != StatementKey("SELECT 2"))
    }

    @Test("Page loads use the timeline index")
    func timelineIndexUsed() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try SwitchboardSchema.migrations.migrate(connection)
        let plan = try connection.query("""
            EXPLAIN QUERY PLAN SELECT id FROM messages WHERE conversation = ? AND (ts, id) < (?, ?)
            ORDER BY ts DESC, id DESC LIMIT ?
            """, ["c", 1, "x", 10]) { $0.string(at: 3) }
        #expect(plan.contains { $0.contains("messages_timeline") })
        #expect(!plan.contains { $0.contains("TEMP B-TREE") })
        let unfinished = try connection.query("""
            EXPLAIN QUERY PLAN SELECT id FROM messages WHERE \(SwitchboardSchema.unfinishedCondition) ORDER BY ts, id
            """) { $0.string(at: 3) }
        #expect(unfinished.contains { $0.contains("messages_unfinished") })
    }

    @Test("A batch's delivery update finds each listed row by primary key, not by scanning the table")
    func batchDeliveryUpdateUsesPrimaryKey() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try SwitchboardSchema.migrations.migrate(connection)
        let plan = try connection.query("EXPLAIN QUERY PLAN " + SQLiteTransaction.updateDeliveriesSQL,
                                        ["received", nil, nil, nil, "[\"a\",\"b\"]", "pending", nil, nil, nil]) { $0.string(at: 3) }
        #expect(plan.contains { $0.hasPrefix("SEARCH messages USING INDEX sqlite_autoindex_messages_1 (id=?)") }, "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN messages") }, "\(plan)")
    }

    @Test("A batch's look for waiting operations probes the wait-key index, not a scan of the queue")
    func waitKeysUseTheIndex() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try SwitchboardSchema.migrations.migrate(connection)
        let plan = try connection.query("EXPLAIN QUERY PLAN " + SQLiteTransaction.waitKeysSQL, ["[\"a\",\"b\"]"]) { $0.string(at: 3) }
        #expect(plan.contains { $0.hasPrefix("SEARCH pending_operations USING COVERING INDEX pending_operations_wait_key (wait_key=?)") },
                "\(plan)")
        #expect(!plan.contains { $0.hasPrefix("SCAN pending_operations") }, "\(plan)")
    }

    @Test("Writing a message builds no temporary b-tree for the partial index's condition")
    func messageWritesNeedNoEphemeralTable() throws {
        let connection = try SQLiteConnection(path: ":memory:")
        _ = try SwitchboardSchema.migrations.migrate(connection)
        let index = try connection.queryFirst("SELECT sql FROM sqlite_master WHERE name = 'messages_unfinished'") {
            $0.string(at: 0)
        }
        #expect(index?.hasSuffix("WHERE " + SwitchboardSchema.unfinishedCondition) == true)
        for (sql, arguments) in [
            ("""
            INSERT INTO messages (id, conversation, sender, text, ts, has_server_ts, delivery, is_outgoing)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING
            """, ["m", "c", "s", "t", 1, 1, "received", 0] as [(any SQLiteBindable)?]),
            ("UPDATE messages SET delivery = ? WHERE id = ?", ["sent", "m"]),
        ] {
            let program = try connection.query("EXPLAIN " + sql, arguments) { $0.string(at: 1) }
            #expect(!program.isEmpty)
            #expect(!program.contains("OpenEphemeral"), "\(sql)")
        }
    }
}

/// A database opened straight through the sqlite3 C API, as another program would.
final class RawDatabase {
    /// The handle.
    private let handle: OpaquePointer

    /// Opens (creating) `path`.
    init(path: String) throws {
        // The process's SQLite settings are applied before anything initialises SQLite, as every connection of the
        // library does: opened first, a raw handle would leave `processSettings` refused (SQLITE_MISUSE).
        _ = SQLiteConnection.processSettings
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK,
              let handle else {
            sqlite3_close(handle)
            throw SwitchboardError(.storage, "cannot open \(path)")
        }
        self.handle = handle
    }

    deinit { sqlite3_close(handle) }

    /// Runs a script.
    func execute(_ sql: String) throws {
        guard sqlite3_exec(handle, sql, nil, nil, nil) == SQLITE_OK else {
            throw SwitchboardError(.storage, String(cString: sqlite3_errmsg(handle)))
        }
    }

    /// The first column of the first row of `sql` as an integer.
    func integer(_ sql: String) throws -> Int64 {
        try first(sql) { sqlite3_column_int64($0, 0) }
    }

    /// The first column of the first row of `sql` as text.
    func text(_ sql: String) throws -> String {
        try first(sql) { String(cString: sqlite3_column_text($0, 0)) }
    }

    /// Decodes the first row of `sql`.
    private func first<T>(_ sql: String, _ decode: (OpaquePointer) -> T) throws -> T {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(handle, sql, -1, &statement, nil) == SQLITE_OK, let statement else {
            throw SwitchboardError(.storage, String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        guard sqlite3_step(statement) == SQLITE_ROW else {
            throw SwitchboardError(.storage, "no row for \(sql)")
        }
        return decode(statement)
    }
}
