import Foundation
import SwitchboardCore
import SwitchboardSQLite
import TestSupport
import Testing
import XMTPCodec
import XMTPCrypto
@testable import XMTPAdapter

/// The runs a live stream stored without a gap, as pure state.
@Suite("XMTP stream coverage")
struct XMTPStreamCoverageTests {
    @Test("a run covers cursors from its start up to before its end; other groups and earlier cursors are not covered")
    func runs() {
        var coverage = XMTPStreamCoverage()
        let stream = UUID()
        coverage.subscribed(stream, group: "g", after: 10)
        #expect(coverage.coveredThrough(group: "g", after: 10) == nil, "nothing stored yet")
        coverage.stored(stream, through: 15)
        #expect(coverage.coveredThrough(group: "g", after: 10) == 15)
        #expect(coverage.coveredThrough(group: "g", after: 14) == 15)
        #expect(coverage.coveredThrough(group: "g", after: 15) == nil, "nothing after the run's end is known")
        #expect(coverage.coveredThrough(group: "g", after: 9) == nil, "before the subscription's cursor")
        #expect(coverage.coveredThrough(group: "other", after: 12) == nil)
        coverage.stored(stream, through: 12)
        #expect(coverage.coveredThrough(group: "g", after: 10) == 15, "a run never shrinks")
    }

    @Test("resubscribing where the run ends extends it; resubscribing elsewhere or ending drops it")
    func reconnects() {
        var coverage = XMTPStreamCoverage()
        let stream = UUID()
        coverage.subscribed(stream, group: "g", after: 0)
        coverage.stored(stream, through: 20)
        coverage.subscribed(stream, group: "g", after: 20)
        coverage.stored(stream, through: 30)
        #expect(coverage.coveredThrough(group: "g", after: 5) == 30)
        coverage.subscribed(stream, group: "g", after: 40)
        #expect(coverage.coveredThrough(group: "g", after: 5) == nil, "a new run starts at its own cursor")
        coverage.stored(stream, through: 45)
        #expect(coverage.coveredThrough(group: "g", after: 40) == 45)
        coverage.ended(stream)
        #expect(coverage.coveredThrough(group: "g", after: 40) == nil)
        coverage.stored(stream, through: 50)
        #expect(coverage.runs.isEmpty, "an ended stream records nothing")
    }

    @Test("a count's run covers exactly what it names, and a later count replaces nothing of another's")
    func countRuns() {
        var coverage = XMTPStreamCoverage()
        let count = UUID(), other = UUID()
        coverage.covered(count, group: "g", from: 200, through: 300)
        #expect(coverage.coveredThrough(group: "g", after: 100) == nil, "below the pages read so far")
        #expect(coverage.coveredThrough(group: "g", after: 200) == 300)
        coverage.covered(count, group: "g", from: 0, through: 300)
        #expect(coverage.coveredThrough(group: "g", after: 0) == 300, "the last page reaches the first sequence")
        coverage.covered(other, group: "g", from: 5, through: 5)
        #expect(coverage.runs[other] == nil, "an empty run is not recorded")
        #expect(coverage.coveredThrough(group: "g", after: 299) == 300)
    }

    @Test("with two streams on a group, a cursor inside both is covered up to the further end")
    func twoStreams() {
        var coverage = XMTPStreamCoverage()
        let first = UUID(), second = UUID()
        coverage.subscribed(first, group: "g", after: 0)
        coverage.stored(first, through: 10)
        coverage.subscribed(second, group: "g", after: 5)
        coverage.stored(second, through: 25)
        #expect(coverage.coveredThrough(group: "g", after: 3) == 10)
        #expect(coverage.coveredThrough(group: "g", after: 7) == 25)
    }
}

/// Delta reads inside a live stream's stored run, answered from the local database.
@Suite("XMTP adapter local delta reads", .serialized)
struct XMTPLocalDeltaReadTests {
    /// Every change and cursor of a paged read after `start`.
    private func pages(_ adapter: XMTPAdapter, _ group: TestGroup, after start: Cursor?,
                       limit: Int) async throws -> (changes: [RemoteChange], cursors: [Cursor?]) {
        var changes: [RemoteChange] = [], cursors: [Cursor?] = []
        var cursor = start
        while true {
            let batch = try await adapter.changes(in: group.conversation, after: cursor, limit: limit)
            changes += batch.changes
            cursors.append(batch.cursor)
            cursor = batch.cursor
            if !batch.hasMore { break }
        }
        return (changes, cursors)
    }

