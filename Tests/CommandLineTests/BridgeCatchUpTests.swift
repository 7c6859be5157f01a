import Foundation
import Testing
import TestSupport

/// `switchboard bridge --catch-up-only` ends on its own: it says nothing about signals it never received.
@Suite("switchboard bridge --catch-up-only: its own end")
struct BridgeCatchUpTests {
    @Test("a catch-up-only run that ends by itself prints no 'signal 0' line (it used to, after every run)")
    func noSpuriousSignalLine() async throws {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-catch-up-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try await withCleanup {
            // Nothing listens on port 9: the pair fails (exit 1) after its attempts, which is all the run needs.
            let side = #"{"adapter":"socketio","url":"http://127.0.0.1:9","user":"bridge","token":"t","conversation":"#
            let config = #"{"store":{"sqlite":"bridge.sqlite"},"leaseSeconds":1,"pairs":[{"name":"p","a":\#(side)"a"},"b":\#(side)"b","backend":"other"}}]}"#
            let path = folder.appendingPathComponent("bridge.json")
            try Data(config.utf8).write(to: path)
            let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path,
                                                            ["bridge", "--config", path.path, "--catch-up-only"],
                                                            timeout: .seconds(120))
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("pair p: failed:"), "\(result.stderr)")
            #expect(!result.stderr.contains("signal"), "\(result.stderr)")
        } cleanup: {
            try? FileManager.default.removeItem(at: folder)
        }
    }
}
