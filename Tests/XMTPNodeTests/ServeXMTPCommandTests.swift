import Foundation
import SwitchboardNet
import Testing
import TestSupport

extension BackendSuites {
    /// `switchboard serve xmtp` as an operator runs it: one ready line, requests served, a clean stop on SIGTERM.
    @Suite("switchboard serve xmtp")
    struct ServeXMTPCommandTests {
        @Test("prints one listening line, serves, and exits 0 on SIGTERM", arguments: Backend.allCases)
        func servesAndStops(backend: Backend) async throws {
            let directory = try makeTemporaryDirectory()
            defer { try? FileManager.default.removeItem(at: directory) }
            var arguments = ["serve", "xmtp", "--port", "0", "--data-dir", directory.path]
            if backend == .postgres { arguments += ["--database-url", try PostgresTestCluster.required().freshDatabase()] }
            let child = try SwitchboardChild.start(arguments)
            defer { child.killIfRunning() }
            let (first, base) = try await child.listening()
            let response = try await HTTPClient().send(HTTPRequest(method: .post, url: base.appendingPathComponent("identity/v1/register"),
                                                                   body: Data(#"{"inbox_id":"cli"}"#.utf8)))
            #expect(response.status == 200)
            #expect(await child.terminate(within: .seconds(30)), "serve did not exit within 30 s of SIGTERM")
            #expect(child.process.terminationStatus == 0)
            #expect(child.lines.allLines() == [first], "serve printed more than the one ready line")
            let sqlite = FileManager.default.fileExists(atPath: directory.appendingPathComponent("xmtp-node.sqlite").path)
            #expect(sqlite == (backend == .sqlite), "SQLite is used only without --database-url")
        }

        @Test("unknown options and a missing --data-dir are usage errors (status 2)")
        func usageErrors() throws {
            for (arguments, expected) in [(["serve", "xmtp"], "--data-dir"), (["serve", "xmtp", "--data-dir", "/tmp/x", "--jwt-secret", "s"], "--jwt-secret"),
                                          (["serve", "xmtp", "--data-dir", "/tmp/x", "--port", "70000"], "--port")] {
                let result = try ChildProcess.run(try SwitchboardExecutable.locate().path, arguments)
                #expect(result.status == 2, "\(arguments)")
                #expect(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
            }
        }
    }
}
