import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
import SwitchboardFaults
import SwitchboardStore
import Testing
import TestSupport

/// Two engine clients exchange 1,000 messages over the Supabase-like server while their realtime sockets are
/// cut 100 times (the harness's fault decorators end the live stream, closing its socket, and join again on a new
/// one): each side must end with every message exactly once, in the server's order.
@Suite("Supabase adapter under realtime cuts", .serialized)
struct RealtimeCutsTests {
    @Test("100 socket cuts while two clients exchange 1,000 messages: each side has every message once, in order")
    func hundredCutsThousandMessages() async throws {
        try await AdapterTestServer.run { server in try await exchange(on: server) }
    }

    private func exchange(on server: AdapterTestServer) async throws {
        let harness = SupabaseHarness(baseURL: server.baseURL, jwtSecret: AdapterTestServer.jwtSecret)
        let fixture = try await harness.makeFixture()
        let faults = try #require(fixture.faults as? InjectedFaults)
        let conversation = fixture.conversation

        let alice = try await fixture.openedClient(fixture.alice, under: server.root, syncBatchSize: 200)
        let bob = try await fixture.openedClient(fixture.bob, under: server.root, syncBatchSize: 200)

        let perSide = 500, cutsPerSide = 100
        // Cut both sockets every 60 ms until each has been cut at least 100 times (a drop that finds a socket
        // still reconnecting does not count).
        let cutter = Task {
            var rounds = 0
            while faults.liveStreamCuts < 2 * cutsPerSide, rounds < 3000 {
                try await Task.sleep(for: .milliseconds(60))
                faults.dropLiveStreams()
                rounds += 1
            }
        }
        async let aliceSent = Self.send(alice, count: perSide, label: "alice", in: conversation)
        async let bobSent = Self.send(bob, count: perSide, label: "bob", in: conversation)
        let sent = try await aliceSent + bobSent
        let cutsWhileSending = faults.liveStreamCuts
        try await cutter.value
        #expect(sent.count == 2 * perSide)
        #expect(faults.liveStreamCuts >= 2 * cutsPerSide, "only \(faults.liveStreamCuts) socket cuts happened")
        #expect(cutsWhileSending >= cutsPerSide, "only \(cutsWhileSending) cuts happened while messages were being sent")

        let expected = 2 * perSide
        for (name, side) in [("alice", alice), ("bob", bob)] {
            let deadline = TestTime.deadline(after: .seconds(120))
            while try await side.store.read({ try $0.messageCount(in: conversation) }) < expected, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let count = try await side.store.read { try $0.messageCount(in: conversation) }
            #expect(count == expected, "\(name) holds \(count) messages, expected \(expected)")
        }

        // The server's order, read back through a fresh adapter's history.
        let reader = try await fixture.makeAdapter(fixture.alice)
        var serverOrder: [String] = []
        var cursor: Cursor?
        repeat {
            let page = try await reader.history(in: conversation, before: cursor, limit: 200)
            serverOrder = page.messages.map(\.remoteID.rawValue) + serverOrder
            cursor = page.olderCursor
        } while cursor != nil
        #expect(serverOrder.count == expected, "the server holds \(serverOrder.count) messages")
        #expect(Set(serverOrder) == Set(sent.map(\.rawValue)), "the server's messages differ from those sent")

        for (name, side) in [("alice", alice), ("bob", bob)] {
            let stored = try await side.store.read { try $0.messages(in: conversation, before: nil, limit: expected * 2) }
            let ids = stored.reversed().map(\.id.rawValue)
            #expect(ids.count == Set(ids).count, "\(name) holds a message twice")
            #expect(ids == serverOrder, "\(name)'s timeline is not in the server's order")
            #expect(stored.allSatisfy { $0.isOutgoing == false || $0.delivery.isPublished }, "\(name) has unsent messages")
        }
        await alice.stop()
        await bob.stop()
        await fixture.tearDown()
    }

    private static func send(_ client: ChatClient, count: Int, label: String, in conversation: ConversationID) async throws -> [MessageID] {
        var ids: [MessageID] = []
        for index in 0..<count {
            ids.append(try await client.send("\(label) \(index)", in: conversation).id)
            try await Task.sleep(for: .milliseconds(20))
        }
        let deadline = TestTime.deadline(after: .seconds(120))
        for id in ids {
            while try await client.message(id)?.delivery.isPublished != true, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return ids
    }
}

/// A Supabase-like server on a private cluster in a fresh directory under `/tmp`.
struct AdapterTestServer: Sendable {
    /// The secret the tests sign member tokens with.
    static let jwtSecret = "switchboard-adapter-test-secret-0123456789"

    let server: SupabaseServer
    let root: URL
    let baseURL: URL

    /// Starts the server (its configuration adjusted by `configure`); fails (never skips) when that is impossible.
    static func start(_ configure: (inout SupabaseServerConfiguration) -> Void = { _ in }) async throws -> AdapterTestServer {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-adapter-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var configuration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("server"), jwtSecret: jwtSecret)
        configure(&configuration)
        let server = SupabaseServer(configuration: configuration)
        let port = try await server.start()
        return AdapterTestServer(server: server, root: root, baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// Stops the server and removes the directory.
    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Starts a server, runs `body` with it, then stops it and removes its directory, whether `body` throws or not
    /// (a `defer` can only start the stop in a task the process may not wait for: its directory stayed behind).
    static func run<T>(_ configure: (inout SupabaseServerConfiguration) -> Void = { _ in },
                       _ body: (AdapterTestServer) async throws -> T) async throws -> T {
        let server = try await start(configure)
        do {
            let result = try await body(server)
            await server.stop()
            return result
        } catch {
            await server.stop()
            throw error
        }
    }
}
