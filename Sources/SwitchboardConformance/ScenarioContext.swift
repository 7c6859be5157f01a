import Foundation
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// A scenario's failed expectation, stated as a user would notice it.
public struct ScenarioFailure: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public let description: String
}

/// A scenario skipped because a capability is absent.
public struct ScenarioSkip: Error, Sendable {
    /// Why.
    public let reason: String
}

/// A scenario not run because the harness cannot inject a fault it needs: what it proves was not checked.
public struct ScenarioNotRun: Error, Sendable, CustomStringConvertible {
    /// Why.
    public let reason: String

    /// The reason.
    public var description: String { reason }

    /// The reason for a harness without any fault controls.
    static let noFaults = ScenarioNotRun(reason: "the harness cannot inject faults")

    /// The reason for a fault kind the harness cannot inject, and why.
    static func cannotInject(_ kind: FaultKind, because reason: String) -> ScenarioNotRun {
        ScenarioNotRun(reason: "the harness cannot inject \(kind.rawValue) faults: \(reason)")
    }
}

/// The fault controls as a scenario uses them: each fault's kind is checked first, and one the harness cannot
/// inject ends the scenario as not run, so a fault silently not injected can never make it pass.
public struct ScenarioFaults: Sendable {
    /// The harness's controls.
    public let injector: any FaultInjector

    /// Sets `fault`, or ends the scenario as not run when the harness cannot inject its kind.
    public func inject(_ fault: Fault) async throws {
        if let reason = injector.unsupportedFaults[fault.kind] { throw ScenarioNotRun.cannotInject(fault.kind, because: reason) }
        await injector.inject(fault)
    }

    /// Removes every fault.
    public func reset() async { await injector.reset() }
}

/// What a scenario works with: the fixture, engine clients over fresh stores, and assertion helpers.
public final class ScenarioContext: Sendable {
    /// The environment.
    public let fixture: ConformanceFixture
    /// A private folder for stores and files, removed afterwards.
    public let directory: URL
    /// Every client `client(_:storeName:)` started, stopped by `finish()`.
    private let clients = Locked<[ChatClient]>([])

    init(fixture: ConformanceFixture) throws {
        self.fixture = fixture
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    /// The engine settings scenarios use: quick retries, the fixture's clock.
    public func configuration(for user: UserID) -> EngineConfiguration {
        let clock = fixture.clock
        return EngineConfiguration(retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.05, maxAttempts: 4, jitter: 0.1),
                                   pageSize: 25, typingDebounce: 0.05, typingIdleTimeout: 0.2, remoteTypingTimeout: 0.5,
                                   stagingDirectory: directory.appendingPathComponent("staging-\(user)"),
                                   clock: { clock.now() })
    }

    /// A started client for `user` over the store file `storeName` (fresh unless reused for a restart).
    public func client(_ user: UserID, storeName: String? = nil) async throws -> ChatClient {
        let path = directory.appendingPathComponent("\(storeName ?? "\(user)-\(UUID().uuidString)").sqlite").path
        let store = try SQLiteStore(path: path)
        let client = ChatClient(adapter: try await fixture.makeAdapter(user), store: store,
                                configuration: configuration(for: user))
        try await client.start()
        clients.withLock { $0.append(client) }
        return client
    }

    /// Stops every client and removes the folder.
    func finish() async {
        for client in clients.withLock({ $0 }) { await client.stop() }
        try? FileManager.default.removeItem(at: directory)
    }

    /// The fault controls; the scenario ends as not run when the harness has none.
    public func faults() throws -> ScenarioFaults {
        guard let faults = fixture.faults else { throw ScenarioNotRun.noFaults }
        return ScenarioFaults(injector: faults)
    }

    /// Fails the scenario with `message` unless `condition` holds.
    public func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw ScenarioFailure(description: message()) }
    }

    /// Polls `condition` until it holds or `timeout` passes; fails with `message` then.
    public func eventually(_ message: @autoclosure () -> String, timeout: TimeInterval = 10,
                           _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        if try await condition() { return }
        throw ScenarioFailure(description: "timed out: " + message())
    }

    /// Expects `body` to throw a `SwitchboardError` with `code`.
    public func expectError(_ code: SwitchboardError.Code, _ what: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let error as SwitchboardError {
            try expect(error.code == code, "\(what): expected \(code), got \(error.code) (\(error.message))")
            return
        }
        throw ScenarioFailure(description: "\(what): expected error \(code), but it succeeded")
    }
}

