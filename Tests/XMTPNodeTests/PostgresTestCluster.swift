import Foundation
import SwitchboardPostgres
import Testing

/// One private cluster for the whole suite, in a temporary directory removed afterwards (copied from
/// SwitchboardPostgresTests, plus `freshDatabase()`).
struct PostgresTestCluster: Sendable {
    @TaskLocal static var current: PostgresTestCluster?

    let cluster: PostgresCluster
    let url: String
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

    /// Creates an empty database in the cluster and returns its URL, so each test gets its own `xmtp_node` schema.
    func freshDatabase() throws -> String {
        let name = "xmtp_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("CREATE DATABASE \(name)")
        guard let slash = url.lastIndex(of: "/") else { return url }
        return String(url[...slash]) + name
    }

    /// Stops the cluster and removes its directory.
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
}

/// Provides one running cluster to every test of the suite it is attached to.
struct WithPostgresCluster: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

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
