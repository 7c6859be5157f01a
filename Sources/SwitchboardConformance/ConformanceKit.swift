import Foundation
import SwitchboardCore

/// A capability a scenario needs; without it the scenario is skipped with a reason.
public enum ScenarioRequirement: String, Sendable, Hashable {
    /// `EditingAdapter`.
    case editing
    /// `DeletingAdapter`.
    case deleting
    /// `ReactingAdapter`.
    case reacting
    /// `ReceiptAdapter`.
    case receipts
    /// `TypingAdapter`.
    case typing
    /// `UploadingAdapter`.
    case uploading
    /// `MessageCountingAdapter`.
    case counting
}

/// One named behaviour every adapter must show, asserting what a user would notice.
public struct Scenario: Sendable {
    /// Stable name, e.g. `echo-dedupe`.
    public let name: String
    /// One line on what it proves.
    public let summary: String
    /// Capabilities it needs.
    public let requirements: Set<ScenarioRequirement>
    /// The faults it injects; a harness that cannot inject one has it reported as not run.
    public let faults: Set<FaultKind>
    /// The scenario body.
    public let run: @Sendable (ScenarioContext) async throws -> Void

    /// Declares a scenario.
    public init(_ name: String, _ summary: String, requires requirements: Set<ScenarioRequirement> = [],
                injects faults: Set<FaultKind> = [], run: @escaping @Sendable (ScenarioContext) async throws -> Void) {
        self.name = name
        self.summary = summary
        self.requirements = requirements
        self.faults = faults
        self.run = run
    }
}

/// How one scenario ended.
public enum ScenarioStatus: String, Sendable, Codable {
    /// Every expectation held.
    case passed
    /// An expectation failed or an error escaped.
    case failed
    /// A needed capability is absent: the backend does not offer what it proves.
    case skipped
    /// The harness cannot inject a fault it needs: what it proves was not checked.
    case notRun

    /// How the table shows it.
    public var label: String { self == .notRun ? "not run" : rawValue }
}

/// One scenario's outcome.
public struct ScenarioResult: Sendable, Codable {
    /// Scenario name.
    public let name: String
    /// Outcome.
    public let status: ScenarioStatus
    /// Failure, skip or not-run reason; the summary when passed.
    public let detail: String
    /// Wall time in seconds.
    public let seconds: Double
}

/// Why a run ended before its last scenario.
public struct ConformanceStop: Sendable, Codable, Hashable {
    /// What stopped it, e.g. "authentication failed while making the fixture of send-basic: unauthorized: HTTP 401 …".
    public let reason: String
    /// How many scenarios were not run.
    public let notRun: Int
}

/// The outcome of a run: one result per scenario run.
public struct ConformanceReport: Sendable, Codable {
    /// The adapter's name.
    public let adapter: String
    /// Results in run order.
    public let scenarios: [ScenarioResult]
    /// Set when the run stopped early (the harness's credentials were refused); the scenarios left are not listed.
    public var stopped: ConformanceStop?

    /// A report of `scenarios` run against `adapter`, stopped early when `stopped` says so.
    public init(adapter: String, scenarios: [ScenarioResult], stopped: ConformanceStop? = nil) {
        self.adapter = adapter
        self.scenarios = scenarios
        self.stopped = stopped
    }

    /// Whether the run went to its end and no scenario failed (skipped and not-run scenarios are listed, not failures).
    public var isSuccess: Bool { stopped == nil && !scenarios.contains { $0.status == .failed } }

    /// Counts of passed, failed, skipped and not run.
    public var counts: (passed: Int, failed: Int, skipped: Int, notRun: Int) {
        func count(_ status: ScenarioStatus) -> Int { scenarios.filter { $0.status == status }.count }
        return (count(.passed), count(.failed), count(.skipped), count(.notRun))
    }

    /// A readable table.
    public func table() -> String {
        let width = max(10, scenarios.map(\.name.count).max() ?? 10)
        var lines = ["adapter: \(adapter)", "\("scenario".padding(toLength: width, withPad: " ", startingAt: 0))  status   time    detail"]
        for result in scenarios {
            let name = result.name.padding(toLength: width, withPad: " ", startingAt: 0)
            let status = result.status.label.padding(toLength: 7, withPad: " ", startingAt: 0)
            lines.append("\(name)  \(status)  \(String(format: "%5.2fs", result.seconds))  \(result.detail)")
        }
        if let stopped {
            lines.append("stopped: \(stopped.reason); \(stopped.notRun) scenario\(stopped.notRun == 1 ? "" : "s") not run")
        }
        let c = counts
        lines.append("\(c.passed) passed, \(c.failed) failed, \(c.skipped) skipped, \(c.notRun) not run")
        return lines.joined(separator: "\n")
    }

