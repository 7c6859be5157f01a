import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardPostgresStore
import SwitchboardSQLite
import SwitchboardStore
import Testing
import TestSupport

/// The async store runs its transactions on threads of its own: store work stuck behind a lock (another session's
/// on PostgreSQL, another connection's on SQLite) never holds a thread of Swift's cooperative pool, so unrelated
/// async work keeps running. These suites time that work, so `make test` runs them in a process of their own
/// (`swift test --filter StoreExecutorTests`): other suites running at the same time would take the pool too.
@Suite("Async store off the cooperative pool")
struct StoreExecutorTests {
    /// More store calls than the machine has cooperative threads (one per core), so that blocking ones would take
    /// every thread of the pool.
    static var queuedCalls: Int { 2 * ProcessInfo.processInfo.activeProcessorCount + 4 }

    /// How long unrelated work may take while the store waits: far below any lock or retry wait.
    static let unrelatedBound: Duration = .milliseconds(100)

    /// Times a burst of small, unrelated async tasks that each need a cooperative thread.
    static func timeUnrelatedWork() async -> Duration {
        await ContinuousClock().measure {
            await withTaskGroup(of: Int.self) { group in
                for index in 0..<32 {
                    group.addTask {
                        await Task.yield()
                        return (0..<1000).reduce(index, &+)
                    }
                }
                for await _ in group {}
            }
        }
    }

    /// Releases a lock from a thread of its own after `seconds` unless the test released it first, so a store that
    /// did block the pool fails the time check instead of hanging the run.
    final class Watchdog: Sendable {
        private let released = Shared(false)
        private let release: @Sendable () -> Void

        /// Runs `release` once: now, or from the watchdog thread after `seconds`.
        init(after seconds: Double, _ release: @escaping @Sendable () -> Void) {
            self.release = release
            let released = self.released
            let thread = Thread {
                Thread.sleep(forTimeInterval: seconds)
                if released.update({ was in defer { was = true }; return !was }) { release() }
            }
            thread.start()
        }

        /// Releases the lock now unless the watchdog already did.
        func releaseNow() {
            if released.update({ was in defer { was = true }; return !was }) { release() }
        }
    }

    /// A value shared by threads and tasks under a lock.
    final class Shared<Value: Sendable>: Sendable {
        private let state: Locked<Value>
        init(_ value: Value) { state = Locked(value) }
        /// Changes the value under the lock and returns what `body` returns.
        func update<T: Sendable>(_ body: (inout Value) -> T) -> T { state.withLock { body(&$0) } }
        /// The value now.
        var value: Value { state.withLock { $0 } }
    }

    /// The second connection holding SQLite's write lock; used by the test and, if it must, the watchdog, never both.
    final class LockingConnection: @unchecked Sendable {
        let connection: SQLiteConnection
        init(_ connection: SQLiteConnection) { self.connection = connection }
    }

    @Test("SQLite: writes waiting on another connection's write lock leave the pool free")
    func sqliteLock() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("store-executor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.sqlite").path
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        let locker = LockingConnection(try SQLiteConnection(path: path))
        defer { locker.connection.close() }
        try locker.connection.execute("BEGIN IMMEDIATE")
        let watchdog = Watchdog(after: 4) { try? locker.connection.execute("COMMIT") }

        let calls = Self.queuedCalls
        let started = Shared(0)
        let writers = (0..<calls).map { index in
            Task {
                started.update { $0 += 1 }
                try await store.write { tx in
                    try tx.insertMapping(IDMapping(messageID: MessageID("m-\(index)"), backend: "xmtp", conversation: "room",
                                                   remoteID: RemoteID("r-\(index)")))
                }
            }
        }
        // Right behind the store calls (a blocking store would hold every pool thread now)...
        let right = await Self.timeUnrelatedWork()
        #expect(right < Self.unrelatedBound, "unrelated async work took \(right) right after the store calls")
        // ...and once every call is made: the store's thread waits for the lock in the first, the rest queue behind.
        #expect(await conditionHolds { started.value == calls }, "the store calls were never made")
        let later = await Self.timeUnrelatedWork()
        #expect(later < Self.unrelatedBound, "unrelated async work took \(later) while the store waited on a lock")

