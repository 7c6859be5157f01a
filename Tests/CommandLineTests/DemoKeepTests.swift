import Foundation
import TestSupport
import Testing

/// `switchboard demo --keep` as a user runs it: the bridged demo, its folder kept and its bridge config printed.
@Suite("switchboard demo --keep")
struct DemoKeepTests {
    @Test("the demo succeeds, keeps its temporary folder and prints the bridge config it ran with (secrets as env: names)")
    func keepsFolderAndPrintsConfig() async throws {
        let result = try await SwitchboardCommand.run(["demo", "--keep"], timeout: .seconds(300))
        let kept = result.stdout.split(separator: "\n").first { $0.hasPrefix("kept ") }
        let folder = kept.flatMap { $0.dropFirst("kept ".count).split(separator: " ").first }.map { URL(fileURLWithPath: String($0)) }
        defer { if let folder { try? FileManager.default.removeItem(at: folder) } }
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let root = try #require(folder, "no 'kept' line in: \(result.stdout)")
        let configFile = root.appendingPathComponent("bridge.json")
        #expect(FileManager.default.fileExists(atPath: configFile.path))
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("bridge.sqlite").path))
        #expect(result.stdout.contains("the bridge config it used, \(configFile.path):"))
        for field in [#""pairs" : ["#, #""token" : "env:DEMO_XMTP_TOKEN""#, #""accessToken" : "env:DEMO_SUPABASE_TOKEN""#] {
            #expect(result.stdout.contains(field), "\(field) is not in: \(result.stdout)")
        }
    }
}
