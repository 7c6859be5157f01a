import Foundation
import SwitchboardPostgres
import Testing

/// One private PostgreSQL cluster for a suite, in a temporary directory removed afterwards.
public struct PostgresTestCluster: Sendable {
    /// The cluster of the running suite, set by `WithPostgresCluster`.
    @TaskLocal public static var current: PostgresTestCluster?

    /// The server.
    public let cluster: PostgresCluster
    /// Its connection URL.
    public let url: String
    /// The temporary directory holding its data directory.
    public let root: URL

    /// Starts a cluster in a fresh temporary directory; fails (never skips) when that is impossible.
    public static func make() throws -> PostgresTestCluster {
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
    public static func makeTemporaryRoot() throws -> URL {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-pg-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        return root
    }

    /// Stops the server and removes its directory.
    public func cleanUp() {
        try? cluster.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// The suite's cluster; a failure here names what is missing.
    public static func required() throws -> PostgresTestCluster {
        guard let current else {
            throw PostgresError(code: .clusterFailed, message: "test cluster was not provided by the suite trait")
        }
        return current
    }

    /// A fresh, unused schema name.
    public static func freshSchema() -> String {
        "test_" + UUID().uuidString.replacing("-", with: "").lowercased()
    }

    /// Drops `schema` and everything in it; failures are ignored (the cluster is thrown away anyway).
    public func dropSchema(_ schema: String) {
        guard let connection = try? PostgresConnection(url: url) else { return }
        defer { connection.close() }
        _ = try? connection.execute("DROP SCHEMA IF EXISTS \"\(schema)\" CASCADE")
    }

    /// Creates an empty database in the cluster and returns its URL, so a test gets schemas of its own.
    public func freshDatabase() throws -> String {
        let name = "xmtp_\(UUID().uuidString.replacing("-", with: "").lowercased())"
        let connection = try PostgresConnection(url: url)
        defer { connection.close() }
        try connection.execute("CREATE DATABASE \(name)")
        guard let slash = url.lastIndex(of: "/") else { return url }
        return String(url[...slash]) + name
    }
}

/// Provides one running cluster to every test of the suite it is attached to.
public struct WithPostgresCluster: SuiteTrait, TestScoping {
    /// Applies to the suite as a whole: one cluster, not one per test.
    public var isRecursive: Bool { false }

    /// Starts the cluster, runs the suite with it as `PostgresTestCluster.current`, then removes it.
    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard geteuid() == 0 || FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/initdb") else {
            throw PostgresError(code: .clusterFailed,
                                message: "PostgreSQL tests need root (to run initdb as `postgres`) or runnable binaries")
        }
        let environment = try await offCooperativePool { try PostgresTestCluster.make() }
        do {
            try await PostgresTestCluster.$current.withValue(environment) {
                try await function()
            }
        } catch {
            _ = try? await offCooperativePool { environment.cleanUp() }
            throw error
        }
        _ = try? await offCooperativePool { environment.cleanUp() }
    }
}

extension Trait where Self == WithPostgresCluster {
    /// Runs the suite against one private PostgreSQL cluster.
    public static var postgresCluster: WithPostgresCluster { WithPostgresCluster() }
}