    @Test("pages a live stream stored are read locally with the node's changes and cursors; the node only past the run")
    func localPages() async throws {
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        defer { group.cleanUp() }
        let alice = try group.adapter(group.alice)
        let bob = try group.adapter(group.bob)
        let start = try await bob.latestCursor(in: group.conversation)
        let events = Locked<[AdapterEvent]>([])
        let listener = Task {
            for await event in bob.liveEvents(in: group.conversation) { events.withLock { $0.append(event) } }
        }
        defer { listener.cancel() }
        try await eventually { events.withLock { $0.contains(.connection(.connected)) } }
        // Content, an undecryptable envelope, an edit and a reaction: 14 envelopes.
        var first: RemoteID?
        for index in 0..<11 {
            let prepared = try await alice.prepare(group.outgoing("message \(index)", from: group.alice), noSend: false)
            _ = try await alice.publish(prepared)
            if index == 0 { first = prepared.remoteID }
            if index == 4 {
                try await group.sendRaw(XMTPGroupEnvelope(groupID: group.groupID, nonce: try SecureRandom.bytes(12),
                                                          ciphertext: try SecureRandom.bytes(64)).encoded(), as: group.alice)
            }
        }
        try await alice.edit(try #require(first), in: group.conversation, text: "message 0 (edited)")
        try await alice.setReaction("👍", isActive: true, on: try #require(first), in: group.conversation)
        try await eventually {
            events.withLock { $0.contains { if case .change(.reaction) = $0 { true } else { false } } }
        }
        // A reader on its own database that has stored the same envelopes, reading from the node.
        let reader = try group.adapter(group.bob, database: "reader")
        _ = try await pages(reader, group, after: start, limit: 100)
        let fromNode = try await pages(reader, group, after: start, limit: 4)
        let local = try await pages(bob, group, after: start, limit: 4)
        #expect(local.changes == fromNode.changes)
        // Pages end at the same sequences until the undecryptable envelope (not stored, so not counted locally).
        #expect(local.cursors.first == fromNode.cursors.first)
        #expect(local.cursors.last == Cursor("s:14") && fromNode.cursors.last == Cursor("s:14"))
        #expect(local.changes.count == 13, "11 messages, the edit, the reaction; the undecryptable one skipped")
        // With the node gone, the stored run still answers (the old read asked the node for every page).
        await node.stop()
        let offline = try await bob.changes(in: group.conversation, after: start, limit: 4)
        #expect(offline.changes == Array(local.changes.prefix(4)))
        #expect(offline.hasMore)
        let reading = try await bob.changes(in: group.conversation, after: Cursor("s:4"), limit: 4)
        #expect(reading.cursor == Cursor("s:9"), "the skipped envelope's sequence is passed like the node passes it")
        await #expect(throws: (any Error).self) {
            _ = try await bob.changes(in: group.conversation, after: Cursor("s:12"), limit: 4)
        }
    }

    @Test("the pages a count stored are read locally by a delta read starting inside them; the node only past them")
    func countedPagesReadLocally() async throws {
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        defer { group.cleanUp() }
        let alice = try group.adapter(group.alice)
        // 230 messages and an undecryptable envelope: the count reads three pages of 100, newest first.
        for index in 0..<230 {
            _ = try await alice.publish(try await alice.prepare(group.outgoing("message \(index)", from: group.alice),
                                                                noSend: false))
            if index == 120 {
                try await group.sendRaw(XMTPGroupEnvelope(groupID: group.groupID, nonce: try SecureRandom.bytes(12),
                                                          ciphertext: try SecureRandom.bytes(64)).encoded(), as: group.alice)
            }
        }
        let reader = try group.adapter(group.bob, database: "reader")
        let fromNode = try await pages(reader, group, after: nil, limit: 100)
        #expect(fromNode.changes.count == 230)
        let counter = try group.adapter(group.bob, database: "counter")
        #expect(try await counter.messageCount(in: group.conversation) == 230)
        await node.stop()
        // The node is gone: the counted run answers every page up to the newest envelope the count saw.
        let first = try await counter.changes(in: group.conversation, after: nil, limit: 100)
        let second = try await counter.changes(in: group.conversation, after: first.cursor, limit: 100)
        #expect(first.hasMore && second.hasMore)
        #expect(first.changes + second.changes == Array(fromNode.changes.prefix(200)))
        let third = try await counter.changes(in: group.conversation, after: second.cursor, limit: 20)
        #expect(third.changes == Array(fromNode.changes[200..<220]))
        await #expect(throws: (any Error).self, "past the last counted page the node is asked") {
            _ = try await counter.changes(in: group.conversation, after: third.cursor, limit: 100)
        }
    }

    @Test("a count that reaches the part delta reads have stored counts that part in the local database")
    func countReadsSyncedPartLocally() async throws {
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        defer { group.cleanUp() }
        let alice = try group.adapter(group.alice)
        var prepared: [PreparedMessage] = []
        for index in 0..<1050 { prepared.append(try await alice.prepare(group.outgoing("m\(index)", from: group.alice), noSend: false)) }
        _ = try await alice.publishAll(prepared)
        let reader = try group.adapter(group.bob, database: "reader")
        let synced = try await reader.changes(in: group.conversation, after: nil, limit: 1000)
        #expect(synced.changes.count == 1000 && synced.hasMore)
        #expect(try await reader.messageCount(in: group.conversation) == 1050)
        // White box: remove the oldest stored message from the reader's database. A count that fetched the synced
        // part again would store and count it (1,050); one that counts that part locally does not (1,049).
        let connection = try SQLiteConnection(path: group.databasePath("reader"))
        try connection.execute("DELETE FROM group_messages WHERE sequence_id = (SELECT min(sequence_id) FROM group_messages)")
        connection.close()
        #expect(try await reader.messageCount(in: group.conversation) == 1049)
        // Without a sync cursor (a database that read nothing yet) every envelope is fetched.
        let fresh = try group.adapter(group.bob, database: "fresh")
        #expect(try await fresh.messageCount(in: group.conversation) == 1050)
        await node.stop()
    }

    private func eventually(_ condition: () throws -> Bool) async throws {
        let deadline = TestTime.deadline(after: .seconds(10))
        while ContinuousClock.now < deadline {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("timed out")
    }
}
