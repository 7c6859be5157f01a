import Foundation
import SwitchboardCore
import SwitchboardPostgres
@testable import SwitchboardPostgresStore
import SwitchboardStore
import Testing
import TestSupport

/// What only the PostgreSQL store promises: several processes on one database, migrations under a lock,
/// conflicts between processes, leases across processes, reconnecting after the server restarts.
@Suite("PostgresStore", .postgresCluster)
struct PostgresStoreTests {
    /// Two stores on one fresh schema, as two bridge processes would open them, and the schema's cleanup.
    final class TwoProcesses: Sendable {
        /// The first process's store.
        let first: PostgresStore
        /// The second process's store.
        let second: PostgresStore
        /// The shared schema.
        let schema: String
        /// The cluster holding it.
        let cluster: PostgresTestCluster

        /// Opens both stores on a fresh schema of the suite's cluster.
        init() throws {
            cluster = try PostgresTestCluster.required()
            schema = PostgresTestCluster.freshSchema()
            first = try PostgresStore(url: cluster.url, schema: schema)
            second = try PostgresStore(url: cluster.url, schema: schema)
        }

        /// Closes both stores and drops the schema.
        func close() {
            first.close()
            second.close()
            cluster.dropSchema(schema)
        }
    }

    /// Runs `work(index)` on `count` threads started together; returns each thread's result in order.
    static func concurrently<T: Sendable>(_ count: Int, _ work: @escaping @Sendable (Int) -> T) -> [T] {
        let results = Locked<[Int: T]>([:])
        let group = DispatchGroup()
        let start = DispatchSemaphore(value: 0)
        for index in 0..<count {
            group.enter()
            Thread {
                defer { group.leave() }
                start.wait()
                let result = work(index)
                results.withLock { $0[index] = result }
            }.start()
        }
        for _ in 0..<count { start.signal() }
        group.wait()
        return results.withLock { results in (0..<count).map { results[$0]! } }
    }

