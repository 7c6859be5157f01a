import Foundation
import SwitchboardNet
import Testing
import TestSupport

/// `switchboard serve socketio` as an operator runs it: one ready line, requests served, a clean stop on SIGTERM.
@Suite("switchboard serve socketio")
struct ServeSocketIOCommandTests {
    @Test("prints one listening line, serves, and exits 0 on SIGTERM")
    func servesAndStops() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let child = try SwitchboardChild.start(["serve", "socketio", "--port", "0", "--data-dir", directory.path,
                                                "--page-size", "2", "--edit-window", "0.5", "--delete-window", "60"])
        defer { child.killIfRunning() }
        let (first, base) = try await child.listening()
        let client = HTTPClient()
        let response = try await client.send(HTTPRequest(method: .post, url: base.appendingPathComponent("auth/register"),
                                                         headers: ["Content-Type": "application/json"],
                                                         body: Data(#"{"userId":"cli"}"#.utf8)))
        #expect(response.status == 201)
        let token = try #require(JSONBody(response.body)["token"] as? String)
        let auth: HTTPHeaders = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        _ = try await client.send(HTTPRequest(method: .post, url: base.appendingPathComponent("conversations"), headers: auth,
                                              body: Data(#"{"id":"c","members":[]}"#.utf8)))
        for index in 0..<3 {
            let sent = try await client.send(HTTPRequest(method: .post, url: base.appendingPathComponent("conversations/c/messages"),
                                                         headers: auth, body: Data(#"{"clientMessageId":"\#(index)","text":"t"}"#.utf8)))
            #expect(sent.status == 201)
        }
        let page = try await client.send(HTTPRequest(url: base.appendingPathComponent("conversations/c/messages"), headers: auth))
        #expect((JSONBody(page.body)["messages"] as? [Any])?.count == 2, "--page-size is applied")
        #expect(JSONBody(page.body)["hasMore"] as? Bool == true)
        #expect(await child.terminate(within: .seconds(30)), "serve did not exit within 30 s of SIGTERM")
        #expect(child.process.terminationStatus == 0)
        #expect(child.lines.allLines() == [first], "serve printed more than the one ready line")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("socketio.sqlite").path))
    }

    @Test("unknown options, bad values and a missing --data-dir are usage errors (status 2)")
    func usageErrors() async throws {
        let executable = try SwitchboardExecutable.locate().path
        for (arguments, expected) in [(["serve", "socketio"], "--data-dir"),
                                      (["serve", "socketio", "--data-dir", "/tmp/x", "--jwt-secret", "s"], "--jwt-secret"),
                                      (["serve", "socketio", "--data-dir", "/tmp/x", "--port", "70000"], "--port"),
                                      (["serve", "socketio", "--data-dir", "/tmp/x", "--page-size", "0"], "--page-size"),
                                      (["serve", "socketio", "--data-dir", "/tmp/x", "--edit-window", "-1"], "--edit-window"),
                                      (["serve", "socketio", "--data-dir", "/tmp/x", "--delete-window", "soon"], "--delete-window")] {
            let result = try await ChildProcess.runDetached(executable, arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
        }
        let help = try await ChildProcess.runDetached(executable, ["--help"])
        #expect(help.stdout.contains("serve socketio"))
    }
}