    /// `{"adapter":..,"scenarios":[{"name":..,"status":..,"detail":..}]}`, with `"stopped":{"reason":..,"notRun":..}`
    /// when the run stopped early.
    public func json() -> String {
        struct Row: Encodable { let name: String; let status: String; let detail: String; let seconds: Double }
        struct Body: Encodable { let adapter: String; let scenarios: [Row]; let stopped: ConformanceStop? }
        let body = Body(adapter: adapter, scenarios: scenarios.map {
            Row(name: $0.name, status: $0.status.rawValue, detail: $0.detail, seconds: ($0.seconds * 1000).rounded() / 1000)
        }, stopped: stopped)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(body)) ?? Data(), as: UTF8.self)
    }

    /// JUnit XML for CI systems; a scenario not run is a skipped test case whose message says so.
    public func junitXML() -> String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let c = counts
        let total = scenarios.reduce(0) { $0 + $1.seconds }
        let stop = stopped.map { "  <testcase classname=\"conformance.\(escape(adapter))\" name=\"(stopped)\" time=\"0.000\">\n"
            + "    <failure message=\"\(escape($0.reason))\"/>\n  </testcase>\n" } ?? ""
        let tests = scenarios.count + (stopped == nil ? 0 : 1), failures = c.failed + (stopped == nil ? 0 : 1)
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuite name=\"conformance.\(escape(adapter))\" tests=\"\(tests)\" failures=\"\(failures)\" skipped=\"\(c.skipped + c.notRun)\" time=\"\(String(format: "%.3f", total))\">\n"
        for result in scenarios {
            xml += "  <testcase classname=\"conformance.\(escape(adapter))\" name=\"\(escape(result.name))\" time=\"\(String(format: "%.3f", result.seconds))\""
            switch result.status {
            case .passed: xml += "/>\n"
            case .failed: xml += ">\n    <failure message=\"\(escape(result.detail))\"/>\n  </testcase>\n"
            case .skipped: xml += ">\n    <skipped message=\"\(escape(result.detail))\"/>\n  </testcase>\n"
            case .notRun: xml += ">\n    <skipped message=\"not run: \(escape(result.detail))\"/>\n  </testcase>\n"
            }
        }
        return xml + stop + "</testsuite>\n"
    }
}

/// Runs the scenario kit against a harness.
public struct ConformanceKit: Sendable {
    /// The scenarios to run.
    public let scenarios: [Scenario]
    /// Longest a scenario may take before it counts as failed.
    public var timeout: Duration

    /// A kit with every standard scenario, or those named in `only`.
    public init(only names: Set<String>? = nil, timeout: Duration = .seconds(60)) {
        let all = StandardScenarios.all
        self.init(scenarios: names.map { wanted in all.filter { wanted.contains($0.name) } } ?? all, timeout: timeout)
    }

    /// A kit with the given scenarios.
    public init(scenarios: [Scenario], timeout: Duration = .seconds(60)) {
        self.scenarios = scenarios
        self.timeout = timeout
    }

    /// Runs every scenario on a fresh fixture, calling `progress` after each. When the backend refuses the
    /// harness's own credentials (`unauthorized` while making a fixture) the run stops there: every scenario
    /// left would fail the same way, so the report says it once, in `stopped`.
    public func run(_ harness: any ConformanceHarness,
                    progress: @Sendable (ScenarioResult) -> Void = { _ in }) async -> ConformanceReport {
        var results: [ScenarioResult] = []
        for (index, scenario) in scenarios.enumerated() {
            switch await run(scenario, harness: harness) {
            case .finished(let result):
                progress(result)
                results.append(result)
            case .refused(let error):
                let stop = ConformanceStop(reason: "authentication failed while making the fixture of \(scenario.name): \(error)",
                                           notRun: scenarios.count - index)
                return ConformanceReport(adapter: harness.adapterName, scenarios: results, stopped: stop)
            }
        }
        return ConformanceReport(adapter: harness.adapterName, scenarios: results)
    }

