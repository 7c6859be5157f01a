import Foundation
import SupabaseConformance
import SwitchboardConformance
import Testing

/// The whole conformance kit against the Supabase-like server, through the Supabase adapter.
@Suite("Supabase adapter conformance", .serialized)
struct SupabaseConformanceTests {
    @Test("every standard scenario passes against the Supabase-like server; none is skipped")
    func fullKit() async throws {
        let report = try await AdapterTestServer.run { server in
            await ConformanceKit().run(SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret))
        }
        for result in report.scenarios where result.status != .passed {
            Issue.record("\(result.name): \(result.status.rawValue) — \(result.detail)")
        }
        #expect(report.scenarios.count == StandardScenarios.all.count)
        #expect(report.isSuccess)
    }
}
