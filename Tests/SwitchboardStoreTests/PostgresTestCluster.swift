import Foundation
import SwitchboardPostgres
import Testing

/// One private PostgreSQL cluster for a suite, in a temporary directory removed afterwards.
struct PostgresTestCluster: Sendable {
    /// The cluster of the running suite, set by `WithPostgresCluster`.
    @TaskLocal static var current: PostgresTestCluster?

    /// The server.
    let cluster: PostgresCluster
    /// Its connection URL.
    let url: String
    /// The temporary directory holding its data directory.
    let root: URL

    /// Starts a cluster in a fresh temporary directory; fails (never skips) when that is impossible.
    static func make() throws -> PostgresTestCluster {
        let root = try makeTemporaryRoot()
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("data"))
        do {
            let url = try cluster.start()
            return PostgresTestCluster(cluster: cluster, url: url, root: root)
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// A parent directory other users can traverse, so the `postgres` user reaches the data directory.
    static func makeTemporaryRoot() throws -> URL {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-pg-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        return root
    }

    /// Stops the server and removes its directory.
    func cleanUp() {
        try? cluster.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// The suite's cluster; a failure here names what is missing.
    static func required() throws -> PostgresTestCluster {
        guard let current else {
            throw PostgresError(code: .clusterFailed, message: "test cluster was not provided by the suite trait")
        }
        return current
    }

    /// A fresh, unused schema name.
    static func freshSchema() -> String {
        "test_" + UUID().uuidString.replacing("-", with: "").lowercased()
    }

    /// Drops `schema` and everything in it; failures are ignored (the cluster is thrown away anyway).
    func dropSchema(_ schema: String) {
        guard let connection = try? PostgresConnection(url: url) else { return }
        defer { connection.close() }
        _ = try? connection.execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }
}

/// Provides one running cluster to every test of the suite it is attached to.
struct WithPostgresCluster: SuiteTrait, TestScoping {
    /// Applies to the suite as a whole: one cluster, not one per test.
    var isRecursive: Bool { false }

    /// Starts the cluster, runs the suite with it as `PostgresTestCluster.current`, then removes it.
    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        guard geteuid() == 0 || FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/initdb") else {
            throw PostgresError(code: .clusterFailed,
                                message: "PostgreSQL tests need root (to run initdb as `postgres`) or runnable binaries")
        }
        let environment = try PostgresTestCluster.make()
        defer { environment.cleanUp() }
        try await PostgresTestCluster.$current.withValue(environment) {
            try await function()
        }
    }
}

extension Trait where Self == WithPostgresCluster {
    /// Runs the suite against one private PostgreSQL cluster.
    static var postgresCluster: WithPostgresCluster { WithPostgresCluster() }
}
