import Foundation
import SwitchboardCore
import SwitchboardPostgresStore
import SwitchboardStore
import TestSupport

/// A store under test together with what removes it afterwards.
final class OpenedStore: Sendable {
    /// The store.
    let store: any Store
    /// Releases the store and deletes what it created.
    private let cleanup: @Sendable () -> Void

    /// Wraps a store and its cleanup.
    init(store: any Store, cleanup: @escaping @Sendable () -> Void) {
        self.store = store
        self.cleanup = cleanup
    }

    /// Closes the store and removes its files.
    func close() { cleanup() }
}

/// Makes fresh, empty stores of one kind, so the same contract tests can run against every `Store`.
struct StoreFactory: Sendable, CustomStringConvertible {
    /// The kind of store, as test names show it.
    let description: String
    /// Opens a fresh, empty store.
    let open: @Sendable () throws -> OpenedStore

    /// A private in-memory SQLite database.
    static let sqliteInMemory = StoreFactory(description: "SQLite :memory:") {
        let store = try SQLiteStore(path: ":memory:")
        return OpenedStore(store: store) { store.close() }
    }

    /// A SQLite file in a fresh temporary directory.
    static let sqliteFile = StoreFactory(description: "SQLite file") {
        let directory = try TemporaryDirectory()
        let store = try SQLiteStore(path: directory.path("store.sqlite"))
        return OpenedStore(store: store) {
            store.close()
            directory.remove()
        }
    }

    /// A fresh schema on the suite's private PostgreSQL cluster (the suite needs the `.postgresCluster` trait).
    static let postgres = StoreFactory(description: "PostgreSQL") {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        let store = try PostgresStore(url: cluster.url, schema: schema)
        return OpenedStore(store: store) {
            store.close()
            cluster.dropSchema(schema)
        }
    }

    /// Every store the contract runs against.
    static let all: [StoreFactory] = [.sqliteInMemory, .sqliteFile, .postgres]

    /// Opens a fresh store, runs `body` on it and closes it, whether `body` throws or not.
    func withStore(_ body: (any Store) throws -> Void) throws {
        let opened = try open()
        defer { opened.close() }
        try body(opened.store)
    }
}

/// A directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory: Sendable {
    /// The directory.
    let url: URL

    /// Creates a fresh, uniquely named directory.
    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-store-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// The path of `name` inside the directory.
    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Deletes the directory and everything in it.
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// A SQLite store on `store.sqlite` in a fresh temporary directory; `remove()` closes it and deletes the directory.
struct SQLiteFile {
    /// The database file's path.
    let path: String
    /// The store on it.
    let store: SQLiteStore
    /// The directory holding it.
    private let directory: TemporaryDirectory

    /// Creates the directory and opens the store (removing the directory again when that fails).
    init() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("store.sqlite")
        do {
            store = try SQLiteStore(path: path)
        } catch {
            directory.remove()
            throw error
        }
        self.path = path
        self.directory = directory
    }

    /// Closes the store and deletes the directory.
    func remove() {
        store.close()
        directory.remove()
    }
}
