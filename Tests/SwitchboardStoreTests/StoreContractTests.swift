import Foundation
import SwitchboardCore
import SwitchboardStore
import Testing
import TestSupport

/// The behaviour every `Store` must show, run against each factory in `StoreFactory.all` (PostgreSQL on one
/// private cluster started for the suite).
@Suite("Store contract", .postgresCluster)
struct StoreContractTests {
    /// A failure thrown on purpose from inside a transaction.
    struct Abort: Error, Equatable {}

    @Test("A message round-trips exactly, with attachments and reactions in order", arguments: StoreFactory.all)
    func messageRoundTrip(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var message = Fixtures.message(delivery: .failed(reason: "rate limited", retryable: false))
            message.content = MessageContent(
                text: "see attached \u{0}with a NUL and émoji 🎉", replyTo: "b2f6c1de-0000-4000-8000-000000000001",
                attachments: [
                    Fixtures.attachment("b.png", upload: .uploading(progress: 0.25)),
                    Fixtures.attachment("a.png", upload: .uploaded),
                    Fixtures.attachment("c.png", upload: .failed(reason: "too large")),
                    Fixtures.attachment("d.png", upload: .pending),
                ],
                metadata: ["bridge.original_sender": "@bob:example", "bridge.original_time": "12:00"])
            message.editedAt = Fixtures.time(5)
            message.deletedAt = Fixtures.time(9.000_001)
            message.reactions = [
                Reaction(user: "zed", symbol: "👍", at: Fixtures.time(2)),
                Reaction(user: "amy", symbol: "🎉", at: Fixtures.time(1)),
                Reaction(user: "amy", symbol: "👍", at: Fixtures.time(3)),
            ]
            try store.writeBlocking { try $0.upsertMessage(message) }
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
            #expect(try store.readBlocking { try $0.message("unknown") } == nil)

            // Every delivery state survives, including the values it carries.
            let states: [DeliveryState] = [.draft, .pending, .uploading(progress: 0.375), .sending, .sent, .delivered,
                                           .read, .failed(reason: "offline", retryable: true), .received]
            for state in states {
                message.delivery = state
                try store.writeBlocking { try $0.upsertMessage(message) }
                #expect(try store.readBlocking { try $0.message(message.id) }?.delivery == state)
            }

            // An upsert replaces the attachments and reactions, it does not merge them.
            message.content.attachments = [message.content.attachments[3], message.content.attachments[0]]
            message.reactions = [Reaction(user: "amy", symbol: "❤️", at: Fixtures.time(4))]
            message.content.text = "edited"
            message.editedAt = nil
            try store.writeBlocking { try $0.upsertMessage(message) }
            #expect(try store.readBlocking { try $0.message(message.id) } == message)

            message.content.attachments = []
            message.reactions = []
            message.content.metadata = [:]
            try store.writeBlocking { try $0.upsertMessage(message) }
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
        }
    }

    @Test("insertMessageIfAbsent inserts a new message whole and leaves an existing one exactly as it was",
          arguments: StoreFactory.all)
    func insertMessageIfAbsent(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var message = Fixtures.message(text: "first")
            message.content.attachments = [Fixtures.attachment("a.png", upload: .uploaded)]
            message.reactions = [Reaction(user: "amy", symbol: "👍", at: Fixtures.time(1))]
            #expect(try store.writeBlocking { try $0.insertMessageIfAbsent(message) })
            #expect(try store.readBlocking { try $0.message(message.id) } == message)

            var other = message
            other.content = MessageContent(text: "second", attachments: [Fixtures.attachment("b.png", upload: .pending)])
            other.reactions = []
            other.delivery = .failed(reason: "x", retryable: true)
            #expect(try store.writeBlocking { try $0.insertMessageIfAbsent(other) } == false)
            #expect(try store.readBlocking { try $0.message(message.id) } == message, "the stored row, attachments and reactions stay")
        }
    }

    @Test("updateDelivery moves a message only from the expected state and leaves everything else as it was",
          arguments: StoreFactory.all)
    func updateDeliveryFromExpectedState(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var message = Fixtures.message(delivery: .pending)
            message.content.metadata = ["k": "v"]
            message.reactions = [Reaction(user: "amy", symbol: "👍", at: Fixtures.time(1))]
            message.content.attachments = [Fixtures.attachment("a.png", upload: .uploaded)]
            try store.writeBlocking { try $0.upsertMessage(message) }

            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .sent, to: .received) } == false)
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .pending, to: .received) })
            message.delivery = .received
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
            #expect(try store.writeBlocking { try $0.updateDelivery(of: "absent", from: .pending, to: .received) } == false)

            // States carrying values match on them and store them.
            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .received, to: .uploading(progress: 0.5)) })
            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .uploading(progress: 0.25), to: .sent) } == false)
            #expect(try store.writeBlocking {
                try $0.updateDelivery(of: message.id, from: .uploading(progress: 0.5), to: .failed(reason: "offline", retryable: false))
            })
            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .failed(reason: "offline", retryable: true), to: .sent) } == false)
            #expect(try store.writeBlocking { try $0.updateDelivery(of: message.id, from: .failed(reason: "offline", retryable: false), to: .sent) })
            message.delivery = .sent
            #expect(try store.readBlocking { try $0.message(message.id) } == message)
        }
    }

    @Test("updateDeliveries moves exactly the listed messages that are in the expected state", arguments: StoreFactory.all)
    func updateDeliveriesFromExpectedState(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var pending = (0..<3).map { Fixtures.message(at: Double($0), delivery: .pending) }
            pending[1].id = "quote\" and \\ backslash"  // any ID, whatever the list's encoding
            let sent = Fixtures.message(at: 5, delivery: .sent)
            let unlisted = Fixtures.message(at: 6, delivery: .pending)
            try store.writeBlocking { tx in for message in pending + [sent, unlisted] { try tx.upsertMessage(message) } }

            let moved = try store.writeBlocking {
                try $0.updateDeliveries(of: pending.map(\.id) + [sent.id, "absent"], from: .pending, to: .received)
            }
            #expect(moved == 3)
            for var message in pending {
                message.delivery = .received
                #expect(try store.readBlocking { try $0.message(message.id) } == message)
            }
            #expect(try store.readBlocking { try $0.message(sent.id) } == sent)
            #expect(try store.readBlocking { try $0.message(unlisted.id) } == unlisted)
            #expect(try store.writeBlocking { try $0.updateDeliveries(of: [], from: .pending, to: .received) } == 0)
            #expect(try store.writeBlocking { try $0.updateDeliveries(of: [sent.id], from: .sent, to: .failed(reason: "x", retryable: true)) } == 1)
            #expect(try store.readBlocking { try $0.message(sent.id)?.delivery } == .failed(reason: "x", retryable: true))
        }
    }

    @Test("Keyset paging backwards stays stable while messages arrive between pages", arguments: StoreFactory.all)
    func pagingBackwards(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            // 25 messages, several sharing a timestamp so the id breaks ties.
            let original = (0..<25).map { Fixtures.message(at: Double($0 / 3)) }
            try store.writeBlocking { transaction in
                for message in original.shuffled() { try transaction.upsertMessage(message) }
                try transaction.upsertMessage(Fixtures.message(in: "other-room", at: 100))
            }
            let newestFirst = original.sorted { $0.position > $1.position }

            var seen: [Message] = []
            var position: TimelinePosition?
            var arrivals: [Message] = []
            for _ in 0..<10 {  // bounded: a broken keyset must fail the test, not hang it
                let page = try store.readBlocking { try $0.messages(in: "room-1", before: position, limit: 7) }
                if page.isEmpty { break }
                seen += page
                position = page.last!.position
                // New messages arrive at the live end between pages; they must not shift the pages being read.
                let arrival = Fixtures.message(at: 1000 + Double(arrivals.count))
                arrivals.append(arrival)
                try store.writeBlocking { try $0.upsertMessage(arrival) }
            }
            #expect(seen.map(\.id) == newestFirst.map(\.id))
            #expect(seen == newestFirst)

            // The newest page now starts with the arrivals, newest first.
            let newest = try store.readBlocking { try $0.messages(in: "room-1", before: nil, limit: 3) }
            #expect(newest.map(\.id) == arrivals.reversed().prefix(3).map(\.id))
            #expect(try store.readBlocking { try $0.messages(in: "room-1", before: nil, limit: 0) }.isEmpty)
            #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 25 + arrivals.count)
            #expect(try store.readBlocking { try $0.messageCount(in: "other-room") } == 1)
            #expect(try store.readBlocking { try $0.messageCount(in: "empty-room") } == 0)
        }
    }

    @Test("Keyset paging forwards stays stable while older messages are inserted", arguments: StoreFactory.all)
    func pagingForwards(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let original = (0..<20).map { Fixtures.message(at: Double($0 / 2)) }
            try store.writeBlocking { transaction in
                for message in original { try transaction.upsertMessage(message) }
            }
            let oldestFirst = original.sorted { $0.position < $1.position }
            var position = TimelinePosition(timestamp: Fixtures.time(-1), id: "")
            var seen: [Message] = []
            var backfilled = 0
            for _ in 0..<10 {  // bounded: a broken keyset must fail the test, not hang it
                let page = try store.readBlocking { try $0.messages(in: "room-1", after: position, limit: 6) }
                if page.isEmpty { break }
                seen += page
                position = page.last!.position
                // History backfilled behind the reader must not shift its pages.
                backfilled += 1
                try store.writeBlocking { try $0.upsertMessage(Fixtures.message(at: -100 - Double(backfilled))) }
            }
            #expect(seen == oldestFirst)
            let afterFirst = try store.readBlocking { try $0.messages(in: "room-1", after: oldestFirst[0].position, limit: 2) }
            #expect(afterFirst.map(\.id) == oldestFirst[1...2].map(\.id))
        }
    }

    @Test("Unfinished messages are drafts, pending, uploading, sending and failed, oldest first",
          arguments: StoreFactory.all)
    func unfinishedMessages(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let states: [DeliveryState] = [.failed(reason: "x", retryable: true), .sent, .sending, .delivered,
                                           .uploading(progress: 0.5), .read, .pending, .received, .draft]
            let messages = states.enumerated().map { Fixtures.message(at: Double(10 - $0.offset), delivery: $0.element) }
            try store.writeBlocking { transaction in
                for message in messages { try transaction.upsertMessage(message) }
            }
            let unfinished = try store.readBlocking { try $0.unfinishedMessages() }
            let expected = messages.filter { !$0.delivery.isPublished }.sorted { $0.position < $1.position }
            #expect(unfinished == expected)
            #expect(unfinished.map(\.delivery.storageName) == ["draft", "pending", "uploading", "sending", "failed"])
        }
    }

    @Test("An attachment row can be updated on its own", arguments: StoreFactory.all)
    func updateAttachment(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var message = Fixtures.message(delivery: .uploading(progress: 0))
            message.content.attachments = [Fixtures.attachment("one.png", upload: .pending),
                                           Fixtures.attachment("two.png", upload: .pending)]
            try store.writeBlocking { try $0.upsertMessage(message) }

            var second = message.content.attachments[1]
            second.upload = .uploaded
            second.remoteLocation = "https://cdn.example/two"
            second.remoteParameters = ["key": "value"]
            try store.writeBlocking { try $0.updateAttachment(second, of: message.id) }
            message.content.attachments[1] = second
            #expect(try store.readBlocking { try $0.message(message.id) } == message)

            let unknownMessage = #expect(throws: SwitchboardError.self) {
                try store.writeBlocking { try $0.updateAttachment(second, of: "no-such-message") }
            }
            #expect(unknownMessage?.code == .unknownMessage)
            let stranger = Fixtures.attachment("stranger.png", upload: .pending)
            #expect(throws: SwitchboardError.self) {
                try store.writeBlocking { try $0.updateAttachment(stranger, of: message.id) }
            }
        }
    }

    @Test("Receipts are recorded once per user and replaced", arguments: StoreFactory.all)
    func receipts(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let message = Fixtures.message(delivery: .sent)
            try store.writeBlocking { transaction in
                try transaction.upsertMessage(message)
                try transaction.upsertReceipt(Receipt(message: message.id, user: "bob", state: .delivered, at: Fixtures.time(1)))
                try transaction.upsertReceipt(Receipt(message: message.id, user: "carol", state: .delivered, at: Fixtures.time(2)))
                try transaction.upsertReceipt(Receipt(message: message.id, user: "bob", state: .read, at: Fixtures.time(3)))
            }
            let receipts = try store.readBlocking { try $0.receipts(of: message.id) }
            #expect(receipts == [
                Receipt(message: message.id, user: "carol", state: .delivered, at: Fixtures.time(2)),
                Receipt(message: message.id, user: "bob", state: .read, at: Fixtures.time(3)),
            ])
            #expect(try store.readBlocking { try $0.receipts(of: "other") }.isEmpty)
            // Upserting the message again keeps its receipts.
            try store.writeBlocking { try $0.upsertMessage(message) }
            #expect(try store.readBlocking { try $0.receipts(of: message.id) }.count == 2)
        }
    }

    @Test("insertMappingIfAbsent inserts once and leaves a taken side as it was", arguments: StoreFactory.all)
    func idMapInsertIfAbsent(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let id = MessageID.make(), other = MessageID.make()
            let mapping = IDMapping(messageID: id, backend: "supabase", conversation: "room-1", remoteID: "r-1")
            #expect(try store.writeBlocking { try $0.insertMappingIfAbsent(mapping) })
            #expect(try !store.writeBlocking { try $0.insertMappingIfAbsent(mapping) }, "an identical row is not inserted again")
            // The backend ID is taken by `id`: another message cannot claim it.
            #expect(try !store.writeBlocking {
                try $0.insertMappingIfAbsent(IDMapping(messageID: other, backend: "supabase", conversation: "room-1", remoteID: "r-1"))
            })
            // `id` part 0 is taken: another backend ID for it is not recorded.
            #expect(try !store.writeBlocking {
                try $0.insertMappingIfAbsent(IDMapping(messageID: id, backend: "supabase", conversation: "room-1", remoteID: "r-2"))
            })
            #expect(try store.readBlocking { try $0.messageID(backend: "supabase", remoteID: "r-1") } == id)
            #expect(try store.readBlocking { try $0.messageID(backend: "supabase", remoteID: "r-2") } == nil)
            #expect(try store.readBlocking { try $0.mappings(of: id) }.count == 1)
            #expect(try store.readBlocking { try $0.mappings(of: other) }.isEmpty)
        }
    }

    @Test("The ID map is unique on both sides; an identical row is a no-op", arguments: StoreFactory.all)
    func idMapUniqueness(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let id = MessageID.make()
            let mapping = IDMapping(messageID: id, backend: "supabase", conversation: "room-1", remoteID: "r-1")
            // Mappings need no stored message: a bridge maps messages it never keeps.
            try store.writeBlocking { try $0.insertMapping(mapping) }
            try store.writeBlocking { try $0.insertMapping(mapping) }
            try store.writeBlocking { transaction in
                try transaction.insertMapping(IDMapping(messageID: id, backend: "supabase", conversation: "room-1",
                                                        remoteID: "r-1b", part: 1))
                try transaction.insertMapping(IDMapping(messageID: id, backend: "xmtp", conversation: "group-9",
                                                        remoteID: "r-1"))
            }
            #expect(try store.readBlocking { try $0.messageID(backend: "supabase", remoteID: "r-1") } == id)
            #expect(try store.readBlocking { try $0.messageID(backend: "supabase", remoteID: "r-1b") } == id)
            #expect(try store.readBlocking { try $0.messageID(backend: "supabase", remoteID: "missing") } == nil)
            #expect(try store.readBlocking { try $0.remoteID(of: id, backend: "supabase", part: 0) } == "r-1")
            #expect(try store.readBlocking { try $0.remoteID(of: id, backend: "supabase", part: 1) } == "r-1b")
            #expect(try store.readBlocking { try $0.remoteID(of: id, backend: "xmtp", part: 1) } == nil)
            #expect(try store.readBlocking { try $0.mappings(of: id) }.count == 3)

            // The same backend ID for another message.
            let remoteSide = #expect(throws: SwitchboardError.self) {
                try store.writeBlocking {
                    try $0.insertMapping(IDMapping(messageID: .make(), backend: "supabase", conversation: "room-1",
                                                   remoteID: "r-1"))
                }
            }
            #expect(remoteSide?.code == .conflict)
            // Another backend ID for the same message part.
            let messageSide = #expect(throws: SwitchboardError.self) {
                try store.writeBlocking {
                    try $0.insertMapping(IDMapping(messageID: id, backend: "supabase", conversation: "room-1",
                                                   remoteID: "r-2"))
                }
            }
            #expect(messageSide?.code == .conflict)
            // The same pair in another conversation is not identical either.
            let conversation = #expect(throws: SwitchboardError.self) {
                try store.writeBlocking {
                    try $0.insertMapping(IDMapping(messageID: id, backend: "supabase", conversation: "room-2",
                                                   remoteID: "r-1"))
                }
            }
            #expect(conversation?.code == .conflict)
            #expect(try store.readBlocking { try $0.mappings(of: id) }.count == 3)
            #expect(try store.readBlocking { try $0.remoteID(of: id, backend: "supabase", part: 0) } == "r-1")
        }
    }

    @Test("The outbox gives due, queued, sendable entries oldest first", arguments: StoreFactory.all)
    func outboxDue(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let prepared = PreparedMessage(id: .make(), conversation: "room-1", remoteID: "r-9",
                                           payload: Data([0, 1, 2, 255]))
            let second = Fixtures.outbox(created: 2, due: 10, prepared: prepared)
            let first = Fixtures.outbox(created: 1, due: 10)
            let third = Fixtures.outbox(created: 3, due: 9)
            let entries = [
                second, first, third,
                Fixtures.outbox(created: 0, due: 11),                        // not due yet
                Fixtures.outbox(created: 0, due: 0, noSend: true),           // held
                Fixtures.outbox(created: 0, due: 0, status: .failed),        // waits for a retry
                Fixtures.outbox(created: 0, due: 0, status: .awaitingUploads),
                Fixtures.outbox(backend: "xmtp", created: 0, due: 0),        // another backend
            ]
            try store.writeBlocking { transaction in
                for entry in entries { try transaction.upsertOutbox(entry) }
            }
            let now = Fixtures.time(10)
            #expect(try store.readBlocking { try $0.dueOutbox(backend: "memory", now: now, limit: 10) } == [first, second, third])
            #expect(try store.readBlocking { try $0.dueOutbox(backend: "memory", now: now, limit: 2) } == [first, second])
            #expect(try store.readBlocking { try $0.dueOutbox(backend: "memory", now: Fixtures.time(9), limit: 10) } == [third])
            #expect(try store.readBlocking { try $0.outbox(backend: "memory") }.count == 7)
            #expect(try store.readBlocking { try $0.outbox(backend: "xmtp") } == [entries[7]])
            #expect(try store.readBlocking { try $0.outboxEntry(second.messageID) } == second)
            #expect(try store.readBlocking { try $0.outboxEntry("none") } == nil)

            // An upsert replaces: a failed attempt moves the entry later.
            var retried = first
            retried.attempts = 1
            retried.lastError = "timeout"
            retried.nextAttemptAt = Fixtures.time(60)
            try store.writeBlocking { try $0.upsertOutbox(retried) }
            #expect(try store.readBlocking { try $0.outboxEntry(first.messageID) } == retried)
            #expect(try store.readBlocking { try $0.dueOutbox(backend: "memory", now: now, limit: 10) } == [second, third])

            try store.writeBlocking { try $0.removeOutbox(second.messageID) }
            #expect(try store.readBlocking { try $0.outboxEntry(second.messageID) } == nil)
            #expect(try store.readBlocking { try $0.dueOutbox(backend: "memory", now: now, limit: 10) } == [third])
        }
    }

    @Test("Sync cursors are set, replaced and cleared per conversation, backend and kind", arguments: StoreFactory.all)
    func cursors(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "memory", kind: .changes) } == nil)
            try store.writeBlocking { transaction in
                try transaction.setCursor("c-1", conversation: "room-1", backend: "memory", kind: .changes)
                try transaction.setCursor("h-1", conversation: "room-1", backend: "memory", kind: .history)
                try transaction.setCursor("x-1", conversation: "room-1", backend: "xmtp", kind: .changes)
                try transaction.setCursor("c-2", conversation: "room-1", backend: "memory", kind: .changes)
            }
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "memory", kind: .changes) } == "c-2")
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "memory", kind: .history) } == "h-1")
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "xmtp", kind: .changes) } == "x-1")
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-2", backend: "memory", kind: .changes) } == nil)
            try store.writeBlocking { try $0.setCursor(nil, conversation: "room-1", backend: "memory", kind: .changes) }
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "memory", kind: .changes) } == nil)
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-1", backend: "memory", kind: .history) } == "h-1")
            try store.writeBlocking { try $0.setCursor(nil, conversation: "room-9", backend: "memory", kind: .changes) }
        }
    }

    @Test("Pending operations queue per wait key, oldest first", arguments: StoreFactory.all)
    func pendingOperations(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let edit = PendingOperation(waitKey: "remote:memory:r-1", kind: "edit", payload: Data("new text".utf8),
                                        createdAt: Fixtures.time(1))
            let reaction = PendingOperation(waitKey: "remote:memory:r-2", kind: "reaction", payload: Data(),
                                            createdAt: Fixtures.time(2))
            let delete = PendingOperation(waitKey: "remote:memory:r-1", kind: "delete", payload: Data([0, 0xFF]),
                                          createdAt: Fixtures.time(3))
            let ids = try store.writeBlocking { transaction in
                [try transaction.enqueuePending(edit), try transaction.enqueuePending(reaction),
                 try transaction.enqueuePending(delete)]
            }
            #expect(ids == ids.sorted())
            #expect(Set(ids).count == 3)
            func stored(_ operation: PendingOperation, _ id: Int64) -> PendingOperation {
                var operation = operation
                operation.id = id
                return operation
            }
            #expect(try store.readBlocking { try $0.pendingOperations(waitingOn: "remote:memory:r-1") }
                    == [stored(edit, ids[0]), stored(delete, ids[2])])
            #expect(try store.readBlocking { try $0.allPendingOperations() }
                    == [stored(edit, ids[0]), stored(reaction, ids[1]), stored(delete, ids[2])])
            // An empty payload stays an empty payload.
            #expect(try store.readBlocking { try $0.pendingOperations(waitingOn: "remote:memory:r-2") }.first?.payload == Data())
            try store.writeBlocking { try $0.removePending(ids[0]) }
            #expect(try store.readBlocking { try $0.pendingOperations(waitingOn: "remote:memory:r-1") } == [stored(delete, ids[2])])
            #expect(try store.readBlocking { try $0.pendingOperations(waitingOn: "nothing") }.isEmpty)
            // The keys of a list that something waits on, in one call (any key text).
            let odd = PendingOperation(waitKey: "remote:x:\"quoted\", {braced} \\ é", kind: "edit", payload: Data(),
                                       createdAt: Fixtures.time(4))
            let oddID = try store.writeBlocking { try $0.enqueuePending(odd) }
            #expect(try store.readBlocking { try $0.waitKeys(among: ["remote:memory:r-1", "nothing", odd.waitKey, "remote:memory:r-1"]) }
                    == ["remote:memory:r-1", odd.waitKey])
            #expect(try store.readBlocking { try $0.waitKeys(among: ["nothing"]) }.isEmpty)
            #expect(try store.readBlocking { try $0.waitKeys(among: []) }.isEmpty)
            try store.writeBlocking { try $0.removePending(oddID) }
            // Row ids are never reused, even after the newest row is removed.
            try store.writeBlocking { try $0.removePending(ids[2]) }
            let next = try store.writeBlocking { try $0.enqueuePending(edit) }
            #expect(next > ids[2])
        }
    }

    @Test("A write that throws rolls back everything it did and rethrows the same error", arguments: StoreFactory.all)
    func rollback(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let kept = Fixtures.message(text: "kept")
            try store.writeBlocking { try $0.upsertMessage(kept) }
            var changed = kept
            changed.content.text = "changed"
            let lost = Fixtures.message()
            #expect(throws: Abort.self) {
                try store.writeBlocking { transaction in
                    try transaction.upsertMessage(changed)
                    try transaction.upsertMessage(lost)
                    try transaction.upsertReceipt(Receipt(message: lost.id, user: "bob", state: .read, at: Fixtures.epoch))
                    try transaction.insertMapping(IDMapping(messageID: lost.id, backend: "memory", conversation: "room-1",
                                                            remoteID: "r-lost"))
                    try transaction.upsertOutbox(Fixtures.outbox(lost.id, created: 0, due: 0))
                    try transaction.setCursor("c", conversation: "room-1", backend: "memory", kind: .changes)
                    try transaction.enqueuePending(PendingOperation(waitKey: "k", kind: "edit", payload: Data(),
                                                                    createdAt: Fixtures.epoch))
                    try transaction.removeMessage(kept.id)
                    throw Abort()
                }
            }
            try store.readBlocking { transaction throws in
                #expect(try transaction.message(kept.id) == kept)
                #expect(try transaction.message(lost.id) == nil)
                #expect(try transaction.receipts(of: lost.id).isEmpty)
                #expect(try transaction.messageID(backend: "memory", remoteID: "r-lost") == nil)
                #expect(try transaction.outboxEntry(lost.id) == nil)
                #expect(try transaction.cursor(conversation: "room-1", backend: "memory", kind: .changes) == nil)
                #expect(try transaction.allPendingOperations().isEmpty)
            }
            // A failing store call caught inside the body does not poison the transaction.
            try store.writeBlocking { transaction in
                #expect(throws: SwitchboardError.self) {
                    try transaction.insertMapping(IDMapping(messageID: "a", backend: "b", conversation: "c", remoteID: "d"))
                    try transaction.insertMapping(IDMapping(messageID: "z", backend: "b", conversation: "c", remoteID: "d"))
                }
                try transaction.upsertMessage(lost)
            }
            #expect(try store.readBlocking { try $0.message(lost.id) } == lost)
            // The store stays usable after a rollback.
            #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 2)
        }
    }

    @Test("Removing a message removes its attachments, reactions, receipts, mappings and outbox entry",
          arguments: StoreFactory.all)
    func removeCascades(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            var doomed = Fixtures.message(delivery: .pending)
            doomed.content.attachments = [Fixtures.attachment("x.png", upload: .pending)]
            doomed.reactions = [Reaction(user: "bob", symbol: "👍", at: Fixtures.epoch)]
            var survivor = Fixtures.message(delivery: .pending)
            survivor.content.attachments = [Fixtures.attachment("y.png", upload: .pending)]
            survivor.reactions = [Reaction(user: "bob", symbol: "👍", at: Fixtures.epoch)]
            try store.writeBlocking { transaction in
                for message in [doomed, survivor] {
                    try transaction.upsertMessage(message)
                    try transaction.upsertReceipt(Receipt(message: message.id, user: "bob", state: .read, at: Fixtures.epoch))
                    try transaction.insertMapping(IDMapping(messageID: message.id, backend: "memory", conversation: "room-1",
                                                            remoteID: RemoteID("r-\(message.id)")))
                    try transaction.upsertOutbox(Fixtures.outbox(message.id, created: 0, due: 0))
                }
            }
            try store.writeBlocking { try $0.removeMessage(doomed.id) }
            try store.readBlocking { transaction throws in
                #expect(try transaction.message(doomed.id) == nil)
                #expect(try transaction.receipts(of: doomed.id).isEmpty)
                #expect(try transaction.mappings(of: doomed.id).isEmpty)
                #expect(try transaction.messageID(backend: "memory", remoteID: RemoteID("r-\(doomed.id)")) == nil)
                #expect(try transaction.outboxEntry(doomed.id) == nil)
                #expect(try transaction.unfinishedMessages() == [survivor])
                #expect(try transaction.message(survivor.id) == survivor)
                #expect(try transaction.receipts(of: survivor.id).count == 1)
                #expect(try transaction.mappings(of: survivor.id).count == 1)
                #expect(try transaction.outboxEntry(survivor.id) != nil)
            }
            // Re-creating the message starts clean: nothing of the old one comes back.
            var reborn = doomed
            reborn.content.attachments = []
            reborn.reactions = []
            try store.writeBlocking { try $0.upsertMessage(reborn) }
            #expect(try store.readBlocking { try $0.message(doomed.id) } == reborn)
            #expect(try store.readBlocking { try $0.receipts(of: doomed.id) }.isEmpty)
            try store.writeBlocking { try $0.removeMessage("never-stored") }
        }
    }

    @Test("Two threads writing at once lose nothing", arguments: StoreFactory.all)
    func concurrentWriters(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            try Hammer.run(stores: [store, store], writesPerThread: 200)
            try Hammer.verify(store, threads: 2, writesPerThread: 200)
        }
    }
}

