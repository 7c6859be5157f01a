import Foundation
import MemoryAdapter
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults
import Testing

/// The rate-limit fault: publishes refused as a 429 would refuse them, with the delay the server asked for.
@Suite("Rate-limit fault")
struct RateLimitFaultTests {
    @Test("rate-limited publishes throw a retryable transport error with Retry-After and store nothing; then pass")
    func rateLimitedPublishes() async throws {
        let setup = try FaultInjectingAdapterTests.Setup()
        await setup.faults.inject(.rateLimitPublishes(count: 2, retryAfter: .milliseconds(1500)))
        let prepared = try await setup.prepared("wait for it", by: setup.alice)
        for attempt in 1...2 {
            let error = await #expect(throws: SwitchboardError.self, "attempt \(attempt)") {
                _ = try await setup.alice.publish(prepared)
            }
            #expect(error?.code == .transport && error?.isRetryable == true)
            #expect(error?.retryAfter == .milliseconds(1500))
            #expect(error?.message.contains("429") == true)
        }
        #expect(setup.storedTexts.isEmpty)
        _ = try await setup.alice.publish(prepared)
        #expect(setup.storedTexts == ["wait for it"])
        #expect(Fault.rateLimitPublishes(count: 1, retryAfter: .zero).kind == .rateLimit)
    }
}
