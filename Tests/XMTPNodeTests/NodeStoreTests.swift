import Foundation
import SwitchboardNet
import Testing
@testable import XMTPNode

extension BackendSuites {
/// The same store tests against SQLite and PostgreSQL.
@Suite("XMTP node stores")
struct NodeStoreTests {
    /// Runs `body` with a fresh store of `backend`, closing it afterwards.
    private func withStore(_ backend: Backend, _ body: (any XMTPNodeStore) throws -> Void) throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try backend.makeStore(in: directory)
        defer { store.close() }
        try body(store)
    }

    @Test("Inboxes, tokens and group membership", arguments: Backend.allCases)
    func identityAndGroups(backend: Backend) throws {
        try withStore(backend) { store in
            #expect(try store.registerInbox("alice", tokenHash: "h1", nowNs: 1))
            #expect(try !store.registerInbox("alice", tokenHash: "h2", nowNs: 2))
            try store.addToken(inboxID: "alice", tokenHash: "h3", nowNs: 3)
            #expect(try store.inbox(forTokenHash: "h1") == "alice")
            #expect(try store.inbox(forTokenHash: "h2") == nil)
            #expect(try store.inbox(forTokenHash: "h3") == "alice")
            #expect(try store.inboxExists("alice"))
            #expect(try !store.inboxExists("bob"))
            let group = randomGroupID()
            #expect(try store.members(of: group) == nil)
            #expect(try store.createGroup(group, creator: "alice", members: ["alice", "bob"], nowNs: 1))
            #expect(try !store.createGroup(group, creator: "carol", members: ["carol"], nowNs: 1))
            try store.addMembers(["carol", "bob"], to: group)
            #expect(try store.members(of: group) == ["alice", "bob", "carol"])
            try store.removeMembers(["bob", "zed"], from: group)
            #expect(try store.members(of: group) == ["alice", "carol"])
        }
    }

    @Test("Appends get increasing ids in order; pages match the paging rules both ways", arguments: Backend.allCases)
    func appendAndQuery(backend: Backend) throws {
        try withStore(backend) { store in
            let a = randomGroupID(), b = randomGroupID()
            let first = try store.appendMessages([input(a, "a1"), input(b, "b1"), input(a, "a2")], nowNs: 100)
            let second = try store.appendMessages((3...12).map { input(a, "a\($0)") }, nowNs: 200)
            let all = first + second
            #expect(all.map(\.id) == Array(all[0].id...(all[0].id + 12)), "consecutive, increasing, in request order")
            #expect(first.allSatisfy { $0.createdNs == 100 })
            let aIDs = all.filter { $0.groupID == a }.map(\.id)
            for direction in [XMTPNodeDirection.ascending, .descending] {
                for cursor in [0] + aIDs + [aIDs.last! + 5] {
                    for limit in [0, 1, 3, 100, 500] {
                        let page = XMTPNodePage(direction: direction, requestedLimit: UInt64(limit), cursor: cursor)
                        let got = try store.queryMessages(a, page: page)
                        #expect(got.map(\.id) == page.select(from: aIDs), "\(direction) cursor \(cursor) limit \(limit)")
                    }
                }
            }
            let page = try store.queryMessages(a, page: XMTPNodePage(direction: .ascending, requestedLimit: 2, cursor: 0))
            #expect(page.map { String(decoding: $0.data.suffix(2), as: UTF8.self) } == ["a1", "a2"])
            #expect(page[0] == first[0], "a stored message reads back identically")
            // The merged replay query: each group from its own cursor, ascending, limited.
            let replay = try store.messages(after: [a: first[2].id, b: 0], limit: 4)
            #expect(replay.map(\.id) == [first[1].id] + second.prefix(3).map(\.id))
            #expect(try store.messages(after: [randomGroupID(): 0], limit: 10).isEmpty)
        }
    }

    @Test("Concurrent appends keep ids unique and gap-free", arguments: Backend.allCases)
    func concurrentAppends(backend: Backend) async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try backend.makeStore(in: directory)
        defer { store.close() }
        let group = randomGroupID()
        let runner = BlockingRunner(label: "switchboard.xmtp-node.store")
        let ids = try await withThrowingTaskGroup(of: [UInt64].self) { tasks in
            for worker in 0..<8 {
                tasks.addTask {
                    var ids: [UInt64] = []
                    for index in 0..<10 {
                        ids += try await runner.run {
                            try store.appendMessages([input(group, "\(worker)-\(index)"), input(group, "x")], nowNs: 1).map(\.id)
                        }
                    }
                    return ids
                }
            }
            return try await tasks.reduce(into: [UInt64]()) { $0 += $1 }
        }
        #expect(Set(ids).count == 160)
        #expect(ids.max()! - ids.min()! == 159)
    }

    @Test("Upload grants round-trip", arguments: Backend.allCases)
    func uploadGrants(backend: Backend) throws {
        try withStore(backend) { store in
            let grant = XMTPNodeUploadGrant(tokenHash: "t", contentDigest: String(repeating: "a", count: 64), contentLength: 12,
                                            expiresNs: 1_700_000_000_000_000_000, inboxID: "alice")
            try store.saveUploadGrant(grant)
            #expect(try store.uploadGrant(tokenHash: "t") == grant)
            #expect(try store.uploadGrant(tokenHash: "u") == nil)
        }
    }
}
}
