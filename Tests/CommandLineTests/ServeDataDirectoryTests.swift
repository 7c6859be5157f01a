import Foundation
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard serve supabase --data-dir DIR` with a folder PostgreSQL cannot use: one line saying what is wrong
/// and what to do, never initdb's page of output.
@Suite("switchboard serve supabase: unusable data directories")
struct ServeDataDirectoryTests {
    private static let secret = "serve-data-directory-test-0123456789abcdef"

    /// Runs `serve supabase --data-dir <data>` in a fresh folder after `prepare` shaped it; returns the result.
    private static func serve(_ prepare: (_ folder: URL, _ data: URL) throws -> Void) async throws -> ProcessResult {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-data-dir-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return try await withCleanup {
            let data = folder.appendingPathComponent("parent/data")
            try prepare(folder, data)
            return try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path,
                                                      ["serve", "supabase", "--data-dir", data.path, "--jwt-secret", secret],
                                                      timeout: .seconds(120))
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }

    /// Checks that `result` failed with one line holding `expected`, and none of initdb's own output.
    private static func expectOneLine(_ result: ProcessResult, _ expected: [String]) {
        #expect(result.status == 1, "\(result.stdout) \(result.stderr)")
        #expect(result.stdout.isEmpty, "no listening line: \(result.stdout)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line: \(result.stderr)")
        for text in expected { #expect(result.stderr.contains(text), "\(result.stderr)") }
        #expect(!result.stderr.contains("The files belonging to this database system"), "\(result.stderr)")
    }

    @Test("a parent folder of mode 700 owned by root: the postgres user cannot reach the cluster; says which and how",
          .enabled(if: geteuid() == 0, "only root hands initdb to the postgres user"))
    func unreachableParent() async throws {
        var parent = ""
        let result = try await Self.serve { _, data in
            let folder = data.deletingLastPathComponent()
            parent = folder.path
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        Self.expectOneLine(result, ["the postgres user", "cannot reach data directory",
                                    "\(parent) (mode 700, owner root) does not let it through", "chmod o+x \(parent)"])
    }

    @Test("a cluster folder that holds other files: initdb needs it empty; says so")
    func notEmpty() async throws {
        let result = try await Self.serve { _, data in
            let cluster = data.appendingPathComponent("postgres")
            try FileManager.default.createDirectory(at: cluster, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try Data("notes".utf8).write(to: cluster.appendingPathComponent("notes.txt"))
        }
        Self.expectOneLine(result, ["holds files (notes.txt) but no PostgreSQL cluster", "empty it or use another one"])
    }

    @Test("a cluster of another PostgreSQL version: says which, and that this one runs 15")
    func otherVersion() async throws {
        let result = try await Self.serve { _, data in
            let cluster = data.appendingPathComponent("postgres")
            try FileManager.default.createDirectory(at: cluster, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try Data("14\n".utf8).write(to: cluster.appendingPathComponent("PG_VERSION"))
        }
        Self.expectOneLine(result, ["holds a PostgreSQL 14 cluster and this runs PostgreSQL 15"])
    }
}
