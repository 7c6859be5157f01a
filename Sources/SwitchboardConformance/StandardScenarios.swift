import Foundation
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// The standard scenario kit (DESIGN §11): each behaviour as a named scenario.
public enum StandardScenarios {
    /// Every scenario, in run order.
    public static let all: [Scenario] = sending + reconciliation + history + mutations + attachments + recovery + rateLimits

    // MARK: - Helpers

    /// Opens the conversation for alice and bob on fresh stores.
    static func pair(_ ctx: ScenarioContext) async throws -> (alice: ChatClient, bob: ChatClient) {
        let alice = try await ctx.client(ctx.fixture.alice)
        let bob = try await ctx.client(ctx.fixture.bob)
        _ = try await alice.open(ctx.fixture.conversation)
        _ = try await bob.open(ctx.fixture.conversation)
        return (alice, bob)
    }

    /// Every message the backend holds for the conversation, read through a fresh adapter's history.
    static func backendMessages(_ ctx: ScenarioContext) async throws -> [RemoteMessage] {
        let adapter = try await ctx.fixture.makeAdapter(ctx.fixture.alice)
        var cursor: Cursor?
        var all: [RemoteMessage] = []
        repeat {
            let page = try await adapter.history(in: ctx.fixture.conversation, before: cursor, limit: 100)
            all.insert(contentsOf: page.messages, at: 0)
            cursor = page.olderCursor
        } while cursor != nil
        return all
    }

    static func waitForDelivery(_ ctx: ScenarioContext, _ client: ChatClient, _ id: MessageID,
                                _ what: String = "message reaches sent") async throws {
        try await ctx.eventually(what) { try await client.message(id)?.delivery.isPublished == true }
    }

    /// Waits until the sender knows the backend's ID (on echo-only backends that takes the echo).
    static func waitForRemoteID(_ ctx: ScenarioContext, _ client: ChatClient, _ id: MessageID) async throws {
        let backend = client.adapter.backend
        try await ctx.eventually("backend ID of \(id) known") {
            try await client.store.read { tx in try tx.remoteID(of: id, backend: backend, part: 0) } != nil
        }
    }

    static func waitToSee(_ ctx: ScenarioContext, _ client: ChatClient, _ id: MessageID,
                          where predicate: @escaping @Sendable (Message) -> Bool = { _ in true }) async throws {
        try await ctx.eventually("peer sees \(id)") {
            guard let message = try await client.message(id) else { return false }
            return predicate(message)
        }
    }


    // MARK: - Sending

