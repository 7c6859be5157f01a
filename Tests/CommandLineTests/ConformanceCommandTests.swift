import Foundation
import Testing
import TestSupport

/// `switchboard conformance` against a running server, as a user runs it.
@Suite("switchboard conformance against a server")
struct ConformanceCommandTests {
    @Test("a wrong --jwt-secret is one authentication failure that stops the run, not 37 transport errors")
    func wrongSecret() async throws {
        try await ServeChild.with(["supabase", "--jwt-secret", "the-server-secret-0123456789abcdefghij"]) { server in
            let executable = try SwitchboardExecutable.locate().path
            let wrong = ["conformance", "--adapter", "supabase", "--url", server.url.absoluteString,
                         "--jwt-secret", "not-the-server-secret-0123456789abcdef"]
            let table = try await ChildProcess.runDetached(executable, wrong, timeout: .seconds(120))
            #expect(table.status == 1, "\(table.stdout) \(table.stderr)")
            let output = table.stdout + table.stderr
            #expect(output.components(separatedBy: "authentication failed").count == 2, "reported once: \(output)")
            #expect(table.stdout.contains("unauthorized: creating a conversation failed: HTTP 401 PGRST301"), "\(table.stdout)")
            #expect(table.stdout.contains("scenarios not run"), "\(table.stdout)")
            #expect(!output.contains("transport"), "\(output)")
            #expect(!output.contains("  failed  "), "no scenario was run, so none failed: \(output)")
            #expect(table.stderr.contains("--jwt-secret"), "the hint names the option: \(table.stderr)")

            let json = try await ChildProcess.runDetached(executable, wrong + ["--format", "json"], timeout: .seconds(120))
            #expect(json.status == 1)
            let report = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
            #expect((report["scenarios"] as? [Any])?.isEmpty == true)
            let stopped = try #require(report["stopped"] as? [String: Any], "\(json.stdout)")
            #expect((stopped["reason"] as? String)?.hasPrefix("authentication failed") == true)
        }
    }
}