/// Concurrent writers: each thread inserts messages and increments a shared counter in read-modify-write steps.
enum Hammer {
    /// Runs one thread per store, each doing `writesPerThread` write transactions; rethrows the first failure.
    static func run(stores: [any Store], writesPerThread: Int) throws {
        let failures = Locked<[any Error]>([])
        let group = DispatchGroup()
        for (worker, store) in stores.enumerated() {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                do {
                    for index in 0..<writesPerThread {
                        try store.writeBlocking { transaction in
                            try transaction.upsertMessage(Fixtures.message(in: "hammer", at: Double(index),
                                                                           text: "worker \(worker) #\(index)"))
                            let count = Int(try transaction.cursor(conversation: "hammer", backend: "counter",
                                                                   kind: .changes)?.rawValue ?? "0") ?? -1
                            try transaction.setCursor(Cursor(String(count + 1)), conversation: "hammer",
                                                      backend: "counter", kind: .changes)
                        }
                    }
                } catch {
                    failures.withLock { $0.append(error) }
                }
            }
            thread.start()
        }
        group.wait()
        if let failure = failures.withLock({ $0.first }) { throw failure }
    }

    /// Checks every write of `run` is present.
    static func verify(_ store: any Store, threads: Int, writesPerThread: Int) throws {
        let total = threads * writesPerThread
        #expect(try store.readBlocking { try $0.messageCount(in: "hammer") } == total)
        #expect(try store.readBlocking { try $0.cursor(conversation: "hammer", backend: "counter", kind: .changes) }
                == Cursor(String(total)))
    }
}