    static let sending: [Scenario] = [
        Scenario("optimistic-visibility", "a sent message shows at once as pending, before any network call") { ctx in
            let (alice, _) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            let events = try await alice.events(in: convo)
            let message = try await alice.send("hello", in: convo)
            try ctx.expect(message.delivery == .pending, "send returned \(message.delivery), expected pending")
            try ctx.expect(try await alice.timeline(of: convo).contains { $0.id == message.id },
                           "the message is not in the timeline right after send")
            var iterator = events.makeAsyncIterator()
            var first: ConversationEvent?
            while let next = await iterator.next() {
                if next.event.message?.id == message.id { first = next.event; break }
            }
            try ctx.expect(first?.message?.delivery == .pending, "first event shows \(String(describing: first)), expected pending")
            try await waitForDelivery(ctx, alice, message.id)
        },
        Scenario("delivered-once-to-peer", "the peer receives the message exactly once, under the sender's MessageID") { ctx in
            let (alice, bob) = try await pair(ctx)
            let message = try await alice.send("one for bob", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, message.id)
            try await Task.sleep(for: .milliseconds(100))
            let rows = try await bob.rowsForTest(ctx.fixture.conversation, text: "one for bob")
            try ctx.expect(rows.count == 1, "bob sees \(rows.count) copies")
            try ctx.expect(rows.first?.sender == ctx.fixture.alice, "bob sees sender \(String(describing: rows.first?.sender))")
        },
        Scenario("echo-dedupe", "the sender's own echo lands in the optimistic row: one row, now sent with server time") { ctx in
            let (alice, _) = try await pair(ctx)
            let message = try await alice.send("echo me", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            try await ctx.eventually("server timestamp adopted") { try await alice.message(message.id)?.hasServerTimestamp == true }
            try await alice.synchronize(ctx.fixture.conversation)
            let rows = try await alice.rowsForTest(ctx.fixture.conversation, text: "echo me")
            try ctx.expect(rows.count == 1 && rows[0].id == message.id, "alice sees \(rows.count) rows for her message")
            let stored = try await alice.store.read { tx in try tx.messageCount(in: ctx.fixture.conversation) }
            try ctx.expect(stored == 1, "alice's store holds \(stored) messages, expected 1")
        },
        Scenario("retry-same-key", "failed publishes retry under the same key; the backend holds one copy", injects: [.failPublish]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.failPublishes(count: 2))
            let message = try await alice.send("try again", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            try await waitToSee(ctx, bob, message.id)
            let copies = try await backendMessages(ctx).filter { $0.text == "try again" }
            try ctx.expect(copies.count == 1, "backend holds \(copies.count) copies")
        },
        Scenario("lost-response-no-duplicate", "a publish whose response was lost is retried without a duplicate", injects: [.loseResponse]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.loseResponses(count: 1))
            let message = try await alice.send("did it go", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            try await waitToSee(ctx, bob, message.id)
            try await Task.sleep(for: .milliseconds(100))
            let copies = try await backendMessages(ctx).filter { $0.text == "did it go" }
            try ctx.expect(copies.count == 1, "backend holds \(copies.count) copies")
            try ctx.expect(try await bob.rowsForTest(ctx.fixture.conversation, text: "did it go").count == 1, "bob sees a duplicate")
        },
        Scenario("attempt-limit-then-user-retry", "after the attempt limit the message is failed and retryable; a user retry sends it once under the same ID", injects: [.failPublish]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.failPublishes(count: 1000))
            let message = try await alice.send("stubborn", in: ctx.fixture.conversation)
            try await ctx.eventually("message fails") { try await alice.message(message.id)?.delivery.isFailed == true }
            guard case .failed(_, let retryable) = try await alice.message(message.id)?.delivery else { return }
            try ctx.expect(retryable, "failed message is not retryable")
            await faults.reset()
            try await alice.retry(message.id)
            try await waitForDelivery(ctx, alice, message.id)
            try await waitToSee(ctx, bob, message.id)
            let copies = try await backendMessages(ctx).filter { $0.text == "stubborn" }
            try ctx.expect(copies.count == 1, "backend holds \(copies.count) copies")
        },
        Scenario("nosend-held-by-publishAll", "a noSend message is held by publishAll and goes out only when published by name") { ctx in
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            let held = try await alice.send("held back", in: convo, noSend: true)
            try ctx.expect(held.delivery == .draft, "noSend message shows \(held.delivery), expected draft")
            let free = try await alice.send("goes now", in: convo)
            await alice.publishAll()
            try await waitForDelivery(ctx, alice, free.id)
            try await waitToSee(ctx, bob, free.id)
            try ctx.expect(try await alice.message(held.id)?.delivery == .draft, "publishAll published the noSend message")
            try ctx.expect(try await bob.message(held.id) == nil, "bob received the noSend message")
            try await alice.publish(held.id)
            try await waitForDelivery(ctx, alice, held.id)
            try await waitToSee(ctx, bob, held.id)
        },
        Scenario("publish-idempotent", "publishing a published message is a no-op; the backend keeps one copy") { ctx in
            let (alice, _) = try await pair(ctx)
            let message = try await alice.send("only once", in: ctx.fixture.conversation, noSend: true)
            try await alice.publish(message.id)
            try await alice.publish(message.id)
            try await waitForDelivery(ctx, alice, message.id)
            try await alice.publish(message.id)
            let copies = try await backendMessages(ctx).filter { $0.text == "only once" }
            try ctx.expect(copies.count == 1, "backend holds \(copies.count) copies")
        },
        Scenario("discard", "an unpublished message can be discarded and never leaves; a published one cannot") { ctx in
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            let events = try await alice.events(in: convo)
            let draft = try await alice.send("never mind", in: convo, noSend: true)
            try await alice.discard(draft.id)
            try ctx.expect(try await alice.message(draft.id) == nil, "discarded message still stored")
            await alice.publishAll()
            let sent = try await alice.send("this one stays", in: convo)
            try await waitToSee(ctx, bob, sent.id)
            try ctx.expect(try await bob.message(draft.id) == nil, "bob received a discarded message")
            // Bob can see the message before alice's publish call has returned (its live stream is quicker): until
            // then a discard answers `conflict` (being published); once alice knows it is published, `alreadyPublished`.
            try await ctx.eventually("alice sees her message published") {
                try await alice.message(sent.id)?.delivery.isPublished == true
            }
            try await ctx.expectError(.alreadyPublished, "discarding a published message") { try await alice.discard(sent.id) }
            var sawRemoval = false
            for await event in events {
                if case .removed(let id) = event.event, id == draft.id { sawRemoval = true; break }
            }
            try ctx.expect(sawRemoval, "no removal event for the discarded message")
        },
    ]