    @Test("A new schema records its migrations; reopening it runs none; processes starting together migrate once")
    func migrations() throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let opened = Self.concurrently(6) { _ in
            Result { try PostgresStore(url: cluster.url, schema: schema) }
        }
        let stores = try opened.map { try $0.get() }
        defer { for store in stores { store.close() } }
        let applied = stores.map(\.migrationsAppliedAtOpen)
        #expect(applied.filter { !$0.isEmpty } == [PostgresStoreSchema.names])
        #expect(try stores[0].appliedMigrations() == PostgresStoreSchema.names)
        let again = try PostgresStore(url: cluster.url, schema: schema)
        defer { again.close() }
        #expect(again.migrationsAppliedAtOpen.isEmpty)
        #expect(PostgresStoreSchema.names == ["v1-initial-schema", "v2-leases", "v5-bridge-records"])
    }

    @Test("A schema holding foreign tables or newer migrations is refused as corrupt and left untouched")
    func foreignSchemas() throws {
        let cluster = try PostgresTestCluster.required()
        let foreign = PostgresTestCluster.freshSchema()
        let newer = PostgresTestCluster.freshSchema()
        defer {
            cluster.dropSchema(foreign)
            cluster.dropSchema(newer)
        }
        let admin = try PostgresConnection(url: cluster.url)
        defer { admin.close() }
        try admin.execute("CREATE SCHEMA \(foreign); CREATE TABLE \(foreign).customers (id int)")
        let foreignError = #expect(throws: SwitchboardError.self) {
            _ = try PostgresStore(url: cluster.url, schema: foreign)
        }
        #expect(foreignError?.code == .corruptStore)
        #expect(try admin.query("SELECT count(*) FROM pg_tables WHERE schemaname = $1", [foreign]).rows == [["1"]])

        try PostgresStore(url: cluster.url, schema: newer).close()
        try admin.query("INSERT INTO \(newer).schema_migrations VALUES ('v99-future', 99, 0)")
        let newerError = #expect(throws: SwitchboardError.self) {
            _ = try PostgresStore(url: cluster.url, schema: newer)
        }
        #expect(newerError?.code == .corruptStore)
    }

    @Test("An unreachable server is a retryable storage error that never shows the password")
    func unreachable() throws {
        let error = #expect(throws: SwitchboardError.self) {
            _ = try PostgresStore(url: "postgresql://postgres:hunter2@127.0.0.1:1/postgres?connect_timeout=2")
        }
        #expect(error?.code == .storage)
        #expect(error?.isRetryable == true)
        #expect(error?.message.contains("hunter2") == false)
    }

    @Test("Two stores on one database see each other's writes")
    func twoProcessesShareData() throws {
        let processes = try TwoProcesses()
        defer { processes.close() }
        var message = Fixtures.message(delivery: .pending)
        message.content.attachments = [Fixtures.attachment("a.png", upload: .uploading(progress: 0.5))]
        message.reactions = [Reaction(user: "bob", symbol: "👍", at: Fixtures.time(1))]
        let mapping = IDMapping(messageID: message.id, backend: "supabase", conversation: "room-1", remoteID: "r-1")
        let operationID = try processes.first.writeBlocking { transaction in
            try transaction.upsertMessage(message)
            try transaction.insertMapping(mapping)
            try transaction.upsertOutbox(Fixtures.outbox(message.id, created: 0, due: 0))
            try transaction.setCursor("c-1", conversation: "room-1", backend: "supabase", kind: .changes)
            return try transaction.enqueuePending(PendingOperation(waitKey: "k", kind: "edit", payload: Data([1]),
                                                                   createdAt: Fixtures.epoch))
        }
        try processes.second.readBlocking { transaction throws in
            #expect(try transaction.message(message.id) == message)
            #expect(try transaction.messageID(backend: "supabase", remoteID: "r-1") == message.id)
            #expect(try transaction.outboxEntry(message.id) != nil)
            #expect(try transaction.cursor(conversation: "room-1", backend: "supabase", kind: .changes) == "c-1")
            #expect(try transaction.allPendingOperations().map(\.id) == [operationID])
        }
        // The second process's pending ids continue the same sequence.
        let next = try processes.second.writeBlocking {
            try $0.enqueuePending(PendingOperation(waitKey: "k", kind: "edit", payload: Data(), createdAt: Fixtures.epoch))
        }
        #expect(next > operationID)
        try processes.second.writeBlocking { try $0.removeMessage(message.id) }
        #expect(try processes.first.readBlocking { try $0.message(message.id) } == nil)
        #expect(try processes.first.readBlocking { try $0.mappings(of: message.id) }.isEmpty)
    }

    @Test("A read is one snapshot: a write committed meanwhile by another process is not seen inside it")
    func readSnapshot() throws {
        let processes = try TwoProcesses()
        defer { processes.close() }
        try processes.first.writeBlocking { try $0.upsertMessage(Fixtures.message(in: "snap")) }
        let counts = try processes.first.readBlocking { transaction in
            let before = try transaction.messageCount(in: "snap")
            try processes.second.writeBlocking { try $0.upsertMessage(Fixtures.message(in: "snap")) }
            return (before, try transaction.messageCount(in: "snap"))
        }
        #expect(counts.0 == 1 && counts.1 == 1)
        #expect(try processes.first.readBlocking { try $0.messageCount(in: "snap") } == 2)
        // A read transaction refuses writes.
        let refused = #expect(throws: SwitchboardError.self) {
            try processes.first.readBlocking { try $0.upsertMessage(Fixtures.message(in: "snap")) }
        }
        #expect(refused?.code == .storage)
    }

    @Test("Writers in two processes doing read-modify-write steps lose nothing")
    func twoProcessHammer() throws {
        let processes = try TwoProcesses()
        defer { processes.close() }
        try Hammer.run(stores: [processes.first, processes.second, processes.first, processes.second],
                       writesPerThread: 100)
        try Hammer.verify(processes.first, threads: 4, writesPerThread: 100)
    }

    @Test("Processes mapping the same backend ID at once: exactly one wins, the others get conflict")
    func concurrentConflictingMappings() throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let stores = try (0..<4).map { _ in try PostgresStore(url: cluster.url, schema: schema) }
        defer { for store in stores { store.close() } }
        for round in 0..<10 {
            let remoteID = RemoteID("r-\(round)")
            let ids = (0..<stores.count).map { _ in MessageID.make() }
            let outcomes = Self.concurrently(stores.count) { index -> SwitchboardError.Code? in
                do {
                    try stores[index].writeBlocking { transaction in
                        // Each process also writes its message, so a loser must leave no trace of it either.
                        try transaction.upsertMessage(Fixtures.message(ids[index], in: "race"))
                        try transaction.insertMapping(IDMapping(messageID: ids[index], backend: "xmtp",
                                                                conversation: "room-1", remoteID: remoteID))
                    }
                    return nil
                } catch let error as SwitchboardError {
                    return error.code
                } catch {
                    return .transport
                }
            }
            let winners = outcomes.indices.filter { outcomes[$0] == nil }
            #expect(winners.count == 1, "round \(round): \(outcomes)")
            #expect(outcomes.filter { $0 != nil }.allSatisfy { $0 == .conflict }, "round \(round): \(outcomes)")
            guard let winner = winners.first else { continue }
            try stores[0].readBlocking { transaction throws in
                #expect(try transaction.messageID(backend: "xmtp", remoteID: remoteID) == ids[winner])
                for (index, id) in ids.enumerated() {
                    #expect(try transaction.mappings(of: id).count == (index == winner ? 1 : 0))
                    #expect((try transaction.message(id) != nil) == (index == winner))
                }
            }
        }
        #expect(try stores[1].readBlocking { try $0.messageCount(in: "race") } == 10)
    }

    @Test("Leases: acquire, renew, expire, take over and release across two processes")
    func leasesAcrossProcesses() throws {
        let processes = try TwoProcesses()
        defer { processes.close() }
        try LeaseChecks.run(processes.first, processes.second)
    }

    @Test("Many processes racing for one free lease: exactly one gets it")
    func leaseRace() throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let stores = try (0..<4).map { _ in try PostgresStore(url: cluster.url, schema: schema) }
        defer { for store in stores { store.close() } }
        let now = Fixtures.epoch
        for round in 0..<10 {
            let results = Self.concurrently(stores.count) { index in
                (try? stores[index].acquireLeaseBlocking("pair-\(round)", owner: "worker-\(index)", ttl: 30, now: now)) ?? false
            }
            #expect(results.filter { $0 }.count == 1, "round \(round): \(results)")
            let winner = results.firstIndex(of: true).map { "worker-\($0)" }
            #expect(try stores[0].leaseOwnerBlocking("pair-\(round)", now: now) == winner)
        }
    }

    @Test("Text with NUL characters round-trips; NUL in other fields is refused as invalid input")
    func nulCharacters() throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let store = try PostgresStore(url: cluster.url, schema: schema)
        defer { store.close() }
        let message = Fixtures.message(text: "a\u{0}b\u{0}")
        try store.writeBlocking { try $0.upsertMessage(message) }
        #expect(try store.readBlocking { try $0.message(message.id) } == message)
        let admin = try PostgresConnection(url: cluster.url)
        defer { admin.close() }
        #expect(try admin.query("SELECT text FROM \(schema).messages").rows == [["a\u{FFFD}b\u{FFFD}"]])
        let refused = #expect(throws: SwitchboardError.self) {
            try store.writeBlocking { try $0.setCursor("a\u{0}b", conversation: "room-1", backend: "memory", kind: .changes) }
        }
        #expect(refused?.code == .invalidArgument)
        // The refusal happened before any statement ran: the store stays usable.
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 1)
    }

    @Test("The store reconnects after the server restarts and after its connections are terminated")
    func reconnects() async throws {
        // A cluster of its own: restarting the suite's cluster would disturb the other tests. Starting and
        // stopping it wait on initdb and pg_ctl: off the cooperative pool, which the other tests share.
        let own = try await offCooperativePool { try PostgresTestCluster.make() }
        defer { own.cleanUp() }
        let store = try PostgresStore(url: own.url)
        defer { store.close() }
        try store.writeBlocking { try $0.upsertMessage(Fixtures.message(in: "restart")) }

        try await offCooperativePool { try own.cluster.stop() }
        let down = #expect(throws: SwitchboardError.self) {
            try store.readBlocking { try $0.messageCount(in: "restart") }
        }
        #expect(down?.code == .storage)
        #expect(down?.isRetryable == true)
        #expect(try await offCooperativePool { try own.cluster.start() } == own.url)

        #expect(try store.readBlocking { try $0.messageCount(in: "restart") } == 1)
        try store.writeBlocking { try $0.upsertMessage(Fixtures.message(in: "restart")) }
        #expect(try store.readBlocking { try $0.messageCount(in: "restart") } == 2)

        // Terminating every backend: the idle pooled connections are dead; the next calls replace them.
        let admin = try PostgresConnection(url: own.url)
        defer { admin.close() }
        let terminated = try admin.query("""
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE pid <> pg_backend_pid() AND datname = current_database() AND backend_type = 'client backend'
            """)
        #expect(terminated.rows.first?.first.flatMap { $0.flatMap { Int($0) } } ?? 0 >= 1)
        try store.writeBlocking { try $0.upsertMessage(Fixtures.message(in: "restart")) }
        #expect(try store.readBlocking { try $0.messageCount(in: "restart") } == 3)
        _ = try? await offCooperativePool { own.cleanUp() }  // the deferred one then finds it stopped
    }
}

