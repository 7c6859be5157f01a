import Foundation
import MemoryConformance
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults
import Testing

/// A fault the harness cannot inject never lets a scenario pass: the kit reports it as not run, with the reason,
/// counted apart from passed, failed and skipped, and shown so in every report format.
@Suite("Conformance: faults a harness cannot inject")
struct NotRunTests {
    @Test("a scenario whose declared fault the harness cannot inject is not run, with the harness's reason")
    func declaredFaultUnsupported() async throws {
        let report = await ConformanceKit(only: ["reconnect-storm", "retry-same-key"]).run(NoDropHarness())
        let storm = try #require(report.scenarios.first { $0.name == "reconnect-storm" })
        #expect(storm.status == .notRun)
        #expect(storm.detail == "the harness cannot inject drop-live faults: it needs the real socket cut")
        #expect(report.scenarios.first { $0.name == "retry-same-key" }?.status == .passed)
        #expect(report.counts.passed == 1 && report.counts.notRun == 1 && report.counts.skipped == 0 && report.counts.failed == 0)
        #expect(report.isSuccess, "not-run scenarios are listed, not failures")

        let table = report.table()
        #expect(table.contains("reconnect-storm  not run"), "\(table)")
        #expect(table.hasSuffix("1 passed, 0 failed, 0 skipped, 1 not run"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let rows = try #require(json["scenarios"] as? [[String: Any]])
        #expect(rows.first { $0["name"] as? String == "reconnect-storm" }?["status"] as? String == "notRun")
        let junit = report.junitXML()
        #expect(junit.contains("tests=\"2\" failures=\"0\" skipped=\"1\""))
        #expect(junit.contains("<skipped message=\"not run: the harness cannot inject drop-live faults: it needs the real socket cut\"/>"))
    }

    @Test("a scenario injecting a fault it did not declare is still not run, never passed, when the harness cannot inject it")
    func undeclaredFaultUnsupported() async throws {
        let sneaky = Scenario("sneaky-drop", "drops live streams without declaring it") { ctx in
            try await ctx.faults().inject(.dropLiveStreams)
        }
        let report = await ConformanceKit(scenarios: [sneaky]).run(NoDropHarness())
        let result = try #require(report.scenarios.first)
        #expect(result.status == .notRun)
        #expect(result.detail.contains("drop-live"))
        // The same scenario passes against a harness that can inject the fault.
        let full = await ConformanceKit(scenarios: [sneaky]).run(MemoryHarness(scheme: .clientAssigned))
        #expect(full.scenarios.first?.status == .passed)
    }

    @Test("capability skips come before faults: a backend without edits skips, it is not reported as not run")
    func capabilitySkipFirst() async throws {
        let report = await ConformanceKit(only: ["edit-refused-rollback"]).run(NoDropHarness(missing: .refuseEdit, editing: false))
        #expect(report.scenarios.first?.status == .skipped)
    }
}

/// The memory harness whose fault controls cannot inject one kind (a drop, unless told otherwise), as a harness
/// needing a real socket cut would; optionally its adapters cannot edit.
struct NoDropHarness: ConformanceHarness {
    let missing: FaultKind
    let editing: Bool

    init(missing: FaultKind = .dropLive, editing: Bool = true) {
        self.missing = missing
        self.editing = editing
    }

    var adapterName: String { "memory(no \(missing.rawValue))" }

    func makeFixture() async throws -> ConformanceFixture {
        var fixture = try await MemoryHarness(scheme: .clientAssigned).makeFixture()
        guard let faults = fixture.faults as? InjectedFaults else {
            throw SwitchboardError(.invalidArgument, "the memory harness's fixture has no InjectedFaults")
        }
        fixture.faults = LimitedInjector(faults: faults, missing: missing)
        if !editing {
            let make = fixture.makeAdapter
            fixture.makeAdapter = { user in SilentAdapter(wrapping: try await make(user)) }
        }
        return fixture
    }
}

/// Forwards to `InjectedFaults` except one kind, which it declares unsupported and does not inject.
struct LimitedInjector: FaultInjector {
    let faults: InjectedFaults
    let missing: FaultKind

    var unsupportedFaults: [FaultKind: String] { [missing: "it needs the real socket cut"] }
    func inject(_ fault: Fault) async { if fault.kind != missing { await faults.inject(fault) } }
    func reset() async { faults.reset() }
}
