import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Timeline: newest page first, paging back without gaps, bounded window")
struct TimelineTests {
    static let pageSize = 10
    static let windowLimit = 25

    /// A harness whose room already holds `count` messages from bob, and a configuration with small pages.
    private static func thread(_ h: Harness, count: Int) async throws -> [MemoryMessageRow] {
        var rows: [MemoryMessageRow] = []
        for index in 0..<count { rows.append(try await h.peerSend("m\(index)")) }
        return rows
    }

    private static func configuration(_ h: Harness) -> EngineConfiguration {
        h.configuration(for: h.alice, pageSize: pageSize, windowLimit: windowLimit)
    }

    /// The positions of `window` in the backend's order; nil for a message the backend does not have.
    private static func indices(of window: [Message], in h: Harness) -> [Int?] {
        let order = h.rows.map(\.idempotencyKey)
        return window.map { message in order.firstIndex(of: message.id) }
    }

    /// Whether `window` is a gap-free, duplicate-free run of the backend's messages, in order.
    private static func isContiguous(_ window: [Message], in h: Harness) -> Bool {
        let positions = indices(of: window, in: h)
        guard positions.allSatisfy({ $0 != nil }) else { return false }
        let values = positions.compactMap { $0 }
        return zip(values, values.dropFirst()).allSatisfy { $1 == $0 + 1 }
    }

    private static func texts(_ window: [Message]) -> [String] { window.map(\.content.text) }

    @Test("open shows the newest page, in order")
    func openShowsNewestPage() async throws {
        try await withHarness { h in
            let rows = try await Self.thread(h, count: 60)
            let alice = try await h.opened(h.alice, configuration: Self.configuration(h))
            let window = try await alice.timeline(of: h.room)
            #expect(window.map(\.id) == rows.suffix(Self.pageSize).map(\.idempotencyKey))
            #expect(Self.texts(window) == (50..<60).map { "m\($0)" })
            #expect(try await alice.hasOlder(in: h.room))
            await #expect(try alice.storedMessages(in: h.room).count == Self.pageSize, "open fetched more than the newest page")
        }
    }

    @Test("close ends the live subscription and the event streams; what arrives meanwhile comes with the next open")
    func closeAndReopen() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            let alice = try await h.opened(h.alice, adapter: wrapped, configuration: Self.configuration(h))
            #expect(wrapped.openLiveStreams == 1)
            let first = try await h.peerSend("before close")
            try #require(await eventually { try await alice.storedMessages(in: h.room).contains { $0.id == first.idempotencyKey } })
            let stream = try await alice.events(in: h.room)
            let ended = Task { () -> Bool in
                for await _ in stream {}
                return true
            }
            await alice.close(h.room)
            #expect(await ended.value, "the event stream did not finish")
            #expect(wrapped.openLiveStreams == 0, "the adapter's live stream is still open")
            await #expect(throws: SwitchboardError.self) { try await alice.timeline(of: h.room) }
            await alice.close(h.room)  // not open: nothing happens

