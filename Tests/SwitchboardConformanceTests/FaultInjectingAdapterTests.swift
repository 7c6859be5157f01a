import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardFaults
import Testing
import TestSupport

/// The fault-injecting decorator over the memory adapter: each fault kind observably happens (the backend tells
/// what reached it), and with no fault planned every call passes through.
@Suite("Fault-injecting adapter")
struct FaultInjectingAdapterTests {
    /// A memory backend with alice and bob in `room`, their adapters wrapped under one `InjectedFaults`.
    struct Setup {
        let backend: MemoryBackend
        let faults = InjectedFaults()
        let room: ConversationID = "room"
        let alice: FaultInjectingAdapter<MemoryAdapter>
        let bob: FaultInjectingAdapter<MemoryAdapter>

        init(scheme: IDScheme = .clientAssigned) throws {
            backend = try MemoryBackend(scheme: scheme)
            try backend.createConversation(room, members: ["alice", "bob"])
            alice = FaultInjectingAdapter(wrapping: backend.makeAdapter(for: "alice"), faults: faults)
            bob = FaultInjectingAdapter(wrapping: backend.makeAdapter(for: "bob"), faults: faults)
        }

        /// `text` from `adapter`, prepared.
        func prepared(_ text: String, by adapter: some ChatAdapter) async throws -> PreparedMessage {
            try await adapter.prepare(OutgoingMessage(id: .make(), conversation: room, sender: adapter.localUser, text: text,
                                                      createdAt: Date()), noSend: false)
        }

        /// The texts the backend stores in the room, in order.
        var storedTexts: [String] { backend.messages(in: room).map(\.remoteMessage.text) }
    }

    /// Expects `body` to throw a retryable transport error.
    func expectRetryableTransport(_ what: String, _ body: () async throws -> Void) async {
        do {
            try await body()
            Issue.record("\(what): no error")
        } catch let error as SwitchboardError {
            #expect(error.code == .transport && error.isRetryable, "\(what): \(error)")
        } catch {
            Issue.record("\(what): \(error)")
        }
    }

    @Test("the decorator offers exactly the capability protocols of the adapter it wraps")
    func mirrorsCapabilities() throws {
        let setup = try Setup()
        let full: any ChatAdapter = setup.alice
        #expect(full is any EditingAdapter && full is any DeletingAdapter && full is any ReactingAdapter)
        #expect(full is any ReceiptAdapter && full is any TypingAdapter && full is any UploadingAdapter)
        #expect(full is any MessageCountingAdapter)
        #expect(!(full is any BulkPublishingAdapter) && !(full is any OwnMessageFilteringAdapter))
        #expect(!(full is any ConversationCheckingAdapter))
        // Wrapped as an existential, the dynamic type's capabilities still show.
        let opened = setup.faults.wrap(setup.backend.makeAdapter(for: "alice") as any ChatAdapter)
        #expect(opened is any EditingAdapter && opened is any UploadingAdapter && !(opened is any BulkPublishingAdapter))
        let plain = setup.faults.wrap(PlainAdapter(stream: AsyncStream { $0.finish() }))
        #expect(!(plain is any EditingAdapter) && !(plain is any UploadingAdapter) && !(plain is any TypingAdapter))
        #expect(plain.backend == "plain" && setup.alice.capabilities == setup.backend.capabilities)
    }

    @Test("with no fault planned every call passes through")
    func passesThrough() async throws {
        let setup = try Setup()
        let receipt = try await setup.alice.publish(try await setup.prepared("hello", by: setup.alice))
        #expect(setup.storedTexts == ["hello"])
        let remote = try #require(receipt.remoteID)
        try await setup.alice.edit(remote, in: setup.room, text: "hello again")
        #expect(setup.storedTexts == ["hello again"])
        let page = try await setup.bob.history(in: setup.room, before: nil, limit: 10)
        #expect(page.messages.map(\.text) == ["hello again"])
        #expect(try await setup.bob.messageCount(in: setup.room) == 1)
    }

