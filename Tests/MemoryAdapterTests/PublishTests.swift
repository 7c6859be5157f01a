import Foundation
import MemoryAdapter
import SwitchboardCore
import TestSupport
import Testing

@Suite("Memory publish")
struct PublishTests {
    @Test("publish returns the remote ID the scheme allows", arguments: IDScheme.allCases)
    func publishReportsRemoteIDPerScheme(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let prepared = try await f.alice.prepare(f.outgoing("hello", from: f.alice), noSend: false)
        #expect(f.backend.publishCallCount == 0, "prepare makes no backend call")
        #expect(f.backend.storedMessageCount(in: f.room) == 0)
        let receipt = try await f.alice.publish(prepared)
        let row = try #require(f.backend.messages(in: f.room).first)
        #expect(receipt.remoteID == row.remoteID)
        #expect(receipt.serverTime == row.sentAt)
        switch scheme {
        case .clientAssigned:
            #expect(prepared.remoteID == RemoteID(prepared.id.rawValue))
            #expect(row.remoteID == prepared.remoteID)
        case .contentDerived:
            #expect(prepared.remoteID?.rawValue.count == 64)
            #expect(row.remoteID == prepared.remoteID)
        case .serverAssigned:
            #expect(prepared.remoteID == nil)
            #expect(row.remoteID.rawValue.hasPrefix("srv-"))
        }
    }