            let meanwhile = try await h.peerSend("while closed")
            try await Task.sleep(for: .milliseconds(200))
            await #expect(!(try alice.storedMessages(in: h.room).contains { $0.id == meanwhile.idempotencyKey }),
                    "a message was applied live after close")

            let room = try await alice.open(h.room)
            #expect(Self.texts(try await room.timeline()).suffix(2) == ["before close", "while closed"])
            #expect(wrapped.openLiveStreams == 1)
            let live = try await h.peerSend("after reopen")
            try #require(await eventually { try await room.timeline().contains { $0.id == live.idempotencyKey } })
        }
    }

    @Test("a message queued in a conversation that is then closed is still published, and shows sent when reopened")
    func outboxOutlivesClose() async throws {
        try await withHarness { h in
            let patient = h.configuration(for: h.alice, retry: RetryPolicy(baseDelay: 0.02, maxDelay: 0.05, maxAttempts: 10_000),
                                          pageSize: Self.pageSize, windowLimit: Self.windowLimit)
            let alice = try await h.opened(h.alice, configuration: patient)
            h.backend.faults.setOffline(h.alice, true)
            let message = try await alice.send("queued before close", in: h.room)
            await alice.close(h.room)
            #expect(h.row(key: message.id) == nil)
            h.backend.faults.setOffline(h.alice, false)
            try #require(await eventually { h.row(key: message.id) != nil }, "the outbox stopped with the conversation")
            let room = try await alice.open(h.room)
            try #require(await eventually {
                try await room.timeline().first { $0.id == message.id }?.delivery.isPublished == true
            })
            #expect(h.rows(key: message.id).count == 1)
        }
    }

    @Test("loadOlder pages back to the first message with no gaps or duplicates while the peer keeps sending")
    func pagingWhilePeerSends() async throws {
        try await withHarness { h in
            let rows = try await Self.thread(h, count: 60)
            let alice = try await h.opened(h.alice, configuration: Self.configuration(h))
            var seen: [MessageID] = try await alice.timeline(of: h.room).map(\.id)
            var pages = 0
            var live = 0
            while try await alice.hasOlder(in: h.room), pages < 40 {
                pages += 1
                try await h.peerSend("live \(live)")
                live += 1
                try await alice.loadOlder(in: h.room)
                let window = try await alice.timeline(of: h.room)
                #expect(window.count <= Self.windowLimit, "window holds \(window.count)")
                #expect(Set(window.map(\.id)).count == window.count, "duplicates in \(Self.texts(window))")
                #expect(Self.isContiguous(window, in: h), "gap after page \(pages): \(Self.texts(window))")
                seen += window.map(\.id)
            }
            #expect(try await alice.hasOlder(in: h.room) == false, "never reached the beginning")
            let window = try await alice.timeline(of: h.room)
            #expect(window.first?.id == rows.first?.idempotencyKey, "the window does not start at the first message")
            #expect(Set(rows.map(\.idempotencyKey)).isSubset(of: Set(seen)), "some messages were never shown")
            #expect(pages <= 60 / Self.pageSize + 2, "took \(pages) pages")
            // Every live message landed in the store once, even those outside the window.
            try #require(await eventually { try await alice.storedMessages(in: h.room).count == 60 + live })
            let stored = try await alice.storedMessages(in: h.room).map(\.id)
            #expect(Set(stored).count == stored.count)
        }
    }

    @Test("the window stays bounded while a long thread arrives live")
    func windowStaysBounded() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice, configuration: Self.configuration(h))
            var last = try await h.peerSend("live 0")
            for index in 1..<80 {
                last = try await h.peerSend("live \(index)")
                #expect(try await alice.timeline(of: h.room).count <= Self.windowLimit)
            }
            let newest = last.idempotencyKey
            try #require(await eventually { try await alice.timeline(of: h.room).last?.id == newest })
            let window = try await alice.timeline(of: h.room)
            #expect(window.count == Self.windowLimit)
            #expect(Self.isContiguous(window, in: h), "\(Self.texts(window))")
            #expect(Self.texts(window) == (55..<80).map { "live \($0)" })
            #expect(try await alice.hasOlder(in: h.room))
        }
    }

    @Test("an edit of an old message arriving live does not open a gap in the window")
    func liveEditOfOldMessageKeepsWindowContiguous() async throws {
        try await withHarness { h in
            let rows = try await Self.thread(h, count: 40)
            let alice = try await h.opened(h.alice, configuration: Self.configuration(h))
            try h.backend.edit(rows[3].remoteID, in: h.room, text: "m3, edited", as: h.bob)
            let marker = try await h.peerSend("marker")
            try #require(await eventually { try await alice.message(marker.idempotencyKey) != nil })
            #expect(try await alice.message(rows[3].idempotencyKey)?.content.text == "m3, edited")
            let window = try await alice.timeline(of: h.room)
            #expect(Self.isContiguous(window, in: h), "window shows \(Self.texts(window))")
        }
    }

    @Test("paging back after a sync that brought edits of many old messages shows every message, without gaps")
    func pagingAfterOldEditsHasNoGap() async throws {
        try await withHarness { h in
            let rows = try await Self.thread(h, count: 60)
            let first = try await h.opened(h.alice, store: "alice", configuration: Self.configuration(h))
            await first.stop()
            // While alice is away bob edits a dozen old messages she never loaded.
            for row in rows.prefix(12) { try h.backend.edit(row.remoteID, in: h.room, text: row.text + " (edited)", as: h.bob) }

            let alice = try await h.opened(h.alice, store: "alice", configuration: Self.configuration(h))
            #expect(try await alice.message(rows[0].idempotencyKey)?.content.text == "m0 (edited)")
            var seen = Set(try await alice.timeline(of: h.room).map(\.id))
            var gaps: [[String]] = []
            var pages = 0
            while try await alice.hasOlder(in: h.room), pages < 40 {
                pages += 1
                try await alice.loadOlder(in: h.room)
                let window = try await alice.timeline(of: h.room)
                if !Self.isContiguous(window, in: h) { gaps.append(Self.texts(window)) }
                seen.formUnion(window.map(\.id))
            }
            let missing = rows.filter { !seen.contains($0.idempotencyKey) }.map(\.text)
            #expect(missing.isEmpty, "never shown: \(missing)")
            #expect(try await alice.hasOlder(in: h.room) == false)
            #expect(gaps.isEmpty, "\(gaps.count) windows with gaps, first: \(gaps.first ?? [])")
        }
    }
}
