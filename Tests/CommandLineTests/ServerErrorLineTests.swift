import Foundation
import Testing
import TestSupport

/// A server's error answer, as the command reports it: on the one line of the error, whatever the body looks like.
@Suite("switchboard: server errors on one line")
struct ServerErrorLineTests {
    @Test("migrate from a URL whose server answers 404 'not found\\n' reports it on one line (the newline split it)")
    func trailingNewline() async throws {
        // The XMTP-like node answers an unknown path (the Socket-style API's) with the plain text "not found\n".
        try await ServeChild.with(["xmtp"]) { node in
            let side = #"{"adapter":"socketio","url":"\#(node.url.absoluteString)","user":"u","token":"t","conversation":"#
            let result = try await ChildProcess.runDetached(
                try SwitchboardExecutable.locate().path,
                ["migrate", "--from", side + #""room"}"#, "--to", side + #""room2","backend":"other"}"#,
                 "--store", node.root.appendingPathComponent("migrate.sqlite").path, "--no-estimate"],
                timeout: .seconds(60))
            #expect(result.status == 1, "\(result.stderr)")
            let lines = result.stderr.split(separator: "\n").filter { $0.hasPrefix("switchboard migrate:") }
            #expect(lines.contains { $0.contains("HTTP 404: not found; nothing was copied") }, "\(result.stderr)")
            #expect(!result.stderr.contains("\n;"), "\(result.stderr)")
        }
    }
}