/// Lease behaviour both stores share.
@Suite("Leases")
struct LeaseTests {
    @Test("SQLite leases: acquire, renew, expire, take over and release across two connections to one file")
    func sqliteLeases() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let first = try SQLiteStore(path: directory.path("store.sqlite"))
        let second = try SQLiteStore(path: directory.path("store.sqlite"))
        defer {
            first.close()
            second.close()
        }
        try LeaseChecks.run(first, second)
    }
}

/// The lease scenario run against two handles on one store.
enum LeaseChecks {
    /// Walks a lease through acquire, renew, refusal, expiry, takeover and release between `a` and `b`.
    static func run(_ a: any LeaseStore, _ b: any LeaseStore) throws {
        let t0 = Fixtures.epoch
        #expect(try a.leaseOwnerBlocking("pair", now: t0) == nil)
        #expect(try a.acquireLeaseBlocking("pair", owner: "A", ttl: 10, now: t0))
        #expect(try b.leaseOwnerBlocking("pair", now: t0) == "A")
        // Held and unexpired: B is refused, A re-acquiring renews.
        #expect(try !b.acquireLeaseBlocking("pair", owner: "B", ttl: 10, now: t0.addingTimeInterval(5)))
        #expect(try a.acquireLeaseBlocking("pair", owner: "A", ttl: 10, now: t0.addingTimeInterval(5)))
        #expect(try a.renewLeaseBlocking("pair", owner: "A", ttl: 10, now: t0.addingTimeInterval(9)))
        #expect(try !b.renewLeaseBlocking("pair", owner: "B", ttl: 10, now: t0.addingTimeInterval(9)))
        // Renewed until t0 + 19: still A's at t0 + 18, expired at t0 + 19.
        #expect(try b.leaseOwnerBlocking("pair", now: t0.addingTimeInterval(18)) == "A")
        #expect(try !b.acquireLeaseBlocking("pair", owner: "B", ttl: 10, now: t0.addingTimeInterval(18)))
        #expect(try b.leaseOwnerBlocking("pair", now: t0.addingTimeInterval(19)) == nil)
        // Expired: B takes it over; A can neither renew nor release it any more.
        #expect(try b.acquireLeaseBlocking("pair", owner: "B", ttl: 10, now: t0.addingTimeInterval(20)))
        #expect(try !a.renewLeaseBlocking("pair", owner: "A", ttl: 10, now: t0.addingTimeInterval(21)))
        try a.releaseLeaseBlocking("pair", owner: "A")
        #expect(try a.leaseOwnerBlocking("pair", now: t0.addingTimeInterval(21)) == "B")
        // Other leases are independent.
        #expect(try a.acquireLeaseBlocking("other", owner: "A", ttl: 10, now: t0.addingTimeInterval(21)))
        // Released: free at once for anyone.
        try b.releaseLeaseBlocking("pair", owner: "B")
        #expect(try a.leaseOwnerBlocking("pair", now: t0.addingTimeInterval(22)) == nil)
        #expect(try a.acquireLeaseBlocking("pair", owner: "A", ttl: 10, now: t0.addingTimeInterval(22)))
        #expect(try b.leaseOwnerBlocking("other", now: t0.addingTimeInterval(22)) == "A")
    }
}