        watchdog.releaseNow()
        for writer in writers { try await writer.value }
        #expect(try await store.read { try $0.mappings(of: MessageID("m-\(calls - 1)")) }.count == 1)
    }

    @Test("A serial executor runs one job at a time, in order, on threads outside the pool")
    func serialExecutor() async throws {
        let executor = BlockingExecutor(name: "test.serial")
        let order = Shared<[Int]>([])
        let inside = Shared(0)
        let overlap = Shared(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                try await executor.run {
                    if inside.update({ $0 += 1; return $0 }) > 1 { overlap.update { $0 = true } }
                    order.update { $0.append(index) }
                    inside.update { $0 -= 1 }
                }
                group.addTask { try await executor.run { #expect(executor.isCurrent) } }
            }
            try await group.waitForAll()
        }
        #expect(order.value == Array(0..<16))
        let overlapped = overlap.value
        #expect(!overlapped)
        #expect(!executor.isCurrent)
    }

    @Test("An executor with several threads runs that many jobs at once, and no more")
    func parallelExecutor() async throws {
        let executor = BlockingExecutor(name: "test.parallel", threads: 3)
        let inside = Shared(0)
        let most = Shared(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<9 {
                group.addTask {
                    try await executor.run {
                        let now = inside.update { $0 += 1; return $0 }
                        most.update { $0 = max($0, now) }
                        // Hold the thread until three jobs were seen at once; the bound only catches "never".
                        let deadline = Date().addingTimeInterval(30)
                        while most.value < 3 && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
                        inside.update { $0 -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let mostAtOnce = most.value
        #expect(mostAtOnce == 3)
    }
}

/// `StoreExecutorTests`' check against a PostgreSQL server made slow by a lock another session holds.
@Suite("Async PostgreSQL store off the cooperative pool", .postgresCluster)
struct PostgresStoreExecutorTests {
    @Test("PostgreSQL: writes waiting on another session's lock leave the pool free")
    func postgresLock() async throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let store = try PostgresStore(url: cluster.url, schema: schema, maxConnections: 4)
        defer { store.close() }
        let locker = try PostgresConnection(url: cluster.url)
        defer { locker.close() }
        _ = try locker.execute("BEGIN")
        _ = try locker.execute("LOCK TABLE \(try locker.quoteIdentifier(schema)).id_map IN ACCESS EXCLUSIVE MODE")
        let watchdog = StoreExecutorTests.Watchdog(after: 20) { _ = try? locker.execute("COMMIT") }

        let calls = StoreExecutorTests.queuedCalls
        let writers = (0..<calls).map { index in
            Task {
                try await store.write { tx in
                    try tx.insertMapping(IDMapping(messageID: MessageID("m-\(index)"), backend: "xmtp", conversation: "room",
                                                   remoteID: RemoteID("r-\(index)")))
                }
            }
        }
        // Right behind the store calls (a blocking store would hold every pool thread now)...
        let right = await StoreExecutorTests.timeUnrelatedWork()
        #expect(right < StoreExecutorTests.unrelatedBound, "unrelated async work took \(right) right after the store calls")
        // ...and once every connection of the store waits for the lock and the other calls for a connection.
        let observer = try PostgresConnection(url: cluster.url)
        defer { observer.close() }
        let waitingSessions = try await conditionHolds {
            let result = try observer.query("SELECT count(*) AS n FROM pg_locks WHERE NOT granted")
            let waiting: Int = Int(result.value(row: 0, column: "n") ?? "") ?? 0
            return waiting >= 4
        }
        #expect(waitingSessions, "the store's sessions never queued on the lock")

        let elapsed = await StoreExecutorTests.timeUnrelatedWork()
        #expect(elapsed < StoreExecutorTests.unrelatedBound, "unrelated async work took \(elapsed) while the store waited on a lock")

        watchdog.releaseNow()
        for writer in writers { try await writer.value }
        #expect(try await store.read { try $0.mappings(of: MessageID("m-\(calls - 1)")) }.count == 1)
    }
}
