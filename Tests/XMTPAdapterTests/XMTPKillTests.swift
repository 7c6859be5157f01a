import Foundation
import SwitchboardCore
import SwitchboardSQLite
import Testing
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The crash test with a real process: `switchboard xmtp send --hold` prepares (row + intent in its
/// local database) and is SIGKILLed before publishing; a new process publishes it, twice.
@Suite("XMTP adapter killed between prepare and publish", .serialized)
struct XMTPKillTests {
    @Test("kill after prepare, restart, publish twice: one message on the network, one row locally")
    func killBetweenPrepareAndPublish() async throws {
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        defer { group.cleanUp() }
        let executable = try SwitchboardExecutable.locate().path
        let database = group.databasePath("child-alice")
        let common = ["xmtp", "send", "--url", node.baseURL.absoluteString, "--inbox", group.alice.rawValue,
                      "--token", group.tokens[group.alice] ?? "", "--group", group.conversation.rawValue,
                      "--secret", Digest.hex(group.secret), "--database", database]

        let child = Process()
        child.executableURL = URL(fileURLWithPath: executable)
        child.arguments = common + ["--text", "survives a kill", "--hold"]
        let pipe = Pipe()
        child.standardOutput = pipe
        child.standardError = FileHandle.nullDevice
        try child.run()
        let lines = OutputLines(pipe.fileHandleForReading)
        let line = try await lines.firstLine(timeout: .seconds(30))
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        let prepared = try #require(line.split(separator: " ").dropFirst().first.map(String.init), "got \(line)")
        #expect(try await group.envelopeCount() == 0, "prepare must not touch the network")

        for _ in 0..<2 {
            let result = try await ChildProcess.runDetached(executable, common + ["--prepared", prepared], timeout: .seconds(60))
            #expect(result.status == 0, "publish failed: \(result.stderr)")
            #expect(result.stdout.hasPrefix("published "))
        }
        #expect(try await group.envelopeCount() == 1, "one envelope on the node")
        let connection = try SQLiteConnection(path: database)
        let rows = try connection.query("SELECT count(*), max(delivery_status) FROM group_messages WHERE content_type = 'text'") {
            ($0.int(at: 0), $0.int(at: 1))
        }
        connection.close()
        #expect(rows.first?.0 == 1, "one local row")
        #expect(rows.first?.1 == 2, "the row is Published")
        await node.stop()
    }
}