    @Test("the content-derived ID computed at prepare equals the server's", arguments: IDScheme.allCases)
    func preparedRemoteIDMatchesServer(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let attachment = SwitchboardCore.Attachment(filename: "a.png", mimeType: "image/png", byteCount: 3, sha256: Digest.sha256Hex([1, 2, 3]),
                                    localPath: "/tmp/a.png", remoteLocation: "memory://blobs/x",
                                    upload: .uploading(progress: 0.5))
        var message = f.outgoing("with → unicode / slashes", from: f.alice, attachments: [attachment])
        message.metadata = ["origin": "bridge", "b": "2"]
        message.replyTo = "earlier"
        message.createdAt = Date(timeIntervalSince1970: 1_700_000_000.123456789)
        let first = try await f.alice.prepare(message, noSend: true)
        let second = try await f.alice.prepare(message, noSend: false)
        #expect(first == second, "prepare is deterministic")

        if scheme == .contentDerived {
            var bytes = Array("room".utf8) + [0x09] + Array(message.id.rawValue.utf8) + [0x09]
            bytes += first.payload
            #expect(first.remoteID == RemoteID(Digest.sha256Hex(bytes)))
        }
        let receipt = try await f.alice.publish(first)
        let row = try #require(f.backend.messages(in: f.room).first)
        if scheme != .serverAssigned { #expect(row.remoteID == first.remoteID) }
        #expect(receipt.remoteID == row.remoteID)
        #expect(row.attachments.first?.localPath == nil, "the server holds the remote copy only")
        #expect(row.attachments.first?.upload == .uploaded)
        #expect(row.metadata == ["origin": "bridge", "b": "2"])
        #expect(row.replyTo == "earlier")
    }

    @Test("publishing the same prepared message twice stores one row and one event", arguments: IDScheme.allCases)
    func republishStoresOneRow(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let live = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { live.stop() }
        let prepared = try await f.alice.prepare(f.outgoing("once", from: f.alice), noSend: false)
        let first = try await f.alice.publish(prepared)
        let second = try await f.alice.publish(prepared)
        let batch = try await f.alice.publishAll([prepared, prepared])
        #expect(first == second)
        #expect(batch == [first, first])
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
        #expect(f.backend.publishCallCount == 4)
        #expect(await live.settledMessages(atLeast: 1).count == 1)
    }

    @Test("a lost response followed by a retry stores one row", arguments: IDScheme.allCases)
    func lostResponseRetryStoresOnce(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let live = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { live.stop() }
        let prepared = try await f.alice.prepare(f.outgoing("did it go through?", from: f.alice), noSend: false)
        f.backend.faults.loseNextPublishResponses(1)
        await expectError(.transport, retryable: true) { _ = try await f.alice.publish(prepared) }
        #expect(f.backend.storedMessageCount(in: f.room) == 1, "the message was stored before the response was lost")
        let receipt = try await f.alice.publish(prepared)
        #expect(receipt.remoteID == (try f.remoteID(of: prepared.id)))
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
        #expect(f.backend.publishCallCount == 2)
        #expect(await live.settledMessages(atLeast: 1).count == 1)
    }

    @Test("failed publishes store nothing and honour retryability", arguments: IDScheme.allCases)
    func failedPublishStoresNothing(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let prepared = try await f.alice.prepare(f.outgoing("later", from: f.alice), noSend: false)
        f.backend.faults.failNextPublishes(2, retryable: false)
        await expectError(.transport, retryable: false) { _ = try await f.alice.publish(prepared) }
        await expectError(.transport, retryable: false) { _ = try await f.alice.publish(prepared) }
        #expect(f.backend.storedMessageCount(in: f.room) == 0)
        _ = try await f.alice.publish(prepared)
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
        #expect(f.backend.faults.publishCallCount == 3)
    }

    @Test("concurrent publishes of one key store one row", arguments: IDScheme.allCases)
    func concurrentPublishesStoreOneRow(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let prepared = try await f.alice.prepare(f.outgoing("race", from: f.alice), noSend: false)
        let adapter = f.alice
        let receipts = try await withThrowingTaskGroup(of: PublishReceipt.self) { group in
            for _ in 0..<16 { group.addTask { try await adapter.publish(prepared) } }
            return try await group.reduce(into: [PublishReceipt]()) { $0.append($1) }
        }
        #expect(Set(receipts).count == 1)
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
    }

    @Test("with echoOnly the ID is learnt from the echo carrying the key", arguments: IDScheme.allCases)
    func echoOnlyRevealsIDThroughEcho(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let live = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        defer { live.stop() }
        f.backend.faults.echoOnly = true
        let prepared = try await f.alice.prepare(f.outgoing("echo", from: f.alice), noSend: false)
        let receipt = try await f.alice.publish(prepared)
        #expect(receipt.remoteID == nil)
        #expect(receipt.serverTime == nil)
        #expect(await live.waitForMessages(1))
        let echo = try #require(live.messages.first)
        #expect(echo.idempotencyKey == prepared.id)
        #expect(echo.remoteID == (try f.remoteID(of: prepared.id)))
    }

    @Test("members only; unknown conversations are named")
    func nonMemberAndUnknownConversationAreRejected() async throws {
        let f = try Fixture(.serverAssigned)
        let prepared = try await f.carol.prepare(f.outgoing("let me in", from: f.carol), noSend: false)
        await expectError(.unauthorized) { _ = try await f.carol.publish(prepared) }
        await expectError(.unauthorized) { _ = try await f.carol.history(in: f.room, before: nil, limit: 10) }
        await expectError(.unauthorized) { _ = try await f.carol.changes(in: f.room, after: nil, limit: 10) }
        let elsewhere = try await f.alice.prepare(f.outgoing("void", from: f.alice, in: "nowhere"), noSend: false)
        await expectError(.unknownConversation) { _ = try await f.alice.publish(elsewhere) }
        try f.backend.addMember("carol", to: f.room)
        _ = try await f.carol.publish(prepared)
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
        #expect(f.backend.members(of: f.room) == ["alice", "bob", "carol"])
    }

    @Test("bad input is refused before the network and by the server", arguments: IDScheme.allCases)
    func badInputIsRejected(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        await expectError(.emptyMessage) { _ = try await f.alice.prepare(f.outgoing("  \n", from: f.alice), noSend: false) }
        let huge = String(repeating: "x", count: 16 * 1024 + 1)
        await expectError(.contentTooLarge) { _ = try await f.alice.prepare(f.outgoing(huge, from: f.alice), noSend: false) }
        await expectError(.invalidArgument) {
            _ = try await f.alice.prepare(f.outgoing("key", from: f.alice, id: "not-a-uuid"), noSend: false)
        }
        await expectError(.invalidArgument) { _ = try await f.alice.prepare(f.outgoing("as bob", from: f.bob), noSend: false) }
        let local = SwitchboardCore.Attachment(filename: "a.txt", mimeType: "text/plain", byteCount: 1, sha256: "00")
        await expectError(.invalidArgument) {
            _ = try await f.alice.prepare(f.outgoing("file", from: f.alice, attachments: [local]), noSend: false)
        }
        await expectError(.emptyMessage) { _ = try await f.backend.publish(f.outgoing("", from: f.alice), as: "alice") }
        await expectError(.unauthorized) { _ = try await f.backend.publish(f.outgoing("spoof", from: f.bob), as: "alice") }
        #expect(f.backend.storedMessageCount(in: f.room) == 0)
        #expect(f.alice.capabilities.idScheme == scheme)
        #expect(f.alice.capabilities.hasNativeNoSend == false)
    }

    @Test("a publish delay is cancellable and stores nothing")
    func publishDelayIsCancellable() async throws {
        let f = try Fixture(.contentDerived)
        f.backend.faults.publishDelay = .seconds(30)
        let prepared = try await f.alice.prepare(f.outgoing("slow", from: f.alice), noSend: false)
        let adapter = f.alice
        let task = Task { try await adapter.publish(prepared) }
        try await Task.sleep(for: .milliseconds(20))
        task.cancel()
        let started = ContinuousClock.now
        await expectError(.cancelled) { _ = try await task.value }
        // Well short of the 30 s delay; not tighter, because the cancelled task needs one of the cooperative threads,
        // which the group's CPU-heavy tests (debug-built hashing, JSON fuzzing) may hold for seconds (7.3 s once).
        #expect(ContinuousClock.now - started < TestTime.limit(.seconds(20)))
        #expect(f.backend.storedMessageCount(in: f.room) == 0)
    }

    @Test("held publishes wait until released, then store once; a held publish is cancellable")
    func heldPublishes() async throws {
        let f = try Fixture(.clientAssigned)
        f.backend.faults.holdsPublishes = true
        let adapter = f.alice
        let first = try await adapter.prepare(f.outgoing("held", from: f.alice), noSend: false)
        let waiting = Task { try await adapter.publish(first) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(f.backend.storedMessageCount(in: f.room) == 0)
        f.backend.faults.holdsPublishes = false
        _ = try await waiting.value
        #expect(f.backend.storedMessageCount(in: f.room) == 1)

        f.backend.faults.holdsPublishes = true
        let second = try await adapter.prepare(f.outgoing("cancelled", from: f.alice), noSend: false)
        let cancelled = Task { try await adapter.publish(second) }
        try await Task.sleep(for: .milliseconds(20))
        cancelled.cancel()
        await expectError(.cancelled) { _ = try await cancelled.value }
        #expect(f.backend.storedMessageCount(in: f.room) == 1)
    }

    @Test("a client-assigned ID cannot be reused in another conversation")
    func clientIDsAreUniqueAcrossConversations() async throws {
        let f = try Fixture(.clientAssigned)
        try f.backend.createConversation("other", members: ["alice"])
        let id = MessageID.make()
        _ = try await f.alice.publish(try await f.alice.prepare(f.outgoing("one", from: f.alice, id: id), noSend: false))
        let again = try await f.alice.prepare(f.outgoing("one", from: f.alice, id: id, in: "other"), noSend: false)
        await expectError(.conflict) { _ = try await f.alice.publish(again) }
        #expect(f.backend.storedMessageCount(in: "other") == 0)
    }
}