    @Test("a failed publish never reaches the inner adapter; the next one does")
    func failedPublish() async throws {
        let setup = try Setup()
        setup.faults.failNextPublishes(2)
        let prepared = try await setup.prepared("try again", by: setup.alice)
        await expectRetryableTransport("first attempt") { _ = try await setup.alice.publish(prepared) }
        await expectRetryableTransport("second attempt") { _ = try await setup.alice.publish(prepared) }
        #expect(setup.backend.publishCallCount == 0, "a failed publish reached the backend")
        #expect(setup.storedTexts.isEmpty)
        _ = try await setup.alice.publish(prepared)
        #expect(setup.backend.publishCallCount == 1)
        #expect(setup.storedTexts == ["try again"])
    }

    @Test("a lost response: the inner backend stored the message once while the caller saw an error")
    func lostResponse() async throws {
        let setup = try Setup(scheme: .serverAssigned)
        setup.faults.loseNextPublishResponses(1)
        let prepared = try await setup.prepared("did it go", by: setup.alice)
        await expectRetryableTransport("publish with its response lost") { _ = try await setup.alice.publish(prepared) }
        #expect(setup.storedTexts == ["did it go"], "the inner backend did not commit the publish")
        let retry = try await setup.alice.publish(prepared)
        #expect(setup.storedTexts == ["did it go"], "the retry stored a duplicate")
        #expect(retry.remoteID == setup.backend.messages(in: setup.room).first?.remoteMessage.remoteID)
    }

    @Test("publishAll draws one publish fault for the whole call")
    func publishAllOneFault() async throws {
        let setup = try Setup()
        setup.faults.failNextPublishes(1)
        let batch = [try await setup.prepared("one", by: setup.alice), try await setup.prepared("two", by: setup.alice)]
        await expectRetryableTransport("failed publishAll") { _ = try await setup.alice.publishAll(batch) }
        #expect(setup.storedTexts.isEmpty)
        _ = try await setup.alice.publishAll(batch)
        #expect(setup.storedTexts == ["one", "two"])
    }

    @Test("a publish delay holds each publish at least that long")
    func publishDelay() async throws {
        let setup = try Setup()
        setup.faults.setPublishDelay(.milliseconds(150))
        let prepared = try await setup.prepared("slow", by: setup.alice)
        let started = ContinuousClock.now
        _ = try await setup.alice.publish(prepared)
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        #expect(setup.storedTexts == ["slow"])
    }

