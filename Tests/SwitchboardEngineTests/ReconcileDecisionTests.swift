import Foundation
@testable import SwitchboardEngine
import SwitchboardCore
import Testing

/// The engine's reconciliation decisions as tables: every case `ChatClient` handles for an incoming message,
/// reaction and receipt, without a store or a backend.
@Suite("Reconcile decisions")
struct ReconcileDecisionTests {
    private typealias File = SwitchboardCore.Attachment  // `Testing` has an `Attachment` too
    private static let backend = BackendID("memory")
    private static let me = UserID("alice")
    private static let bob = UserID("bob")
    private static let key = MessageID("0190a3b2-0000-7000-8000-00000000000a")
    private static let derived = MessageID.derived(backend: backend, remote: "r-1")
    private static func time(_ seconds: Double) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + seconds) }

    // MARK: - Identity

    static let identityCases: [(String, ReconcileDecision.Sighting, ReconcileDecision.Identity)] = [
        ("mapped: the message seen before, nothing to record", .mapped("m-1"),
         .init(id: "m-1", isFirstSighting: false)),
        ("unmapped, its key binds: first sighting under the key", .unmapped(.init(id: key)),
         .init(id: key, isFirstSighting: true)),
        ("unmapped, no key: first sighting under the derived ID", .unmapped(.init(id: derived)),
         .init(id: derived, isFirstSighting: true)),
        ("unmapped, a key that is another party's: its own derived ID, the collision to count",
         .unmapped(.init(id: derived, refusedKey: key, collision: .ownedBy(KeyScope(backend: backend, conversation: "room",
                                                                                     sender: me)))),
         .init(id: derived, isFirstSighting: true, refusedKey: key,
               collision: .ownedBy(KeyScope(backend: backend, conversation: "room", sender: me)))),
        ("unmapped, a key naming another message on the backend", .unmapped(.init(id: derived, refusedKey: key,
                                                                                   collision: .namesAnotherMessage("r-0"))),
         .init(id: derived, isFirstSighting: true, refusedKey: key, collision: .namesAnotherMessage("r-0"))),
    ]

    @Test("which MessageID an incoming message takes", arguments: identityCases)
    func identity(_ name: String, _ sighting: ReconcileDecision.Sighting, _ expected: ReconcileDecision.Identity) {
        #expect(ReconcileDecision.identity(sighting) == expected, "\(name)")
    }

    // MARK: - The arriving row

    private static func remote(_ text: String = "hello", sender: UserID = bob, replyTo: RemoteID? = nil,
                               attachments: [File] = [], sentAt: Date = time(10), editedAt: Date? = nil,
                               deletedAt: Date? = nil) -> RemoteMessage {
        RemoteMessage(remoteID: "r-1", conversation: "room", idempotencyKey: key, sender: sender, text: text,
                      replyTo: replyTo, attachments: attachments, metadata: ["k": "v"], sentAt: sentAt, editedAt: editedAt,
                      deletedAt: deletedAt)
    }

    /// A stored row under `m-1`, by default bob's, received, with the server's time.
    private static func row(_ text: String = "hello", sender: UserID = bob, at: Date = time(10), serverTime: Bool = true,
                            editedAt: Date? = nil, deletedAt: Date? = nil, delivery: DeliveryState = .received,
                            outgoing: Bool = false, attachments: [File] = [], reactions: [Reaction] = []) -> Message {
        Message(id: "m-1", conversation: "room", sender: sender,
                content: MessageContent(text: text, attachments: attachments, metadata: ["k": "v"]), timestamp: at,
                hasServerTimestamp: serverTime, editedAt: editedAt, deletedAt: deletedAt, delivery: delivery,
                reactions: reactions, isOutgoing: outgoing)
    }

    /// The row `arriving` makes of `remote`, under `m-1`, for the local user `me`.
    private static func arriving(_ remote: RemoteMessage, replyTarget: MessageID? = nil) -> Message {
        ReconcileDecision.arriving(remote, as: "m-1", replyTarget: replyTarget, backend: backend, localUser: me)
    }

    @Test("someone else's message arrives received, with the server's times to the microsecond")
    func arrivingReceived() {
        let sent = Date(timeIntervalSince1970: 1_700_000_000.123_456_7)
        let message = Self.arriving(Self.remote(sentAt: sent, editedAt: sent.addingTimeInterval(1)))
        #expect(message.id == "m-1")
        #expect(message.sender == Self.bob)
        #expect(message.delivery == .received && !message.isOutgoing)
        #expect(message.timestamp == sent.roundedToMicroseconds && message.hasServerTimestamp)
        #expect(message.editedAt == sent.addingTimeInterval(1).roundedToMicroseconds)
        #expect(message.deletedAt == nil)
        #expect(message.content == MessageContent(text: "hello", metadata: ["k": "v"]))
    }

    @Test("the local user's own message arrives outgoing and sent")
    func arrivingOwn() {
        let message = Self.arriving(Self.remote(sender: Self.me, deletedAt: Self.time(20)))
        #expect(message.delivery == .sent && message.isOutgoing)
        #expect(message.deletedAt == Self.time(20))
    }

    static let replyCases: [(String, RemoteID?, MessageID?, MessageID?)] = [
        ("no reply", nil, nil, nil),
        ("a reply to a mapped message links its ID", "r-0", "m-0", "m-0"),
        ("a reply to an unmapped message links its derived ID", "r-0", nil,
         MessageID.derived(backend: backend, remote: "r-0")),
    ]

    @Test("what an arriving reply links to", arguments: replyCases)
    func arrivingReply(_ name: String, _ replyTo: RemoteID?, _ mapped: MessageID?, _ expected: MessageID?) {
        #expect(Self.arriving(Self.remote(replyTo: replyTo), replyTarget: mapped).content.replyTo == expected, "\(name)")
    }

    // MARK: - Landing

    private static func update(_ row: Message, confirms: Bool = false, _ events: [EventKind]) -> ReconcileDecision.Landing {
        .update(row: row, confirmsEcho: confirms, events: events.map { $0.event(row) })
    }

    enum EventKind {
        case upserted, edited, deleted

        func event(_ message: Message) -> ConversationEvent {
            switch self {
            case .upserted: .messageUpserted(message)
            case .edited: .contentEdited(message)
            case .deleted: .deleted(message)
            }
        }
    }

    private static let picture = File(id: "a-local", filename: "p.png", mimeType: "image/png", byteCount: 3, sha256: "abc",
                                      localPath: "p.png", upload: .uploading(progress: 0.5))
    private static let pictureRemote = File(id: "a-remote", filename: "p.png", mimeType: "image/png", byteCount: 3,
                                            sha256: "abc", remoteLocation: "files/p", upload: .pending)
    private static let pictureMerged = File(id: "a-local", filename: "p.png", mimeType: "image/png", byteCount: 3,
                                            sha256: "abc", localPath: "p.png", remoteLocation: "files/p", upload: .uploaded)

    static let landingCases: [(String, RemoteMessage, Message?, ReconcileDecision.Landing)] = [
        ("no row: a new message", remote(), nil, .insert(arriving(remote()))),
        ("the row already shows it: a duplicate delivery", remote(), row(), .duplicate),
        ("a refetch of an edited message already applied", remote("hello!", editedAt: time(30)),
         row("hello!", editedAt: time(30)), .duplicate),
        ("the echo of an own pending message lands on its optimistic row: sent, server time, outbox entry gone",
         remote(sender: me, sentAt: time(12)), row(sender: me, serverTime: false, delivery: .pending, outgoing: true),
         update(row(sender: me, at: time(12), delivery: .sent, outgoing: true), confirms: true, [.upserted])),
        ("the echo of an own message the outbox gave up on: sent after all", remote(sender: me),
         row(sender: me, delivery: .failed(reason: "timeout", retryable: true), outgoing: true),
         update(row(sender: me, delivery: .sent, outgoing: true), confirms: true, [.upserted])),
        ("the echo of an own message in flight", remote(sender: me), row(sender: me, delivery: .sending, outgoing: true),
         update(row(sender: me, delivery: .sent, outgoing: true), confirms: true, [.upserted])),
        ("the echo of an own message already sent, same time: a duplicate", remote(sender: me),
         row(sender: me, delivery: .sent, outgoing: true), .duplicate),
        ("the echo of an own message already read keeps its rung", remote(sender: me),
         row(sender: me, at: time(9), delivery: .read, outgoing: true),
         update(row(sender: me, delivery: .read, outgoing: true), [.upserted])),
        ("compose time equal to the server's: only the flag changes", remote(sender: me),
         row(sender: me, serverTime: false, delivery: .sent, outgoing: true),
         update(row(sender: me, delivery: .sent, outgoing: true), [.upserted])),
        ("the server moved its time", remote(sentAt: time(11)), row(),
         update(row(at: time(11)), [.upserted])),
        ("an edit", remote("hello (edited)", editedAt: time(30)), row(),
         update(row("hello (edited)", editedAt: time(30)), [.edited])),
        ("an edit without an edit time", remote("hello (edited)"), row(), update(row("hello (edited)"), [.edited])),
        ("a newer edit than the local one", remote("third", editedAt: time(40)), row("second", editedAt: time(30)),
         update(row("third", editedAt: time(40)), [.edited])),
        ("a copy older than the local edit does not undo it", remote("first", editedAt: time(20)),
         row("second", editedAt: time(30)), .duplicate),
        ("the original (no edit time) does not undo a local edit", remote("first"), row("second", editedAt: time(30)),
         .duplicate),
        ("an edit that comes with the echo", remote("hello (edited)", sender: me, sentAt: time(12), editedAt: time(30)),
         row(sender: me, delivery: .pending, outgoing: true),
         update(row("hello (edited)", sender: me, at: time(12), editedAt: time(30), delivery: .sent, outgoing: true),
                confirms: true, [.upserted, .edited])),
        ("an edit that comes with a moved time", remote("hello (edited)", sentAt: time(11), editedAt: time(30)), row(),
         update(row("hello (edited)", at: time(11), editedAt: time(30)), [.upserted, .edited])),
        ("an edit of a deleted message is not applied", remote("back again", editedAt: time(50)),
         row("", deletedAt: time(40)), .duplicate),
        ("a delete leaves a tombstone with the remote text", remote("", deletedAt: time(40)), row(),
         update(row("", deletedAt: time(40)), [.deleted])),
        ("a delete that keeps the text", remote("hello", deletedAt: time(40)), row(),
         update(row("hello", deletedAt: time(40)), [.deleted])),
        ("a delete with the echo", remote("", sender: me, deletedAt: time(40)),
         row(sender: me, delivery: .pending, outgoing: true),
         update(row("", sender: me, deletedAt: time(40), delivery: .sent, outgoing: true), confirms: true,
                [.upserted, .deleted])),
        ("a delete of a deleted message: a duplicate", remote("", deletedAt: time(45)), row("", deletedAt: time(40)),
         .duplicate),
        ("the remote attachment set wins, the local file stays", remote(attachments: [pictureRemote]),
         row(attachments: [picture]), update(row(attachments: [pictureMerged]), [.upserted])),
        ("no remote attachments: the local ones stay", remote(), row(attachments: [picture]), .duplicate),
        ("reactions and the reply link are the row's own: not replaced by the arriving message",
         remote(replyTo: "r-0"), row(reactions: [Reaction(user: me, symbol: "👍", at: time(0))]), .duplicate),
        ("a change under the backend's own ID is applied whatever its sender says: the backend owns its rows",
         remote("rewritten", sender: "mallory", editedAt: time(30)), row(),
         update(row("rewritten", editedAt: time(30)), [.edited])),
    ]

    @Test("where an incoming message lands", arguments: landingCases)
    func landing(_ name: String, _ remote: RemoteMessage, _ existing: Message?, _ expected: ReconcileDecision.Landing) {
        #expect(ReconcileDecision.landing(Self.arriving(remote), on: existing) == expected, "\(name)")
    }

    // MARK: - Reactions

    private static func reaction(_ symbol: String = "👍", by user: UserID = bob, active: Bool = true,
                                 at: Date = time(5)) -> RemoteReaction {
        RemoteReaction(target: "r-1", conversation: "room", user: user, symbol: symbol, isActive: active, at: at)
    }

    private static let thumbsUp = Reaction(user: bob, symbol: "👍", at: time(5))
    private static let heart = Reaction(user: bob, symbol: "❤️", at: time(6))
    private static let mine = Reaction(user: me, symbol: "👍", at: time(7))

    static let reactionCases: [(String, RemoteReaction, Message?, Bool, ReconcileDecision.ReactionChange)] = [
        ("target not stored yet: wait for it", reaction(), nil, false, .waitForTarget),
        ("a new reaction", reaction(), row(), false, .apply(row(reactions: [thumbsUp]))),
        ("a new reaction's time to the microsecond", reaction(at: Date(timeIntervalSince1970: 1.000_000_4)), row(), false,
         .apply(row(reactions: [Reaction(user: bob, symbol: "👍", at: Date(timeIntervalSince1970: 1))]))),
        ("the same reaction again", reaction(at: time(9)), row(reactions: [thumbsUp]), false, .unchanged),
        ("another symbol by the same user is added", reaction("❤️", at: time(6)), row(reactions: [thumbsUp]), false,
         .apply(row(reactions: [thumbsUp, heart]))),
        ("a removal", reaction(active: false), row(reactions: [thumbsUp, heart]), false, .apply(row(reactions: [heart]))),
        ("removing what is not there", reaction(active: false), row(reactions: [heart]), false, .unchanged),
        ("the local user's own reaction while a change of theirs is on its way", reaction(by: me, active: false),
         row(reactions: [mine]), true, .keepLocal),
        ("the local user's own reaction with nothing on its way", reaction(by: me, at: time(7)), row(), false,
         .apply(row(reactions: [mine]))),
        ("someone else's reaction while the local user's is on its way", reaction(), row(reactions: [mine]), true,
         .apply(row(reactions: [mine, thumbsUp]))),
        ("target not stored, even with a local change on its way", reaction(by: me), nil, true, .waitForTarget),
    ]

    @Test("what becomes of an incoming reaction", arguments: reactionCases)
    func reaction(_ name: String, _ reaction: RemoteReaction, _ target: Message?, _ inFlight: Bool,
                  _ expected: ReconcileDecision.ReactionChange) {
        let decided = ReconcileDecision.reaction(reaction, on: target, localChangeInFlight: inFlight, localUser: Self.me)
        #expect(decided == expected, "\(name)")
    }

    // MARK: - Receipts

    private static func receipt(_ state: ReceiptState, by user: UserID = bob) -> RemoteReceipt {
        RemoteReceipt(target: "r-1", conversation: "room", user: user, state: state, at: time(8))
    }

    private static func stored(_ state: ReceiptState, by user: UserID = bob) -> Receipt {
        Receipt(message: "m-1", user: user, state: state, at: time(8))
    }

    private static func own(_ delivery: DeliveryState) -> Message { row(sender: me, delivery: delivery, outgoing: true) }

    static let receiptCases: [(String, RemoteReceipt, Message?, ReceiptState?, ReconcileDecision.ReceiptChange)] = [
        ("target not stored yet: wait for it", receipt(.read), nil, nil, .waitForTarget),
        ("a first receipt on someone else's message", receipt(.delivered), row(), nil,
         .record(stored(.delivered), message: row(), climbs: false)),
        ("read after delivered", receipt(.read), row(), .delivered, .record(stored(.read), message: row(), climbs: false)),
        ("the same state again", receipt(.delivered), row(), .delivered, .stale),
        ("delivered after read never steps back", receipt(.delivered), row(), .read, .stale),
        ("a recipient's delivered climbs an own sent message", receipt(.delivered), own(.sent), nil,
         .record(stored(.delivered), message: own(.delivered), climbs: true)),
        ("a recipient's read climbs an own sent message to read", receipt(.read), own(.sent), nil,
         .record(stored(.read), message: own(.read), climbs: true)),
        ("read after delivered climbs an own delivered message", receipt(.read), own(.delivered), .delivered,
         .record(stored(.read), message: own(.read), climbs: true)),
        ("another recipient's delivered on an own read message: recorded, the message stays read",
         receipt(.delivered, by: "carol"), own(.read), nil,
         .record(stored(.delivered, by: "carol"), message: own(.read), climbs: false)),
        ("a receipt on an own message not published yet: recorded, no climb", receipt(.read), own(.pending), nil,
         .record(stored(.read), message: own(.pending), climbs: false)),
        ("the local user's own receipt on their own message: recorded, no climb", receipt(.read, by: me), own(.sent), nil,
         .record(stored(.read, by: me), message: own(.sent), climbs: false)),
    ]

    @Test("what becomes of an incoming receipt", arguments: receiptCases)
    func receipt(_ name: String, _ receipt: RemoteReceipt, _ target: Message?, _ current: ReceiptState?,
                 _ expected: ReconcileDecision.ReceiptChange) {
        #expect(ReconcileDecision.receipt(receipt, on: target, current: current, localUser: Self.me) == expected, "\(name)")
    }
}
