import Foundation
import SocketIOConformance
import SwitchboardConformance
import Testing

/// The whole conformance kit against the in-process Socket-style server, through the Socket.IO adapter.
@Suite("Socket.IO adapter conformance", .serialized)
struct SocketIOConformanceTests {
    @Test("every standard scenario passes against the Socket-style server (server-assigned IDs); none is skipped")
    func fullKit() async throws {
        try await SocketIOTestServer.with { server in
            let report = await ConformanceKit().run(SocketIOHarness(baseURL: server.baseURL)) { result in
                if result.status != .passed { print("conformance \(result.name): \(result.status.rawValue) — \(result.detail)") }
            }
            for result in report.scenarios where result.status != .passed {
                Issue.record("\(result.name): \(result.status.rawValue) — \(result.detail)")
            }
            print(report.table())
            #expect(report.scenarios.count == StandardScenarios.all.count)
            #expect(report.counts.skipped == 0)
            #expect(report.isSuccess)
        }
    }
}
