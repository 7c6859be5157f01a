import Foundation
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults
import SwitchboardNet
import XMTPAdapter
import XMTPCrypto

/// Runs the conformance kit against a running XMTP-like node: per fixture it registers two fresh inboxes,
/// creates a group with a random 16-byte ID and a random 32-byte secret (handed to the adapters out of band),
/// and gives each member's adapters one local database in a temporary folder (removed in `tearDown`), so a
/// restarted client finds its libxmtp-style database again. Its adapters are wrapped in fault-injecting decorators
/// sharing one `InjectedFaults`.
public struct XMTPHarness: ConformanceHarness {
    /// The node's base URL.
    public let baseURL: URL
    private let http: HTTPClient

    /// A harness for the node at `baseURL`.
    public init(baseURL: URL, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.http = http
    }

    /// `xmtp`.
    public var adapterName: String { "xmtp" }

    /// A fresh group of two fresh inboxes.
    public func makeFixture() async throws -> ConformanceFixture {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
        let aliceToken = try await register(alice)
        let bobToken = try await register(bob)
        let groupID = try SecureRandom.bytes(16)
        let secret = try SecureRandom.bytes(32)
        try await createGroup(groupID, members: [bob], token: aliceToken)
        let conversation = ConversationID(Digest.hex(groupID))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-conformance-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let faults = InjectedFaults()
        let adapters = AdapterReleases()
        let tokens = [alice: aliceToken, bob: bobToken]
        let baseURL = self.baseURL, http = self.http
        return ConformanceFixture(
            conversation: conversation, alice: alice, bob: bob,
            makeAdapter: { user in
                guard let token = tokens[user] else {
                    throw SwitchboardError(.unauthorized, "\(user) is not a member of this fixture")
                }
                let configuration = XMTPAdapter.Configuration(
                    baseURL: baseURL, inboxID: user, token: token,
                    databasePath: directory.appendingPathComponent("\(user.rawValue).sqlite").path,
                    groupSecret: { id in
                        guard id == conversation else { throw SwitchboardError(.unknownConversation, "unknown group \(id)") }
                        return secret
                    })
                return FaultInjectingAdapter(wrapping: adapters.track(try XMTPAdapter(configuration: configuration, http: http)),
                                             faults: faults)
            },
            faults: faults, clock: ManualClock(),
            tearDown: {
                await adapters.waitUntilReleased()
                await Self.remove(directory)
            })
    }

    /// Removes a fixture's folder, trying again for up to a second: a weak reference reads nil as soon as the
    /// adapter's deinitialization begins, so its database may still be closing (deleting its WAL) on another thread.
    static func remove(_ directory: URL) async {
        for _ in 0..<20 {
            try? FileManager.default.removeItem(at: directory)
            guard FileManager.default.fileExists(atPath: directory.path) else { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Registers an inbox; returns its bearer token.
    public func register(_ inbox: UserID) async throws -> String {
        try await XMTPNodeAccounts(baseURL: baseURL, http: http).register(inbox)
    }

    /// Creates a group whose creator is the token's inbox, with `members` added.
    public func createGroup(_ groupID: [UInt8], members: [UserID], token: String) async throws {
        try await XMTPNodeAccounts(baseURL: baseURL, http: http).createGroup(groupID, members: members, token: token)
    }
}

/// The adapters of one fixture, held weakly. A stopped client's adapter lives on until its live stream's loop has
/// ended, and its local database closes (checkpointing and deleting its WAL file) when the adapter goes; removing
/// the fixture's folder before then races that close (the removal fails half way when the WAL vanishes under it).
final class AdapterReleases: Sendable {
    private struct Entry: Sendable { weak var adapter: XMTPAdapter? }
    private let entries = Locked<[Entry]>([])

    /// Remembers `adapter` and returns it.
    func track(_ adapter: XMTPAdapter) -> XMTPAdapter {
        entries.withLock { $0.append(Entry(adapter: adapter)) }
        return adapter
    }

    /// Waits until every tracked adapter is gone (its database closed), at most `timeout`; false if some is still
    /// held then.
    @discardableResult
    func waitUntilReleased(timeout: Duration = .seconds(5)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while entries.withLock({ entries in entries.contains { $0.adapter != nil } }) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}
