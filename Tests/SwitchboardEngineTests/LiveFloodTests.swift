import Foundation
import MemoryAdapter
import SwitchboardCore
import Testing
@testable import SwitchboardEngine

/// The bounded queue between a live stream and the reconciler.
@Suite("Live inbox bound")
struct LiveFloodTests {
    /// A message change for the inbox.
    func change(_ index: Int) -> AdapterEvent {
        .change(.message(RemoteMessage(remoteID: RemoteID("r\(index)"), conversation: "c", idempotencyKey: nil, sender: "bob",
                                       text: "m\(index)", sentAt: Date(timeIntervalSince1970: Double(index)))))
    }

    @Test("past its limit the inbox drops the queued changes, keeps signals, and reports how many it dropped")
    func inboxDropsChangesPastTheLimit() {
        let inbox = LiveInbox(limit: 3)
        inbox.push(.connection(.connected))
        for index in 0..<3 { inbox.push(change(index)) }
        let (kept, none) = inbox.takeAll()
        #expect(kept.count == 4 && none == 0, "up to the limit nothing is dropped")
        inbox.push(change(10))
        inbox.push(.typing(conversation: "c", user: "bob", isTyping: true))
        for index in 11..<15 { inbox.push(change(index)) }  // 13, the 4th waiting change, drops 10–12
        let (events, dropped) = inbox.takeAll()
        #expect(dropped == 3)
        #expect(events == [.typing(conversation: "c", user: "bob", isTyping: true), change(13), change(14)])
        let (after, droppedAfter) = inbox.takeAll()
        #expect(after.isEmpty && droppedAfter == 0)
    }

    @Test("a live flood past maxQueuedLiveChanges resyncs: every message stored and shown once, nothing lost")
    func floodResyncs() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            var configuration = h.configuration(for: h.alice)
            configuration.maxQueuedLiveChanges = 4
            let alice = try await h.opened(h.alice, adapter: wrapped, configuration: configuration)
            #expect(await eventually { await alice.isLive(h.room) }, "alice's live stream did not connect")
            // The backend's own live deliveries are lost, so the messages reach alice only as the burst below,
            // once each, in a tight loop from a thread of its own (as a socket reader delivers): far faster than
            // the reconciler commits, so its queue overflows, and only the resync brings the dropped ones back.
            wrapped.configure { $0.loseLiveMessages = true }
            var sent: [RemoteMessage] = []
            let texts = (0..<300).map { "flood \($0)" }
            for text in texts { sent.append(try await h.peerSend(text).remoteMessage) }
            let delivered = AsyncStream<Void>.makeStream()
            let burst = sent
            Thread.detachNewThread {
                for message in burst { wrapped.inject(.change(.message(message))) }
                delivered.continuation.finish()
            }
            for await _ in delivered.stream {}
            let settled = await eventually {
                let dropped = await alice.droppedLiveChanges
                let stored = (try? await alice.storedMessages(in: h.room).count) ?? -1
                return stored == texts.count && dropped > 0
            }
            let dropped = await alice.droppedLiveChanges
            let storedCount = (try? await alice.storedMessages(in: h.room).count) ?? -1
            #expect(settled, "stored \(storedCount), dropped \(dropped)")
            let stored = try await alice.storedMessages(in: h.room)
            #expect(stored.count == texts.count)
            #expect(Set(stored.map(\.content.text)) == Set(texts))
            let window = try await alice.timeline(of: h.room).map(\.id)
            #expect(window.count == Set(window).count, "the timeline shows a message twice")
        }
    }
}
