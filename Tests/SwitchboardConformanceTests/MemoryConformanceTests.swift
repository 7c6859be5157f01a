import Foundation
import MemoryConformance
import SwitchboardConformance
import SwitchboardCore
import Testing

/// The whole kit against the memory backend, under each ID scheme and both reaction policies.
@Suite("Conformance: memory backend")
struct MemoryConformanceTests {
    static let harnesses: [MemoryHarness] = [
        MemoryHarness(scheme: .clientAssigned),
        MemoryHarness(scheme: .contentDerived),
        MemoryHarness(scheme: .serverAssigned),
        MemoryHarness(scheme: .serverAssigned, echoOnly: true),
        MemoryHarness(scheme: .clientAssigned, reactionPolicy: .onePerUser),
    ]

    @Test("every scenario passes", arguments: harnesses)
    func kitPasses(_ harness: MemoryHarness) async {
        let report = await ConformanceKit().run(harness)
        let failures = report.scenarios.filter { $0.status != .passed }.map { "\($0.name): \($0.status) — \($0.detail)" }
        #expect(failures.isEmpty, "\(harness.adapterName): \(failures.joined(separator: "\n"))")
        #expect(report.scenarios.count >= 20)
    }

    @Test("reports are well formed: table, JSON shape, JUnit counts")
    func reportFormats() async throws {
        let kit = ConformanceKit(only: ["echo-dedupe", "bad-input"])
        let report = await kit.run(MemoryHarness(scheme: .contentDerived))
        #expect(report.scenarios.map(\.name) == ["echo-dedupe", "bad-input"])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        #expect(json["adapter"] as? String == "memory(content)")
        let rows = try #require(json["scenarios"] as? [[String: Any]])
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { ["passed", "failed", "skipped", "notRun"].contains($0["status"] as? String ?? "") && $0["detail"] is String })
        #expect(report.junitXML().contains("tests=\"2\" failures=\"0\" skipped=\"0\""))
        #expect(report.table().hasSuffix("2 passed, 0 failed, 0 skipped, 0 not run"))
    }

    @Test("a harness without fault injection reports fault scenarios as not run, with the reason")
    func notRunWithoutFaults() async {
        let report = await ConformanceKit(only: ["retry-same-key", "echo-dedupe"]).run(NoFaultsHarness())
        let notRun = report.scenarios.first { $0.name == "retry-same-key" }
        #expect(notRun?.status == .notRun)
        #expect(notRun?.detail == "the harness cannot inject faults")
        #expect(report.scenarios.first { $0.name == "echo-dedupe" }?.status == .passed)
        #expect(report.counts.notRun == 1 && report.counts.skipped == 0)
    }

    @Test("refused credentials stop the run at the first fixture and are reported once, not once per scenario")
    func refusedCredentialsStop() async throws {
        let kit = ConformanceKit()
        let progress = ProgressCount()
        let report = await kit.run(RefusingHarness()) { _ in progress.add() }
        #expect(progress.count == 0, "no scenario ran, so none reported progress")
        #expect(report.scenarios.isEmpty)
        let stopped = try #require(report.stopped)
        #expect(stopped.notRun == kit.scenarios.count)
        #expect(stopped.reason.hasPrefix("authentication failed while making the fixture of \(kit.scenarios[0].name): unauthorized:"))
        #expect(!report.isSuccess)
        let table = report.table()
        #expect(table.components(separatedBy: "wrong secret").count == 2, "the reason appears once: \(table)")
        #expect(table.contains("stopped: ") && table.contains("\(kit.scenarios.count) scenarios not run"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let stop = try #require(json["stopped"] as? [String: Any])
        #expect(stop["notRun"] as? Int == kit.scenarios.count)
        #expect(report.junitXML().contains("tests=\"1\" failures=\"1\""))
        // A run that was not stopped has no "stopped" member at all.
        let clean = await ConformanceKit(only: ["echo-dedupe"]).run(MemoryHarness(scheme: .clientAssigned))
        #expect(!clean.json().contains("stopped"))
    }

    @Test("a broken adapter fails the kit")
    func brokenAdapterFails() async {
        let report = await ConformanceKit(only: ["delivered-once-to-peer"], timeout: .seconds(3)).run(SilentHarness())
        #expect(report.scenarios.first?.status == .failed)
        #expect(!report.isSuccess)
    }
}

/// The memory harness with its fault controls hidden.
struct NoFaultsHarness: ConformanceHarness {
    var adapterName: String { "memory(no faults)" }
    func makeFixture() async throws -> ConformanceFixture {
        var fixture = try await MemoryHarness(scheme: .clientAssigned).makeFixture()
        fixture.faults = nil
        return fixture
    }
}

/// A harness whose backend refuses its credentials, as a server does with a wrong JWT secret.
struct RefusingHarness: ConformanceHarness {
    var adapterName: String { "refusing" }
    func makeFixture() async throws -> ConformanceFixture {
        throw SwitchboardError(.unauthorized, "HTTP 401: wrong secret")
    }
}

/// Counts progress calls from the kit.
final class ProgressCount: Sendable {
    private let calls = Locked(0)
    /// One more call.
    func add() { calls.withLock { $0 += 1 } }
    /// The calls so far.
    var count: Int { calls.withLock { $0 } }
}

/// A harness whose adapters never deliver live events or history: the kit must notice.
struct SilentHarness: ConformanceHarness {
    var adapterName: String { "silent" }
    func makeFixture() async throws -> ConformanceFixture {
        var fixture = try await MemoryHarness(scheme: .clientAssigned).makeFixture()
        let make = fixture.makeAdapter
        fixture.makeAdapter = { user in SilentAdapter(wrapping: try await make(user)) }
        return fixture
    }
}

/// Publishes through the wrapped adapter but reports nothing back.
final class SilentAdapter: ChatAdapter {
    let inner: any ChatAdapter
    init(wrapping inner: any ChatAdapter) { self.inner = inner }
    var backend: BackendID { inner.backend }
    var localUser: UserID { inner.localUser }
    var capabilities: AdapterCapabilities { inner.capabilities }
    func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage { try await inner.prepare(message, noSend: noSend) }
    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt { try await inner.publish(prepared) }
    func latestCursor(in conversation: ConversationID) async throws -> Cursor? { nil }
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        HistoryPage(messages: [], olderCursor: nil)
    }
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        ChangeBatch(changes: [], cursor: cursor, hasMore: false)
    }
    func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> { AsyncStream { $0.yield(.connection(.connected)) } }
}