    @Test("refused edits and deletes are refused before the inner adapter: the stored message is unchanged")
    func refusals() async throws {
        let setup = try Setup()
        let remote = try #require(try await setup.alice.publish(try await setup.prepared("keep me", by: setup.alice)).remoteID)
        setup.faults.setRefuseEdits(true)
        setup.faults.setRefuseDeletes(true)
        await #expect { try await setup.alice.edit(remote, in: setup.room, text: "changed") } throws: {
            ($0 as? SwitchboardError)?.code == .refused
        }
        await #expect { try await setup.alice.delete(remote, in: setup.room) } throws: {
            ($0 as? SwitchboardError)?.code == .refused
        }
        let stored = try #require(setup.backend.messages(in: setup.room).first?.remoteMessage)
        #expect(stored.text == "keep me" && stored.editedAt == nil && stored.deletedAt == nil)
        setup.faults.reset()
        try await setup.alice.delete(remote, in: setup.room)
        #expect(setup.backend.messages(in: setup.room).first?.remoteMessage.deletedAt != nil)
    }

    @Test("uploads of the failing file name fail retryably; other files upload")
    func failingUpload() async throws {
        let setup = try Setup()
        setup.faults.setFailingUpload(named: "b.bin")
        func attachment(_ name: String, _ data: Data) -> SwitchboardCore.Attachment {
            SwitchboardCore.Attachment(filename: name, mimeType: "application/octet-stream", byteCount: Int64(data.count),
                       sha256: Digest.sha256Hex(data))
        }
        let bytes = Data(repeating: 7, count: 100)
        await expectRetryableTransport("upload of b.bin") {
            _ = try await setup.alice.upload(attachment("b.bin", bytes), data: bytes, in: setup.room) { _ in }
        }
        let uploaded = try await setup.alice.upload(attachment("a.bin", bytes), data: bytes, in: setup.room) { _ in }
        #expect(try await setup.bob.download(uploaded) == bytes)
        setup.faults.setFailingUpload(named: nil)
        _ = try await setup.alice.upload(attachment("b.bin", bytes), data: bytes, in: setup.room) { _ in }
    }

    @Test("an offline user's calls fail retryably and their live stream is cut, missing what happens meanwhile")
    func offlineUser() async throws {
        let setup = try Setup()
        let live = LiveRecorder(setup.alice.liveEvents(in: setup.room))
        #expect(await conditionHolds(within: .seconds(10)) { live.events == [.connection(.connected)] })
        let remote = try #require(try await setup.alice.publish(try await setup.prepared("before", by: setup.alice)).remoteID)
        #expect(await conditionHolds(within: .seconds(10)) { live.texts == ["before"] })

        setup.faults.setOffline("alice", true)
        #expect(await conditionHolds(within: .seconds(10)) { live.events.last?.isDisconnected == true })
        #expect(await conditionHolds(within: .seconds(10)) { setup.backend.subscriberCount == 0 }, "the inner stream stayed open")
        let prepared = try await setup.prepared("while away", by: setup.alice)
        await expectRetryableTransport("publish") { _ = try await setup.alice.publish(prepared) }
        await expectRetryableTransport("history") { _ = try await setup.alice.history(in: setup.room, before: nil, limit: 5) }
        await expectRetryableTransport("changes") { _ = try await setup.alice.changes(in: setup.room, after: nil, limit: 5) }
        await expectRetryableTransport("cursor") { _ = try await setup.alice.latestCursor(in: setup.room) }
        await expectRetryableTransport("edit") { try await setup.alice.edit(remote, in: setup.room, text: "x") }
        await expectRetryableTransport("reaction") { try await setup.alice.setReaction("👍", isActive: true, on: remote, in: setup.room) }
        #expect(setup.backend.publishCallCount == 1)
        // Bob is online: his message is stored, and alice's cut stream does not hear of it.
        _ = try await setup.bob.publish(try await setup.prepared("meanwhile", by: setup.bob))

        setup.faults.setOffline("alice", false)
        #expect(await conditionHolds(within: .seconds(10)) { live.events.last == .connection(.connected) })
        _ = try await setup.bob.publish(try await setup.prepared("after", by: setup.bob))
        #expect(await conditionHolds(within: .seconds(10)) { live.texts == ["before", "after"] }, "\(live.texts)")
        // What the stream missed is there for the delta sync that `.connected` starts.
        let batch = try await setup.alice.changes(in: setup.room, after: nil, limit: 10)
        #expect(batch.changes.compactMap(\.messageText) == ["before", "meanwhile", "after"])
        #expect(setup.faults.liveStreamCuts == 1)
        live.stop()
    }

    @Test("a drop cuts every live stream: each reports disconnected, ends its inner stream, then connects again")
    func dropLiveStreams() async throws {
        let setup = try Setup()
        let alice = LiveRecorder(setup.alice.liveEvents(in: setup.room))
        let bob = LiveRecorder(setup.bob.liveEvents(in: setup.room))
        #expect(await conditionHolds(within: .seconds(10)) { alice.events.count == 1 && bob.events.count == 1 })
        setup.faults.dropLiveStreams()
        let cycle: [AdapterEvent] = [.connection(.connected), .connection(.disconnected(reason: "live stream dropped (injected)")),
                                     .connection(.connected)]
        #expect(await conditionHolds(within: .seconds(10)) { alice.events == cycle && bob.events == cycle }, "\(alice.events)")
        #expect(setup.faults.liveStreamCuts == 2)
        #expect(await conditionHolds(within: .seconds(10)) { setup.backend.subscriberCount == 2 }, "a cut inner stream was left open")
        _ = try await setup.bob.publish(try await setup.prepared("after the drop", by: setup.bob))
        #expect(await conditionHolds(within: .seconds(10)) { alice.texts == ["after the drop"] })
        alice.stop()
        bob.stop()
        #expect(await conditionHolds(within: .seconds(10)) { setup.backend.subscriberCount == 0 }, "a stopped relay left its inner stream open")
    }

    @Test("duplicated deliveries arrive twice; reordered ones in swapped pairs, the held one flushed when switched off")
    func deliveryFaults() async throws {
        let setup = try Setup()
        let live = LiveRecorder(setup.alice.liveEvents(in: setup.room))
        #expect(await conditionHolds(within: .seconds(10)) { live.events.count == 1 })
        setup.faults.setDuplicateDeliveries(true)
        _ = try await setup.bob.publish(try await setup.prepared("twice", by: setup.bob))
        #expect(await conditionHolds(within: .seconds(10)) { live.texts == ["twice", "twice"] })
        setup.faults.setDuplicateDeliveries(false)
        setup.faults.setOutOfOrderDelivery(true)
        for text in ["one", "two", "three"] { _ = try await setup.bob.publish(try await setup.prepared(text, by: setup.bob)) }
        #expect(await conditionHolds(within: .seconds(10)) { live.texts == ["twice", "twice", "two", "one"] }, "\(live.texts)")
        setup.faults.setOutOfOrderDelivery(false)
        #expect(await conditionHolds(within: .seconds(10)) { live.texts == ["twice", "twice", "two", "one", "three"] })
        #expect(setup.storedTexts == ["twice", "one", "two", "three"])
        live.stop()
    }

    @Test("when the inner stream ends on its own, the relayed stream ends too")
    func innerStreamEnds() async throws {
        let (inner, continuation) = AsyncStream<AdapterEvent>.makeStream()
        let faults = InjectedFaults()
        let adapter = faults.wrap(PlainAdapter(stream: inner))
        let live = LiveRecorder(adapter.liveEvents(in: "room"))
        continuation.yield(.connection(.connected))
        continuation.finish()
        #expect(await conditionHolds(within: .seconds(10)) { live.isFinished })
        #expect(live.events == [.connection(.connected)])
    }
}