    /// How running one scenario ended.
    private enum Outcome {
        /// It ran (or was skipped, or failed) and has a result.
        case finished(ScenarioResult)
        /// Its fixture could not be made because the backend refused the harness's credentials.
        case refused(SwitchboardError)
    }

    private func run(_ scenario: Scenario, harness: any ConformanceHarness) async -> Outcome {
        let started = Date()
        func result(_ status: ScenarioStatus, _ detail: String) -> ScenarioResult {
            ScenarioResult(name: scenario.name, status: status, detail: detail, seconds: Date().timeIntervalSince(started))
        }
        let fixture: ConformanceFixture
        do { fixture = try await harness.makeFixture() } catch {
            if let refusal = error as? SwitchboardError, refusal.code == .unauthorized { return .refused(refusal) }
            return .finished(result(.failed, "fixture could not be made: \(error)"))
        }
        let outcome = await run(scenario, on: fixture, result: result)
        await fixture.tearDown()
        return .finished(outcome)
    }

    private func run(_ scenario: Scenario, on fixture: ConformanceFixture,
                     result: (ScenarioStatus, String) -> ScenarioResult) async -> ScenarioResult {
        if let missing = await missingRequirement(scenario, fixture: fixture) {
            return result(.skipped, missing)
        }
        if let notRun = missingFault(scenario, fixture: fixture) {
            return result(.notRun, notRun.reason)
        }
        let context: ScenarioContext
        do { context = try ScenarioContext(fixture: fixture) } catch { return result(.failed, "\(error)") }
        let timeout = self.timeout
        // A scenario that hangs must not hang the kit: whichever finishes first answers, once.
        let outcome: Result<Void, any Error> = await withCheckedContinuation { continuation in
            let answer = OnceAnswer(continuation)
            let work = Task {
                do { try await scenario.run(context); answer.resume(.success(())) } catch { answer.resume(.failure(error)) }
            }
            Task {
                try? await Task.sleep(for: timeout)
                work.cancel()
                answer.resume(.failure(ScenarioFailure(description: "scenario exceeded \(timeout)")))
            }
        }
        await context.finish()
        await fixture.faults?.reset()
        switch outcome {
        case .success: return result(.passed, scenario.summary)
        case .failure(let error as ScenarioSkip): return result(.skipped, error.reason)
        case .failure(let error as ScenarioNotRun): return result(.notRun, error.reason)
        case .failure(let error): return result(.failed, String(describing: error))
        }
    }

    /// Why the harness cannot inject a fault `scenario` declares, if it cannot.
    private func missingFault(_ scenario: Scenario, fixture: ConformanceFixture) -> ScenarioNotRun? {
        guard !scenario.faults.isEmpty else { return nil }
        guard let injector = fixture.faults else { return .noFaults }
        let unsupported = injector.unsupportedFaults
        let kind = FaultKind.allCases.first { scenario.faults.contains($0) && unsupported[$0] != nil }
        return kind.map { ScenarioNotRun.cannotInject($0, because: unsupported[$0] ?? "") }
    }

    private func missingRequirement(_ scenario: Scenario, fixture: ConformanceFixture) async -> String? {
        guard let adapter = try? await fixture.makeAdapter(fixture.alice) else { return nil }
        let checks: [(ScenarioRequirement, Bool, String)] = [
            (.editing, adapter is any EditingAdapter, "edits"),
            (.deleting, adapter is any DeletingAdapter, "deletes"),
            (.reacting, adapter is any ReactingAdapter, "reactions"),
            (.receipts, adapter is any ReceiptAdapter, "receipts"),
            (.typing, adapter is any TypingAdapter, "typing indicators"),
            (.uploading, adapter is any UploadingAdapter, "attachments"),
            (.counting, adapter is any MessageCountingAdapter, "counting messages"),
        ]
        for (requirement, present, noun) in checks where scenario.requirements.contains(requirement) && !present {
            return "\(adapter.backend) does not support \(noun)"
        }
        return nil
    }
}

/// Resumes a continuation at most once, whoever calls first.
final class OnceAnswer: Sendable {
    private let continuation: Locked<CheckedContinuation<Result<Void, any Error>, Never>?>

    init(_ continuation: CheckedContinuation<Result<Void, any Error>, Never>) {
        self.continuation = Locked(continuation)
    }

    func resume(_ value: Result<Void, any Error>) {
        let pending = continuation.withLock { stored in
            defer { stored = nil }
            return stored
        }
        pending?.resume(returning: value)
    }
}
