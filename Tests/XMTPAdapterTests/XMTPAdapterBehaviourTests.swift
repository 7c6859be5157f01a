import Foundation
import SwitchboardCore
import Testing
import XMTPCodec
import XMTPCrypto
@testable import XMTPAdapter

/// libxmtp's client semantics through the adapter against an in-process node.
@Suite("XMTP adapter behaviour", .serialized)
struct XMTPAdapterBehaviourTests {
    /// Runs `body` with a fresh group on a fresh node, cleaning both up.
    func withGroup(_ body: (TestGroup) async throws -> Void) async throws {
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        do {
            try await body(group)
        } catch {
            group.cleanUp()
            await node.stop()
            throw error
        }
        group.cleanUp()
        await node.stop()
    }

    /// Every content message a fresh reader on `database` sees, oldest first.
    func history(_ group: TestGroup, as user: UserID, database: String) async throws -> [RemoteMessage] {
        let reader = try group.adapter(user, database: database)
        var all: [RemoteMessage] = []
        var cursor: Cursor?
        repeat {
            let page = try await reader.history(in: group.conversation, before: cursor, limit: 100)
            all.insert(contentsOf: page.messages, at: 0)
            cursor = page.olderCursor
        } while cursor != nil
        return all
    }

    @Test("prepare derives the ID without the network; noSend keeps a row without an intent; publish is idempotent")
    func prepareNoSendPublish() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let message = group.outgoing("held", from: group.alice)
            let prepared = try await alice.prepare(message, noSend: true)
            let content = XMTPText("held").encoded().encoded()
            #expect(prepared.remoteID?.rawValue == XMTPMessageID.hex(groupID: group.groupID, idempotencyKey: message.id.rawValue,
                                                                     encodedContent: content))
            let id = try #require(prepared.remoteID?.rawValue)
            #expect(try alice.store.message(id)?.status == .unpublished)
            #expect(try alice.store.intent(for: id) == nil)
            #expect(try await alice.prepare(message, noSend: true) == prepared, "prepare is idempotent")
            #expect(try await group.envelopeCount() == 0, "prepare sent something")
            // publishAll skips the noSend row.
            #expect(try await alice.publishAll([prepared]).isEmpty)
            #expect(try await group.envelopeCount() == 0)
            let receipt = try await alice.publish(prepared)
            #expect(receipt.remoteID?.rawValue == id)
            #expect(receipt.serverTime != nil)
            let row = try #require(try alice.store.message(id))
            #expect(row.status == .published && row.sequenceID != nil)
            #expect(try alice.store.intent(for: id)?.state == .processed)
            let again = try await alice.publish(prepared)
            #expect(again == receipt, "publishing a published message is a no-op with the stored time")
            #expect(try await group.envelopeCount() == 1)
            await #expect(throws: SwitchboardError.self) { try await alice.discard(prepared) }
        }
    }

    @Test("prepare(noSend: false) queues an intent sealed once; publishQueued sends it; discard forgets an unpublished one")
    func intentsAndDiscard() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let queued = try await alice.prepare(group.outgoing("queued", from: group.alice), noSend: false)
            let dropped = try await alice.prepare(group.outgoing("dropped", from: group.alice), noSend: false)
            let intent = try #require(try alice.store.intent(for: queued.remoteID!.rawValue))
            #expect(intent.state == .toPublish && intent.payloadHash == Digest.sha256Hex(intent.data))
            try await alice.discard(dropped)
            #expect(try alice.store.message(dropped.remoteID!.rawValue) == nil)
            #expect(try alice.store.intent(for: dropped.remoteID!.rawValue) == nil)
            try await alice.publishQueued(in: group.conversation)
            #expect(try await group.envelopeCount() == 1)
            #expect(try alice.store.message(queued.remoteID!.rawValue)?.status == .published)
            let seen = try await history(group, as: group.bob, database: "bob-reader")
            #expect(seen.map(\.text) == ["queued"])
            #expect(seen.first?.idempotencyKey == queued.id)
        }
    }

    @Test("a lost response is retried with identical bytes: the node stores two envelopes, each side keeps one row")
    func lostResponse() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let prepared = try await alice.prepare(group.outgoing("did it go", from: group.alice), noSend: false)
            let id = try #require(prepared.remoteID?.rawValue)
            let sealed = try #require(try alice.store.intent(for: id)).data
            // The first send reached the node, but its answer never came back: alice still holds the intent.
            try await group.sendRaw(sealed, as: group.alice)
            #expect(try alice.store.message(id)?.status == .unpublished)
            _ = try await alice.publish(prepared)
            #expect(try await group.envelopeCount() == 2, "the retry re-sends the same envelope")
            #expect(try alice.store.allMessages(in: Digest.hex(group.groupID)).count == 1)
            let bob = try group.adapter(group.bob)
            let batch = try await bob.changes(in: group.conversation, after: nil, limit: 100)
            #expect(batch.changes.count == 2, "both envelopes report the same message")
            #expect(Set(batch.changes.compactMap { if case .message(let m) = $0 { m.remoteID.rawValue } else { nil } }) == [id])
            #expect(try bob.store.allMessages(in: Digest.hex(group.groupID)).count == 1)
            let first = try #require(try bob.store.message(id))
            #expect(first.sequenceID == (try alice.store.message(id))?.sequenceID, "both sides keep the earliest copy")
        }
    }

    @Test("three failed attempts mark the row Failed, its sealed bytes kept; a later publish resets it and sends once")
    func failedThenRepublish() async throws {
        try await withGroup { group in
            let prepared: PreparedMessage
            let id: String
            do {
                // The node cannot be reached: each attempt fails at the send, as in an outage.
                let cutOff = try group.unreachableAdapter(group.alice)
                prepared = try await cutOff.prepare(group.outgoing("stubborn", from: group.alice), noSend: false)
                id = try #require(prepared.remoteID?.rawValue)
                let sealed = try #require(try cutOff.store.intent(for: id)).data
                for attempt in 1...3 {
                    await #expect(throws: SwitchboardError.self) { _ = try await cutOff.publish(prepared) }
                    if attempt < 3 { #expect(try cutOff.store.message(id)?.status == .unpublished) }
                    #expect(try cutOff.store.intent(for: id)?.data == sealed)
                }
                #expect(try cutOff.store.message(id)?.status == .failed)
                #expect(try cutOff.store.intent(for: id)?.state == .error)
            }
            let alice = try group.adapter(group.alice)
            _ = try await alice.publish(prepared)
            #expect(try alice.store.message(id)?.status == .published)
            #expect(try await group.envelopeCount() == 1)
        }
    }

    @Test("a page's messages read by changes carry their edits and deletes as history builds them")
    func pageReferencesMatchHistory() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            var remotes: [RemoteID] = []
            for index in 0..<5 {
                let prepared = try await alice.prepare(group.outgoing("m\(index)", from: group.alice), noSend: false)
                _ = try await alice.publish(prepared)
                remotes.append(try #require(prepared.remoteID))
            }
            try await alice.edit(remotes[1], in: group.conversation, text: "m1 edited")
            try await alice.edit(remotes[1], in: group.conversation, text: "m1 edited twice")
            try await alice.delete(remotes[3], in: group.conversation)
            let bob = try group.adapter(group.bob)
            _ = try await bob.changes(in: group.conversation, after: nil, limit: 100)
            try await bob.setReaction("👍", isActive: true, on: remotes[2], in: group.conversation)
            let reader = try group.adapter(group.alice, database: "page-reader")
            let batch = try await reader.changes(in: group.conversation, after: nil, limit: 100)
            // Each content message's first change is its state built from what is stored when the page is read.
            var first: [RemoteID: RemoteMessage] = [:]
            for case .message(let message) in batch.changes where first[message.remoteID] == nil { first[message.remoteID] = message }
            let listed = try await history(group, as: group.alice, database: "history-reader")
            #expect(listed.count == 5 && first.count == 5)
            for message in listed {
                let read = try #require(first[message.remoteID])
                #expect(read.text == message.text && read.editedAt == message.editedAt && read.deletedAt == message.deletedAt,
                        "\(message.text)")
            }
            #expect(first[remotes[1]]?.text == "m1 edited twice" && first[remotes[3]]?.deletedAt != nil)
            #expect(first[remotes[0]]?.editedAt == nil && first[remotes[0]]?.deletedAt == nil)
        }
    }

    /// An edit, delete or reaction names the conversation it acts in: one naming this group whose target is a
    /// message of another group (of the same members) is refused by the sender's own adapter, sends nothing, and,
    /// sent anyway by a client that does not know the target, is ignored by receivers who do.
    @Test("an edit, delete or reaction naming another group than its target's is refused, sends nothing, and is ignored by receivers")
    func crossGroupChangesRefused() async throws {
        try await withGroup { group in
            let other = try await group.makeSiblingGroup()
            let alice = try group.adapter(group.alice)
            let prepared = try await alice.prepare(OutgoingMessage(id: .make(), conversation: other, sender: group.alice,
                                                                   text: "alice's words, other group", createdAt: Date()),
                                                   noSend: false)
            let target = try #require(prepared.remoteID)
            _ = try await alice.publish(prepared)
            let bob = try group.adapter(group.bob)
            _ = try await bob.changes(in: other, after: nil, limit: 100)
            let attempts: [(String, () async throws -> Void)] = [
                ("alice's edit", { try await alice.edit(target, in: group.conversation, text: "moved") }),
                ("alice's delete", { try await alice.delete(target, in: group.conversation) }),
                ("alice's reaction", { try await alice.setReaction("👍", isActive: true, on: target, in: group.conversation) }),
                ("bob's reaction", { try await bob.setReaction("👀", isActive: true, on: target, in: group.conversation) }),
            ]
            for (what, attempt) in attempts {
                let error = await #expect(throws: SwitchboardError.self, "\(what)") { try await attempt() }
                #expect(error?.code == .notFound, "\(what): \(String(describing: error))")
                #expect(error?.message.contains("is not in conversation \(group.conversation)") == true, "\(what)")
            }
            #expect(try await group.envelopeCount() == 0, "nothing was sent to the group the calls named")
            // In the right group the same calls go through.
            try await bob.setReaction("❤️", isActive: true, on: target, in: other)

            // A client that does not know the target (a blind database) can still send them to the first group.
            let blind = try group.adapter(group.alice, database: "alice-blind")
            try await blind.edit(target, in: group.conversation, text: "moved")
            try await blind.setReaction("👍", isActive: true, on: target, in: group.conversation)
            try await blind.delete(target, in: group.conversation)
            #expect(try await group.envelopeCount() == 3)
            // A reader who knows the target reports nothing for them, and the target's own group shows it unchanged.
            let reader = try group.adapter(group.bob, database: "bob-reader")
            _ = try await reader.changes(in: other, after: nil, limit: 100)
            let first = try await reader.changes(in: group.conversation, after: nil, limit: 100)
            #expect(first.changes.isEmpty, "\(first.changes)")
            for (database, adapter) in [("bob-reader", reader), ("bob-fresh", try group.adapter(group.bob, database: "bob-fresh"))] {
                let page = try await adapter.history(in: other, before: nil, limit: 10)
                #expect(page.messages.map(\.text) == ["alice's words, other group"], "\(database)")
                #expect(page.messages.allSatisfy { $0.editedAt == nil && $0.deletedAt == nil }, "\(database)")
                #expect(page.reactions.map { "\($0.user):\($0.symbol)" } == ["\(group.bob):❤️"], "\(database)")
            }
        }
    }

    @Test("edits and deletes from someone other than the sender are ignored by receivers")
    func nonSenderEditsIgnored() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let prepared = try await alice.prepare(group.outgoing("alice's words", from: group.alice), noSend: false)
            let target = try #require(prepared.remoteID)
            _ = try await alice.publish(prepared)
            // Bob's own adapter knows the target and refuses locally.
            let bob = try group.adapter(group.bob)
            _ = try await bob.changes(in: group.conversation, after: nil, limit: 100)
            await #expect(throws: SwitchboardError.self) { try await bob.edit(target, in: group.conversation, text: "bob's words") }
            // A client that does not check (a blind database) can still send them; receivers ignore them.
            let rogue = try group.adapter(group.bob, database: "bob-blind")
            try await rogue.edit(target, in: group.conversation, text: "bob's words")
            // (Publishing synced the rogue's database, so it now knows the target: a second blind one deletes.)
            let rogue2 = try group.adapter(group.bob, database: "bob-blind-2")
            try await rogue2.delete(target, in: group.conversation)
            #expect(try await group.envelopeCount() == 3)
            let reader = try group.adapter(group.alice, database: "alice-reader")
            let batch = try await reader.changes(in: group.conversation, after: nil, limit: 100)
            let states = batch.changes.compactMap { if case .message(let m) = $0 { m } else { nil } }
            #expect(states.allSatisfy { $0.text == "alice's words" && $0.editedAt == nil && $0.deletedAt == nil })
            let seen = try await history(group, as: group.alice, database: "alice-reader-2")
            #expect(seen.map(\.text) == ["alice's words"])
        }
    }

    @Test("messageCount counts the content messages over several pages, deleted ones included, as history lists them")
    func messageCount() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            var prepared: [PreparedMessage] = []
            for index in 0..<150 { prepared.append(try await alice.prepare(group.outgoing("m\(index)", from: group.alice), noSend: false)) }
            _ = try await alice.publishAll(prepared)
            let first = try #require(prepared.first?.remoteID), last = try #require(prepared.last?.remoteID)
            let bob = try group.adapter(group.bob)
            try await bob.setReaction("👍", isActive: true, on: first, in: group.conversation)
            try await bob.sendReceipt(.read, for: last, in: group.conversation)
            try await alice.edit(first, in: group.conversation, text: "edited")
            try await alice.delete(last, in: group.conversation)
            try await group.sendRaw(XMTPGroupEnvelope(groupID: group.groupID, nonce: try SecureRandom.bytes(12),
                                                      ciphertext: try SecureRandom.bytes(64)).encoded(), as: group.alice)
            #expect(try await group.envelopeCount() == 155)
            let reader = try group.adapter(group.bob, database: "counter")
            #expect(try await reader.messageCount(in: group.conversation) == 150)
            #expect(try await history(group, as: group.bob, database: "bob-history").count == 150)
            #expect(try await reader.messageCount(in: group.conversation) == 150, "counting again (rows stored) agrees")
        }
    }

    @Test("one changes call reads past the node's 100-envelope pages, up to 1,000; the count steps over such reads")
    func changesPastNodePages() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            var prepared: [PreparedMessage] = []
            for index in 0..<1050 { prepared.append(try await alice.prepare(group.outgoing("m\(index)", from: group.alice), noSend: false)) }
            _ = try await alice.publishAll(prepared)
            let texts = (0..<1050).map { "m\($0)" }
            func read(_ batch: ChangeBatch) -> [String] { batch.changes.compactMap { if case .message(let m) = $0 { m.text } else { nil } } }
            let reader = try group.adapter(group.bob, database: "reader")
            let part = try await reader.changes(in: group.conversation, after: nil, limit: 250)
            #expect(read(part) == Array(texts.prefix(250)) && part.hasMore && part.cursor == Cursor("s:250"))
            let rest = try await reader.changes(in: group.conversation, after: part.cursor, limit: 1000)
            #expect(read(rest) == Array(texts[250...]) && !rest.hasMore && rest.cursor == Cursor("s:1050"))
            let fresh = try group.adapter(group.bob, database: "fresh")
            let most = try await fresh.changes(in: group.conversation, after: nil, limit: 5000)
            #expect(read(most) == Array(texts.prefix(1000)) && most.hasMore, "a limit above 1,000 reads 1,000")
            let counter = try group.adapter(group.bob, database: "counter")
            #expect(try await counter.messageCount(in: group.conversation) == 1050)
        }
    }

    @Test("an undecryptable envelope between two valid ones skips only itself")
    func undecryptableSkipped() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            _ = try await alice.publish(try await alice.prepare(group.outgoing("one", from: group.alice), noSend: false))
            let garbage = XMTPGroupEnvelope(groupID: group.groupID, nonce: try SecureRandom.bytes(12),
                                            ciphertext: try SecureRandom.bytes(64)).encoded()
            try await group.sendRaw(garbage, as: group.alice)
            let wrongKey = try XMTPMessageMapping.seal(content: XMTPText("wrong key").encoded().encoded(), key: "k",
                                                       sender: group.alice.rawValue, groupID: group.groupID,
                                                       cipher: try GroupCipher(secret: try SecureRandom.bytes(32)))
            try await group.sendRaw(wrongKey, as: group.alice)
            _ = try await alice.publish(try await alice.prepare(group.outgoing("two", from: group.alice), noSend: false))
            let bob = try group.adapter(group.bob)
            let batch = try await bob.changes(in: group.conversation, after: nil, limit: 100)
            #expect(batch.changes.compactMap { if case .message(let m) = $0 { m.text } else { nil } } == ["one", "two"])
            #expect(batch.cursor == Cursor("s:4"), "the cursor moves past the skipped envelopes")
            #expect(try await history(group, as: group.bob, database: "bob-history").map(\.text) == ["one", "two"])
        }
    }

    @Test("an unknown content type becomes a message showing its fallback, marked as unsupported")
    func unknownContentShowsFallback() async throws {
        try await withGroup { group in
            let poll = XMTPEncodedContent(type: XMTPContentTypeID(authorityID: "example.com", typeID: "poll", versionMajor: 1, versionMinor: 0),
                                          parameters: ["question": "lunch?"], fallback: "Poll: lunch?", content: [1, 2, 3])
            let cipher = try GroupCipher(secret: group.secret)
            let sealed = try XMTPMessageMapping.seal(content: poll.encoded(), key: UUID().uuidString, sender: group.alice.rawValue,
                                                     groupID: group.groupID, cipher: cipher)
            try await group.sendRaw(sealed, as: group.alice)
            let bad = XMTPEncodedContent(type: .reaction, fallback: "Reacted badly", content: [0xFF, 0xFF])
            try await group.sendRaw(try XMTPMessageMapping.seal(content: bad.encoded(), key: "x", sender: group.alice.rawValue,
                                                                groupID: group.groupID, cipher: cipher), as: group.alice)
            let seen = try await history(group, as: group.bob, database: "bob")
            #expect(seen.map(\.text) == ["Poll: lunch?", "Reacted badly"])
            #expect(seen.first?.metadata[RemoteMessage.unsupportedContentKey] == "example.com/poll:1.0",
                     "unsupported content is marked so a bridge can log it")
        }
    }

    @Test("read receipts report .read of the latest message by someone else; delivered is a no-op")
    func readReceipts() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let first = try await alice.prepare(group.outgoing("first", from: group.alice), noSend: false)
            let second = try await alice.prepare(group.outgoing("second", from: group.alice), noSend: false)
            _ = try await alice.publish(first)
            _ = try await alice.publish(second)
            let bob = try group.adapter(group.bob)
            try await bob.sendReceipt(.delivered, for: first.remoteID!, in: group.conversation)
            #expect(try await group.envelopeCount() == 2)
            try await bob.sendReceipt(.read, for: first.remoteID!, in: group.conversation)
            let batch = try await alice.changes(in: group.conversation, after: Cursor("s:2"), limit: 10)
            #expect(batch.changes == [.receipt(RemoteReceipt(target: second.remoteID!, conversation: group.conversation,
                                                             user: group.bob, state: .read, at: receiptTime(batch)))])
        }
    }

    /// The time of the first receipt in a batch (now when there is none).
    private func receiptTime(_ batch: ChangeBatch) -> Date {
        if case .receipt(let receipt)? = batch.changes.first { return receipt.at }
        return Date()
    }

    @Test("reactions fold per user and symbol in sequence order; history reports the standing ones")
    func reactionsFold() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let prepared = try await alice.prepare(group.outgoing("react", from: group.alice), noSend: false)
            let target = try #require(prepared.remoteID)
            _ = try await alice.publish(prepared)
            let bob = try group.adapter(group.bob)
            try await bob.setReaction("👍", isActive: true, on: target, in: group.conversation)
            try await bob.setReaction("❤️", isActive: true, on: target, in: group.conversation)
            try await bob.setReaction("👍", isActive: false, on: target, in: group.conversation)
            let reader = try group.adapter(group.alice, database: "reader")
            let page = try await reader.history(in: group.conversation, before: nil, limit: 10)
            #expect(page.messages.map(\.text) == ["react"])
            #expect(page.reactions.map(\.symbol) == ["❤️"])
            #expect(page.reactions.allSatisfy { $0.user == group.bob && $0.isActive })
        }
    }

    @Test("the fold applies edits by the sender within 15 minutes, deletes within 2 hours, and ops stored before their target")
    func foldWindows() throws {
        let minute: Int64 = 60_000_000_000
        /// A published row for the fold.
        func row(_ id: String, _ content: XMTPEncodedContent, sender: String, at: Int64, seq: Int64) -> XMTPMessageRow {
            let (type, reference) = XMTPMessageMapping.classify(content)
            return XMTPMessageRow(id: id, groupID: "g", content: content.encoded(), sentAtNs: at, sender: sender, status: .published,
                                  contentType: type, referenceID: reference, sequenceID: seq, idempotencyKey: id)
        }
        let target = row("t", XMTPText("original").encoded(), sender: "alice", at: 0, seq: 1)
        let early = row("e1", XMTPEditMessage(messageID: "t", editedContent: XMTPText("first edit").encoded()).encoded(),
                        sender: "alice", at: 5 * minute, seq: 2)
        let late = row("e2", XMTPEditMessage(messageID: "t", editedContent: XMTPText("too late").encoded()).encoded(),
                       sender: "alice", at: 16 * minute, seq: 3)
        let foreign = row("e3", XMTPEditMessage(messageID: "t", editedContent: XMTPText("not yours").encoded()).encoded(),
                          sender: "bob", at: 6 * minute, seq: 4)
        let edited = XMTPMessageMapping.remoteMessage(target, references: [early, late, foreign], conversation: "c")
        #expect(edited.text == "first edit")
        #expect(edited.editedAt == XMTPMessageMapping.date(ns: 5 * minute))
        let lateDelete = row("d1", XMTPDeleteMessage(messageID: "t").encoded(), sender: "alice", at: 121 * minute, seq: 5)
        #expect(XMTPMessageMapping.remoteMessage(target, references: [lateDelete], conversation: "c").deletedAt == nil)
        let delete = row("d2", XMTPDeleteMessage(messageID: "t").encoded(), sender: "alice", at: 119 * minute, seq: 6)
        let deleted = XMTPMessageMapping.remoteMessage(target, references: [early, delete], conversation: "c")
        #expect(deleted.deletedAt != nil && deleted.text.isEmpty && deleted.editedAt == nil)
    }

    @Test("an edit stored before its target applies once the target arrives")
    func editBeforeTarget() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let prepared = try await alice.prepare(group.outgoing("typo", from: group.alice), noSend: false)
            _ = try await alice.publish(prepared)
            try await alice.edit(prepared.remoteID!, in: group.conversation, text: "fixed")
            let bob = try group.adapter(group.bob)
            // Bob sees the edit first (after the target's sequence), then pages history back to the target.
            let batch = try await bob.changes(in: group.conversation, after: Cursor("s:1"), limit: 10)
            #expect(batch.changes.isEmpty, "the edit's target is unknown yet: nothing to report")
            let page = try await bob.history(in: group.conversation, before: Cursor("s:2"), limit: 10)
            #expect(page.messages.map(\.text) == ["fixed"])
            #expect(page.messages.first?.editedAt != nil)
        }
    }

    @Test("attachments: upload encrypts and presigns, the message carries them, a peer downloads the same bytes")
    func attachmentRoundTrip() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let bytes = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let local = Attachment(filename: "f.bin", mimeType: "application/x-test", byteCount: Int64(bytes.count),
                                   sha256: Digest.sha256Hex(bytes))
            let uploaded = try await alice.upload(local, data: bytes, in: group.conversation) { _ in }
            #expect(uploaded.remoteLocation != nil && uploaded.remoteParameters["contentDigest"] != nil)
            var message = group.outgoing("caption", from: group.alice)
            message.attachments = [uploaded]
            message.metadata = ["origin": "test"]
            _ = try await alice.publish(try await alice.prepare(message, noSend: false))
            let seen = try await history(group, as: group.bob, database: "bob")
            let received = try #require(seen.first)
            #expect(received.text == "caption")
            #expect(received.metadata == ["origin": "test"])
            #expect(received.attachments.map(\.id) == [local.id])
            #expect(received.attachments.first?.mimeType == "application/x-test")
            let bob = try group.adapter(group.bob)
            #expect(try await bob.download(try #require(received.attachments.first)) == bytes)
        }
    }

    @Test("crash between prepare and publish: a new adapter on the same database publishes once; one row, one envelope")
    func crashBetweenPrepareAndPublish() async throws {
        try await withGroup { group in
            var prepared: PreparedMessage
            do {
                let doomed = try group.adapter(group.alice)
                prepared = try await doomed.prepare(group.outgoing("survivor", from: group.alice), noSend: false)
            }  // the adapter is dropped here: the process "dies" with the row and its sealed intent on disk
            let restarted = try group.adapter(group.alice)
            let id = try #require(prepared.remoteID?.rawValue)
            #expect(try restarted.store.message(id)?.status == .unpublished)
            _ = try await restarted.publish(prepared)
            _ = try await restarted.publish(prepared)
            #expect(try await group.envelopeCount() == 1)
            #expect(try restarted.store.allMessages(in: Digest.hex(group.groupID)).count == 1)
            #expect(try await history(group, as: group.bob, database: "bob").map(\.text) == ["survivor"])

            // Killed after the send but before the read-back: the restart re-sends the identical sealed bytes.
            let second = try await restarted.prepare(group.outgoing("sent twice", from: group.alice), noSend: false)
            let secondID = try #require(second.remoteID?.rawValue)
            let sealed = try #require(try restarted.store.intent(for: secondID)).data
            try await group.sendRaw(sealed, as: group.alice)  // the envelope reached the node; the process died then
            let again = try group.adapter(group.alice)
            _ = try await again.publish(second)
            #expect(try await group.envelopeCount() == 3)
            #expect(try again.store.allMessages(in: Digest.hex(group.groupID)).count == 2)
            #expect(try await history(group, as: group.bob, database: "bob2").map(\.text) == ["survivor", "sent twice"])

            // The local database is lost altogether: the payload rebuilds the row under the same ID.
            let third = try await again.prepare(group.outgoing("rebuilt", from: group.alice), noSend: true)
            let fresh = try group.adapter(group.alice, database: "alice-new-device")
            let receipt = try await fresh.publish(third)
            #expect(receipt.remoteID == third.remoteID)
            #expect(try fresh.store.message(third.remoteID!.rawValue)?.status == .published)
        }
    }

    @Test("publish of an unknown message whose payload cannot rebuild it is NotFound")
    func publishUnknown() async throws {
        try await withGroup { group in
            let alice = try group.adapter(group.alice)
            let bogus = PreparedMessage(id: .make(), conversation: group.conversation, remoteID: RemoteID("00"), payload: Data("{}".utf8))
            await #expect { _ = try await alice.publish(bogus) } throws: { ($0 as? SwitchboardError)?.code == .notFound }
        }
    }
}
