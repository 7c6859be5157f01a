import Foundation
import SwitchboardPostgres
import Testing
import TestSupport

/// `switchboard serve supabase`'s binding and its private PostgreSQL's trade-offs, as a user meets them.
@Suite("switchboard serve supabase: --host, --durable and what --help says")
struct ServeSupabaseOptionsTests {
    private static let secret = "serve-options-test-secret-0123456789abcdef"

    /// The private cluster's `SHOW fsync` for a server whose data directory is `data` (the port from postmaster.pid).
    private static func fsync(data: URL) async throws -> String? {
        let pid = try String(contentsOf: data.appendingPathComponent("postgres/postmaster.pid"), encoding: .utf8)
        let lines = pid.split(separator: "\n", omittingEmptySubsequences: false)
        let port = try #require(lines.count > 3 ? Int(lines[3].trimmingCharacters(in: .whitespaces)) : nil, "\(pid)")
        return try await offCooperativePool {
            let connection = try PostgresConnection(url: "postgresql://postgres@127.0.0.1:\(port)/postgres")
            defer { connection.close() }
            return try connection.query("SHOW fsync").rows.first?.first ?? nil
        }
    }

    @Test("--host binds that address and --durable keeps fsync on; by default the private cluster runs with fsync off")
    func hostAndDurable() async throws {
        try await ServeChild.with(["supabase", "--jwt-secret", Self.secret, "--host", "127.0.0.2", "--durable"]) { server in
            #expect(server.url.host == "127.0.0.2")
            // A scenario of the kit against that address: the server answers there.
            let run = try await ChildProcess.runDetached(
                try SwitchboardExecutable.locate().path,
                ["conformance", "--adapter", "supabase", "--url", server.url.absoluteString, "--jwt-secret", Self.secret,
                 "--scenario", "optimistic-visibility"], timeout: .seconds(120))
            #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
            let fsync = try await Self.fsync(data: server.root.appendingPathComponent("data"))
            #expect(fsync == "on")
        }
        try await ServeChild.with(["supabase", "--jwt-secret", Self.secret]) { server in
            #expect(server.url.host == "127.0.0.1")
            let fsync = try await Self.fsync(data: server.root.appendingPathComponent("data"))
            #expect(fsync == "off")
        }
    }

    @Test("--durable with --database-url is a usage error naming both (exit 2)")
    func durableNeedsPrivateCluster() async throws {
        let result = try await ChildProcess.runDetached(
            try SwitchboardExecutable.locate().path,
            ["serve", "supabase", "--data-dir", "/tmp/unused", "--jwt-secret", Self.secret, "--durable",
             "--database-url", "postgresql://postgres@127.0.0.1:1/postgres"], timeout: .seconds(60))
        #expect(result.status == 2)
        #expect(result.stderr.contains("--durable applies to the private PostgreSQL cluster, not to --database-url"), "\(result.stderr)")
    }

    @Test("serve supabase --help documents --host, --durable, fsync=off and trust authentication")
    func help() async throws {
        let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, ["serve", "supabase", "--help"],
                                                        timeout: .seconds(60))
        #expect(result.status == 0)
        for text in ["--host H", "--durable", "fsync=off", "`trust` authentication", "127.0.0.1 only"] {
            #expect(result.stdout.contains(text), "\(text) missing from: \(result.stdout)")
        }
    }
}