/// Records a live stream's events from a background task.
final class LiveRecorder: Sendable {
    private let state = Locked<(events: [AdapterEvent], finished: Bool)>(([], false))
    private let task = Locked<Task<Void, Never>?>(nil)

    /// Starts recording `stream`.
    init(_ stream: AsyncStream<AdapterEvent>) {
        let consumer = Task { [self] in
            for await event in stream { state.withLock { $0.events.append(event) } }
            state.withLock { $0.finished = true }
        }
        task.withLock { $0 = consumer }
    }

    /// Everything recorded so far.
    var events: [AdapterEvent] { state.withLock { $0.events } }
    /// The texts of the recorded message changes, in order.
    var texts: [String] { events.compactMap { if case .change(let change) = $0 { change.messageText } else { nil } } }
    /// Whether the stream ended.
    var isFinished: Bool { state.withLock { $0.finished } }
    /// Stops consuming (the stream ends).
    func stop() { task.withLock { $0?.cancel() } }
}

extension AdapterEvent {
    /// Whether this is a `.disconnected` event.
    var isDisconnected: Bool { if case .connection(.disconnected) = self { true } else { false } }
}

extension RemoteChange {
    /// The text of a message change.
    var messageText: String? { if case .message(let message) = self { message.text } else { nil } }
}

/// An adapter with no capability protocols whose live stream is the one it is given.
final class PlainAdapter: ChatAdapter {
    let stream: AsyncStream<AdapterEvent>
    init(stream: AsyncStream<AdapterEvent>) { self.stream = stream }
    var backend: BackendID { "plain" }
    var localUser: UserID { "alice" }
    var capabilities: AdapterCapabilities { AdapterCapabilities(idScheme: .clientAssigned) }
    func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        PreparedMessage(id: message.id, conversation: message.conversation, remoteID: nil, payload: Data())
    }
    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt { PublishReceipt(remoteID: nil, serverTime: nil) }
    func latestCursor(in conversation: ConversationID) async throws -> Cursor? { nil }
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        HistoryPage(messages: [], olderCursor: nil)
    }
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        ChangeBatch(changes: [], cursor: cursor, hasMore: false)
    }
    func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> { stream }
}
