import Foundation
import SwitchboardConformance
import Testing
import XMTPConformance

/// The whole conformance kit against an in-process XMTP-like node, through the XMTP adapter.
@Suite("XMTP adapter conformance", .serialized)
struct XMTPConformanceTests {
    @Test("every standard scenario passes against the node; typing is skipped (XMTP has none)")
    func fullKit() async throws {
        let node = try await TestNode.start()
        let report = await ConformanceKit().run(XMTPHarness(baseURL: node.baseURL))
        await node.stop()
        #expect(report.scenarios.count == StandardScenarios.all.count)
        for result in report.scenarios {
            switch result.name {
            case "typing-ephemeral":
                #expect(result.status == .skipped, "typing: \(result.status) — \(result.detail)")
            default:
                if result.status != .passed { Issue.record("\(result.name): \(result.status.rawValue) — \(result.detail)") }
            }
        }
    }
}