    // MARK: - Reconciliation and sync

    static let reconciliation: [Scenario] = [
        Scenario("id-mapping-persisted", "the backend ID is recorded in the persisted map: at prepare when the scheme knows it, else on publish or echo") { ctx in
            let (alice, _) = try await pair(ctx)
            let adapter = alice.adapter
            let message = try await alice.send("map me", in: ctx.fixture.conversation, noSend: true)
            let early = try await alice.store.read { tx in try tx.remoteID(of: message.id, backend: adapter.backend, part: 0) }
            switch adapter.capabilities.idScheme {
            case .clientAssigned, .contentDerived:
                try ctx.expect(early != nil, "scheme \(adapter.capabilities.idScheme) knows the ID at prepare but none was mapped")
            case .serverAssigned:
                try ctx.expect(early == nil, "server-assigned ID mapped before publish")
            }
            try await alice.publish(message.id)
            try await ctx.eventually("mapping after publish") {
                try await alice.store.read { tx in try tx.remoteID(of: message.id, backend: adapter.backend, part: 0) } != nil
            }
            let remote = try await alice.store.read { tx in try tx.remoteID(of: message.id, backend: adapter.backend, part: 0) }!
            let back = try await alice.store.read { tx in try tx.messageID(backend: adapter.backend, remoteID: remote) }
            try ctx.expect(back == message.id, "map is not two-way")
        },
        Scenario("duplicate-delivery-dedupe", "events delivered twice render once", injects: [.duplicateDelivery]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.duplicateDeliveries(true))
            var ids: [MessageID] = []
            for index in 0..<20 { ids.append(try await bob.send("dup \(index)", in: ctx.fixture.conversation).id) }
            for id in ids { try await waitToSee(ctx, alice, id) }
            try await Task.sleep(for: .milliseconds(100))
            let count = try await alice.store.read { tx in try tx.messageCount(in: ctx.fixture.conversation) }
            try ctx.expect(count == 20, "alice holds \(count) messages, expected 20")
            let window = try await alice.timeline(of: ctx.fixture.conversation)
            try ctx.expect(Set(window.map(\.id)).count == window.count, "the timeline shows a message twice")
        },
        Scenario("out-of-order-delivery", "events arriving out of order still give a timeline in server order", injects: [.reorderDelivery]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.reorderDeliveries(true))
            var ids: [MessageID] = []
            for index in 0..<10 { ids.append(try await bob.send("ooo \(index)", in: ctx.fixture.conversation).id) }
            for id in ids { try await waitForDelivery(ctx, bob, id) }
            try await faults.inject(.reorderDeliveries(false))
            try await alice.synchronize(ctx.fixture.conversation)
            for id in ids { try await waitToSee(ctx, alice, id) }
            let window = try await alice.timeline(of: ctx.fixture.conversation)
            let texts = window.map(\.content.text).filter { $0.hasPrefix("ooo ") }
            try ctx.expect(texts == (0..<10).map { "ooo \($0)" }, "timeline order is \(texts)")
        },
        Scenario("reconnect-storm", "twenty drops while the peer sends: every message once, in order, no gaps", injects: [.dropLive]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            var ids: [MessageID] = []
            for index in 0..<50 {
                ids.append(try await bob.send("storm \(index)", in: ctx.fixture.conversation).id)
                if index % 5 == 2 { try await faults.inject(.dropLiveStreams) }
                if index % 3 == 0 { try await Task.sleep(for: .milliseconds(5)) }
            }
            for id in ids { try await waitForDelivery(ctx, bob, id) }
            try await faults.inject(.dropLiveStreams)
            try await ctx.eventually("alice has all 50") {
                try await alice.store.read { tx in try tx.messageCount(in: ctx.fixture.conversation) } >= 50
            }
            let window = try await alice.timeline(of: ctx.fixture.conversation)
            let texts = window.map(\.content.text)
            try ctx.expect(texts == (0..<50).map { "storm \($0)" }, "alice's timeline after the storm: \(texts.count) rows, out of order or duplicated")
        },
        Scenario("delta-sync-after-gap", "after time away, one sync brings new messages and the edits, deletes and reactions made meanwhile", requires: [.editing, .deleting, .reacting]) { ctx in
            let convo = ctx.fixture.conversation
            let bob = try await ctx.client(ctx.fixture.bob)
            _ = try await bob.open(convo)
            var alice = try await ctx.client(ctx.fixture.alice, storeName: "alice-gap")
            _ = try await alice.open(convo)
            let mine = try await alice.send("before the gap", in: convo)
            let bobs1 = try await bob.send("bob one", in: convo)
            let bobs2 = try await bob.send("bob two", in: convo)
            try await waitToSee(ctx, alice, bobs2.id)
            try await waitToSee(ctx, bob, mine.id)
            await alice.stop()
            try await bob.edit(bobs1.id, text: "bob one (edited)")
            try await bob.delete(bobs2.id)
            try await bob.react(mine.id, symbol: "👍")
            let later = try await bob.send("while you were away", in: convo)
            try await waitForDelivery(ctx, bob, later.id)
            alice = try await ctx.client(ctx.fixture.alice, storeName: "alice-gap")
            _ = try await alice.open(convo)
            try ctx.expect(try await alice.message(later.id) != nil, "new message missing after sync")
            try ctx.expect(try await alice.message(bobs1.id)?.content.text == "bob one (edited)", "edit made during the gap missing")
            try ctx.expect(try await alice.message(bobs2.id)?.isDeleted == true, "delete made during the gap missing")
            try ctx.expect(try await alice.message(mine.id)?.reactions.contains { $0.symbol == "👍" } == true,
                           "reaction made during the gap missing")
            let count = try await alice.store.read { tx in try tx.messageCount(in: convo) }
            try ctx.expect(count == 4, "alice holds \(count) messages, expected 4")
        },
        Scenario("reply-references", "a reply points at the same message on both sides") { ctx in
            let (alice, bob) = try await pair(ctx)
            let original = try await alice.send("question?", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, original.id)
            let answer = try await bob.send("answer!", in: ctx.fixture.conversation, replyTo: original.id)
            try await waitToSee(ctx, alice, answer.id)
            try ctx.expect(try await alice.message(answer.id)?.content.replyTo == original.id, "alice sees the reply pointing elsewhere")
        },
        Scenario("reply-to-unsent", "a reply to a message still pending waits for it, then both arrive linked", injects: [.failPublish]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.failPublishes(count: 2))
            let original = try await alice.send("first", in: ctx.fixture.conversation)
            let reply = try await alice.send("and a follow-up", in: ctx.fixture.conversation, replyTo: original.id)
            try await waitToSee(ctx, bob, reply.id)
            try ctx.expect(try await bob.message(reply.id)?.content.replyTo == original.id, "bob's copy of the reply lost its target")
        },
    ]

    // MARK: - History

    static let history: [Scenario] = [
        Scenario("cursor-paging-stable", "paging back through a long thread while new messages land loses and repeats nothing") { ctx in
            let convo = ctx.fixture.conversation
            let bob = try await ctx.client(ctx.fixture.bob)
            _ = try await bob.open(convo)
            var sent: [MessageID] = []
            for index in 0..<120 { sent.append(try await bob.send("page \(index)", in: convo).id) }
            for id in sent.suffix(1) { try await waitForDelivery(ctx, bob, id) }
            _ = await bob.waitUntilIdle()
            let alice = try await ctx.client(ctx.fixture.alice)
            _ = try await alice.open(convo)
            var landed = 0
            while try await alice.hasOlder(in: convo) {
                if landed < 10 { sent.append(try await bob.send("late \(landed)", in: convo).id); landed += 1 }
                try await alice.loadOlder(in: convo)
            }
            try ctx.expect(landed >= 3, "paging finished after \(landed) pages; the thread should need more")
            _ = await bob.waitUntilIdle()
            try await alice.synchronize(convo)
            let expected = sent.count
            try await ctx.eventually("all \(expected) messages at alice") {
                try await alice.store.read { tx in try tx.messageCount(in: convo) } == expected
            }
            let stored = try await alice.store.read { tx in try tx.messages(in: convo, before: nil, limit: 1000) }
            try ctx.expect(Set(stored.map(\.id)) == Set(sent), "alice's messages differ from what bob sent")
            let texts = stored.reversed().map(\.content.text).filter { $0.hasPrefix("page ") }
            try ctx.expect(texts == (0..<120).map { "page \($0)" }, "history order broken")
        },
        Scenario("message-count", "the adapter's message count is what its history lists, deleted messages included",
                 requires: [.counting]) { ctx in
            let convo = ctx.fixture.conversation
            let bob = try await ctx.client(ctx.fixture.bob)
            _ = try await bob.open(convo)
            var sent: [MessageID] = []
            for index in 0..<25 { sent.append(try await bob.send("count \(index)", in: convo).id) }
            for id in sent { try await waitForDelivery(ctx, bob, id) }
            if bob.adapter is any DeletingAdapter {
                try await bob.delete(sent[3])
                _ = await bob.waitUntilIdle()
            }
            let adapter = try await ctx.fixture.makeAdapter(ctx.fixture.alice)
            guard let counting = adapter as? any MessageCountingAdapter else { throw ScenarioSkip(reason: "no count") }
            let listed = try await adapter.allMessages(in: convo, pageSize: 10).count
            let counted = try await counting.messageCount(in: convo)
            try ctx.expect(listed >= 25, "history lists \(listed) of the 25 messages sent")
            try ctx.expect(counted == listed, "the adapter counts \(counted) messages; its history lists \(listed)")
        },
        Scenario("bounded-window", "the in-memory window stays bounded however long the thread") { ctx in
            let convo = ctx.fixture.conversation
            let bob = try await ctx.client(ctx.fixture.bob)
            _ = try await bob.open(convo)
            for index in 0..<60 { try await bob.send("w \(index)", in: convo) }
            _ = await bob.waitUntilIdle()
            let adapter = try await ctx.fixture.makeAdapter(ctx.fixture.alice)
            var configuration = ctx.configuration(for: ctx.fixture.alice)
            configuration.windowLimit = 30
            configuration.pageSize = 10
            let alice = ChatClient(adapter: adapter, store: try SQLiteStore(path: ":memory:"), configuration: configuration)
            try await alice.start()
            _ = try await alice.open(convo)
            while try await alice.hasOlder(in: convo) { try await alice.loadOlder(in: convo) }
            let window = try await alice.timeline(of: convo)
            await alice.stop()
            try ctx.expect(window.count <= 30, "window holds \(window.count) messages, limit 30")
            try ctx.expect(window.first?.content.text == "w 0", "paging did not reach the first message")
        },
    ]

    // MARK: - Edits, deletes, reactions, receipts, typing

    static let mutations: [Scenario] = [
        Scenario("edit-within-window", "an edit shows at once and reaches the peer", requires: [.editing]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let message = try await alice.send("typo", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, message.id)
            try await alice.edit(message.id, text: "fixed")
            try ctx.expect(try await alice.message(message.id)?.content.text == "fixed", "edit not applied locally")
            try await waitToSee(ctx, bob, message.id) { $0.content.text == "fixed" && $0.editedAt != nil }
        },
        Scenario("edit-before-sent", "an edit made while the message is still pending waits in the queue and reaches the peer after the send", requires: [.editing], injects: [.offline]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.offline(ctx.fixture.alice, true))
            let message = try await alice.send("draft words", in: ctx.fixture.conversation)
            try await alice.edit(message.id, text: "final words")
            try ctx.expect(try await alice.message(message.id)?.content.text == "final words", "pending edit not shown locally")
            try await faults.inject(.offline(ctx.fixture.alice, false))
            if try await alice.message(message.id)?.delivery.isFailed == true { try await alice.retry(message.id) }
            try await waitToSee(ctx, bob, message.id) { $0.content.text == "final words" }
            try ctx.expect(try await alice.message(message.id)?.content.text == "final words", "alice lost her edit")
        },
        Scenario("queued-edit-refused-rollback", "an edit queued behind an unsent message and refused later is rolled back on screen", requires: [.editing], injects: [.offline, .refuseEdit]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            try await faults.inject(.offline(ctx.fixture.alice, true))
            let message = try await alice.send("first words", in: ctx.fixture.conversation)
            try await alice.edit(message.id, text: "second words")
            try await faults.inject(.refuseEdits(true))
            try await faults.inject(.offline(ctx.fixture.alice, false))
            if try await alice.message(message.id)?.delivery.isFailed == true { try await alice.retry(message.id) }
            try await waitToSee(ctx, bob, message.id)
            try await ctx.eventually("alice's refused edit rolled back") {
                try await alice.message(message.id)?.content.text == "first words"
            }
            try ctx.expect(try await bob.message(message.id)?.content.text == "first words", "bob saw the refused edit")
        },
        Scenario("edit-window-expired", "an edit after 15 minutes is refused before any request, text unchanged", requires: [.editing]) { ctx in
            let (alice, _) = try await pair(ctx)
            let message = try await alice.send("old news", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            ctx.fixture.clock.advance(by: 16 * 60)
            try await ctx.expectError(.editWindowExpired, "late edit") { try await alice.edit(message.id, text: "new news") }
            try ctx.expect(try await alice.message(message.id)?.content.text == "old news", "refused edit changed the text")
        },
        Scenario("edit-refused-rollback", "an edit the backend refuses rolls back to the original text", requires: [.editing], injects: [.refuseEdit]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            let message = try await alice.send("original", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, message.id)
            try await waitForRemoteID(ctx, alice, message.id)
            try await faults.inject(.refuseEdits(true))
            do {
                try await alice.edit(message.id, text: "rewritten")
                throw ScenarioFailure(description: "the refused edit did not throw")
            } catch let error as SwitchboardError {
                try ctx.expect(error.code == .refused, "refusal surfaced as \(error.code)")
            }
            try ctx.expect(try await alice.message(message.id)?.content.text == "original", "rollback did not restore the text")
            try await Task.sleep(for: .milliseconds(50))
            try ctx.expect(try await bob.message(message.id)?.content.text == "original", "bob saw the refused edit")
        },
        Scenario("delete-within-window", "a delete leaves a tombstone on both sides", requires: [.deleting]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let message = try await alice.send("oops", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, message.id)
            try await alice.delete(message.id)
            try ctx.expect(try await alice.message(message.id)?.isDeleted == true, "delete not applied locally")
            try await waitToSee(ctx, bob, message.id) { $0.isDeleted }
        },
        Scenario("delete-window-expired", "a delete after 2 hours is refused before any request", requires: [.deleting]) { ctx in
            let (alice, _) = try await pair(ctx)
            let message = try await alice.send("forever", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            ctx.fixture.clock.advance(by: 2 * 3600 + 60)
            try await ctx.expectError(.deleteWindowExpired, "late delete") { try await alice.delete(message.id) }
            try ctx.expect(try await alice.message(message.id)?.isDeleted == false, "refused delete removed the message")
        },
        Scenario("delete-refused-rollback", "a delete the backend refuses restores the message", requires: [.deleting], injects: [.refuseDelete]) { ctx in
            let faults = try ctx.faults()
            let (alice, _) = try await pair(ctx)
            let message = try await alice.send("keep me", in: ctx.fixture.conversation)
            try await waitForDelivery(ctx, alice, message.id)
            try await waitForRemoteID(ctx, alice, message.id)
            try await faults.inject(.refuseDeletes(true))
            try await ctx.expectError(.refused, "refused delete") { try await alice.delete(message.id) }
            let restored = try await alice.message(message.id)
            try ctx.expect(restored?.isDeleted == false && restored?.content.text == "keep me", "rollback did not restore the message")
        },
        Scenario("only-sender-edits", "someone else's message cannot be edited or deleted", requires: [.editing]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let message = try await bob.send("bob's words", in: ctx.fixture.conversation)
            try await waitToSee(ctx, alice, message.id)
            try await ctx.expectError(.notOwner, "editing another's message") { try await alice.edit(message.id, text: "mine now") }
        },
        Scenario("reaction-policy", "reactions follow the backend's policy (toggle per symbol, or replace) on both sides", requires: [.reacting]) { ctx in
            let (alice, bob) = try await pair(ctx)
            guard let reacting = alice.adapter as? any ReactingAdapter else { return }
            let message = try await bob.send("react to me", in: ctx.fixture.conversation)
            try await waitToSee(ctx, alice, message.id)
            try await alice.react(message.id, symbol: "👍")
            try await alice.react(message.id, symbol: "❤️")
            let expected: Set<String> = reacting.reactionPolicy == .onePerUser ? ["❤️"] : ["👍", "❤️"]
            let mine = Set(try await alice.message(message.id)?.reactions.filter { $0.user == ctx.fixture.alice }.map(\.symbol) ?? [])
            try ctx.expect(mine == expected, "alice shows \(mine), expected \(expected) under \(reacting.reactionPolicy)")
            try await waitToSee(ctx, bob, message.id) { message in
                Set(message.reactions.filter { $0.user == ctx.fixture.alice }.map(\.symbol)) == expected
            }
            try await alice.react(message.id, symbol: "❤️")
            let after = Set(try await alice.message(message.id)?.reactions.filter { $0.user == ctx.fixture.alice }.map(\.symbol) ?? [])
            let expectedAfter: Set<String> = reacting.reactionPolicy == .onePerUser ? [] : ["👍"]
            try ctx.expect(after == expectedAfter, "re-tap left \(after), expected \(expectedAfter)")
            try await waitToSee(ctx, bob, message.id) { message in
                Set(message.reactions.filter { $0.user == ctx.fixture.alice }.map(\.symbol)) == expectedAfter
            }
        },
        Scenario("receipts-never-step-back", "the sender sees delivered (where the backend has it) then read, and a late 'delivered' does not undo 'read'", requires: [.receipts]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let message = try await alice.send("did you read it", in: ctx.fixture.conversation)
            try await waitToSee(ctx, bob, message.id)
            // A backend without delivered receipts (XMTP-like: read receipts only) skips just that step.
            if alice.adapter.capabilities.receiptStates.contains(.delivered) {
                try await bob.markDelivered(message.id)
                try await ctx.eventually("alice sees delivered") { try await alice.message(message.id)?.delivery == .delivered }
            }
            try await bob.markRead(message.id)
            try await ctx.eventually("alice sees read") { try await alice.message(message.id)?.delivery == .read }
            try await bob.markDelivered(message.id)
            try await alice.synchronize(ctx.fixture.conversation)
            try await Task.sleep(for: .milliseconds(50))
            try ctx.expect(try await alice.message(message.id)?.delivery == .read, "receipt stepped back")
        },
        Scenario("typing-ephemeral", "typing reaches the peer, clears after idle, and is never stored", requires: [.typing]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            // Typing is ephemeral: only a peer whose live stream is up can see it, so both must be live first.
            try await ctx.eventually("both live streams connected") {
                let aliceLive = await alice.isLive(convo), bobLive = await bob.isLive(convo)
                return aliceLive && bobLive
            }
            let events = try await bob.events(in: convo)
            try await alice.setTyping(true, in: convo)
            var sawStart = false, sawStop = false
            for await event in events {
                if case .typingChanged(let user, let isTyping) = event.event, user == ctx.fixture.alice {
                    if isTyping { sawStart = true } else if sawStart { sawStop = true; break }
                }
            }
            try ctx.expect(sawStart && sawStop, "typing did not start and clear at bob")
            let stored = try await bob.store.read { tx in try tx.messageCount(in: convo) }
            try ctx.expect(stored == 0, "typing left \(stored) stored rows")
        },
    ]

    // MARK: - Attachments

    static let attachments: [Scenario] = [
        Scenario("attachment-roundtrip", "an attachment uploads with progress and the peer fetches the same bytes", requires: [.uploading]) { ctx in
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            let bytes = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let events = try await alice.events(in: convo)
            let message = try await alice.send("a file", in: convo, attachments: [.data(bytes, filename: "pic.png", mimeType: "image/png")])
            try ctx.expect(message.delivery == .uploading(progress: 0), "attachment message shows \(message.delivery)")
            try await waitForDelivery(ctx, alice, message.id)
            var sawProgress = false
            for await event in events {
                if case .uploading(let p) = event.event.message?.delivery, p > 0, p < 1 { sawProgress = true }
                if event.event.message?.delivery.isPublished == true { break }
            }
            try ctx.expect(sawProgress, "no upload progress was shown")
            try await waitToSee(ctx, bob, message.id)
            guard let received = try await bob.message(message.id)?.content.attachments.first,
                  let uploader = bob.adapter as? any UploadingAdapter else {
                throw ScenarioFailure(description: "bob's message has no attachment")
            }
            let fetched = try await uploader.download(received)
            try ctx.expect(fetched == bytes, "bob fetched different bytes")
        },
        Scenario("partial-attachment-failure", "of three attachments one fails: the message carries two, a failed placeholder holds one and retries", requires: [.uploading], injects: [.failUpload]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            try await faults.inject(.failUploads(named: "b.bin"))
            let message = try await alice.send("three files", in: convo, attachments: [
                .data(Data(repeating: 1, count: 1000), filename: "a.bin", mimeType: "application/octet-stream"),
                .data(Data(repeating: 2, count: 1000), filename: "b.bin", mimeType: "application/octet-stream"),
                .data(Data(repeating: 3, count: 1000), filename: "c.bin", mimeType: "application/octet-stream"),
            ])
            try await waitForDelivery(ctx, alice, message.id)
            let sent = try await alice.message(message.id)
            try ctx.expect(sent?.content.attachments.map(\.filename) == ["a.bin", "c.bin"], "sent message carries \(sent?.content.attachments.map(\.filename) ?? [])")
            let window = try await alice.timeline(of: convo)
            guard let placeholder = window.first(where: { $0.id != message.id && $0.content.attachments.contains { $0.filename == "b.bin" } }) else {
                throw ScenarioFailure(description: "no failed placeholder for b.bin")
            }
            try ctx.expect(placeholder.delivery.isFailed, "placeholder shows \(placeholder.delivery)")
            try await waitToSee(ctx, bob, message.id) { $0.content.attachments.count == 2 }
            try await faults.inject(.failUploads(named: nil))
            try await alice.retry(placeholder.id)
            try await waitForDelivery(ctx, alice, placeholder.id, "placeholder sent after retry")
            try await waitToSee(ctx, bob, placeholder.id) { $0.content.attachments.map(\.filename) == ["b.bin"] }
        },
        Scenario("all-attachments-fail", "when every upload fails the message itself is failed and retryable", requires: [.uploading], injects: [.failUpload]) { ctx in
            let faults = try ctx.faults()
            let (alice, _) = try await pair(ctx)
            try await faults.inject(.failUploads(named: "x.bin"))
            let message = try await alice.send("", in: ctx.fixture.conversation,
                                               attachments: [.data(Data(repeating: 9, count: 10), filename: "x.bin", mimeType: "application/octet-stream")])
            try await ctx.eventually("message fails") { try await alice.message(message.id)?.delivery.isFailed == true }
            try await faults.inject(.failUploads(named: nil))
            try await alice.retry(message.id)
            try await waitForDelivery(ctx, alice, message.id)
        },
    ]

    // MARK: - Recovery and bad input

    static let recovery: [Scenario] = [
        Scenario("restart-recovery", "messages in flight when the app dies are restored in their state and sent exactly once after restart", injects: [.offline]) { ctx in
            let faults = try ctx.faults()
            let convo = ctx.fixture.conversation
            let bob = try await ctx.client(ctx.fixture.bob)
            _ = try await bob.open(convo)
            var alice = try await ctx.client(ctx.fixture.alice, storeName: "alice-restart")
            _ = try await alice.open(convo)
            try await faults.inject(.offline(ctx.fixture.alice, true))
            var ids: [MessageID] = []
            for index in 0..<3 { ids.append(try await alice.send("in flight \(index)", in: convo).id) }
            let held = try await alice.send("held draft", in: convo, noSend: true)
            await alice.stop()
            alice = try await ctx.client(ctx.fixture.alice, storeName: "alice-restart")
            for id in ids {
                let restored = try await alice.message(id)
                try ctx.expect(restored != nil && restored?.delivery.isPublished == false, "message \(id) not restored as unsent")
            }
            try ctx.expect(try await alice.message(held.id)?.delivery == .draft, "noSend draft not restored as draft")
            try await faults.inject(.offline(ctx.fixture.alice, false))
            _ = try await alice.open(convo)
            for id in ids { try await waitForDelivery(ctx, alice, id) }
            for id in ids { try await waitToSee(ctx, bob, id) }
            let copies = try await backendMessages(ctx).filter { $0.text.hasPrefix("in flight") }
            try ctx.expect(copies.count == 3, "backend holds \(copies.count) copies, expected 3")
        },
        Scenario("bad-input", "empty text, oversize content and unknown IDs are refused with typed errors; nothing is stored") { ctx in
            let (alice, _) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            try await ctx.expectError(.emptyMessage, "empty text") { try await alice.send("", in: convo) }
            try await ctx.expectError(.emptyMessage, "whitespace text") { try await alice.send("  \n\t ", in: convo) }
            let huge = String(repeating: "x", count: alice.adapter.capabilities.maxTextBytes + 1)
            try await ctx.expectError(.contentTooLarge, "oversize text") { try await alice.send(huge, in: convo) }
            try await ctx.expectError(.unknownMessage, "reply to unknown") {
                try await alice.send("hi", in: convo, replyTo: MessageID.make())
            }
            try await ctx.expectError(.unknownMessage, "publish unknown") { try await alice.publish(MessageID.make()) }
            try await ctx.expectError(.unknownMessage, "discard unknown") { try await alice.discard(MessageID.make()) }
            if alice.adapter is any EditingAdapter {
                try await ctx.expectError(.unknownMessage, "edit unknown") { try await alice.edit(MessageID.make(), text: "x") }
            }
            let stored = try await alice.store.read { tx in try tx.messageCount(in: convo) }
            try ctx.expect(stored == 0, "refused input left \(stored) stored messages")
        },
        Scenario("failure-leaves-retryable", "an adapter that throws mid-publish leaves the message failed and retryable, never lost", injects: [.offline]) { ctx in
            let faults = try ctx.faults()
            let (alice, _) = try await pair(ctx)
            try await faults.inject(.offline(ctx.fixture.alice, true))
            let message = try await alice.send("into the void", in: ctx.fixture.conversation)
            try await ctx.eventually("message fails") { try await alice.message(message.id)?.delivery.isFailed == true }
            try ctx.expect(try await alice.timeline(of: ctx.fixture.conversation).contains { $0.id == message.id }, "failed message vanished")
            try await faults.inject(.offline(ctx.fixture.alice, false))
            try await alice.retry(message.id)
            try await waitForDelivery(ctx, alice, message.id)
        },
    ]
}

extension ChatClient {
    /// Window rows with exactly this text.
    func rowsForTest(_ conversation: ConversationID, text: String) throws -> [Message] {
        try timeline(of: conversation).filter { $0.content.text == text }
    }
}
