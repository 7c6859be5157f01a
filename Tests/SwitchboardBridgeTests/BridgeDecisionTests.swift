import Foundation
@testable import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import Testing

/// The bridge's decisions as tables: every case the bridge handles for a source message and for a change of an
/// already copied one, without a store or a backend.
@Suite("Bridge decisions")
struct BridgeDecisionTests {
    private static let prepared = PreparedMessage(id: "m-1", conversation: "room", remoteID: "t-1", payload: Data([1]))
    private static let staged = BridgeCopy(pair: "p", messageID: "m-1", origin: "left", sender: "alice", text: "staged",
                                           sentAt: Date(timeIntervalSince1970: 0), pendingTowards: "right")

    private static func facts(_ state: BridgeCopyState, own: Bool = false, deleted: Bool = false, reply: RemoteID? = nil,
                              replyCopy: RemoteID? = nil, mayWait: Bool = true) -> BridgeDecision.MessageFacts {
        BridgeDecision.MessageFacts(state: state, isOwnCopy: own, isDeleted: deleted, replyTo: reply, replyTargetCopy: replyCopy,
                                    repliesMayWait: mayWait)
    }

    static let messageCases: [(String, BridgeDecision.MessageFacts, BridgeDecision.Message)] = [
        ("another pair's ID", facts(.otherPair), .refuseOtherPair),
        ("another pair's ID, even as an own copy", facts(.otherPair, own: true), .refuseOtherPair),
        ("already copied", facts(.bridged("t-9")), .applyUpdates("t-9")),
        ("already copied, deleted since", facts(.bridged("t-9"), deleted: true), .applyUpdates("t-9")),
        ("pending with its stored copy", facts(.pending(prepared)), .republish(prepared)),
        ("pending, staged without bytes", facts(.pendingUnstored(staged)), .republishStaged(text: "staged")),
        ("new, the bridge's own copy", facts(.new, own: true), .skipOwnCopy),
        ("new, own copy and deleted", facts(.new, own: true, deleted: true), .skipOwnCopy),
        ("new, deleted before it was copied", facts(.new, deleted: true), .skipDeleted),
        ("new, deleted reply", facts(.new, deleted: true, reply: "r-1"), .skipDeleted),
        ("new, plain", facts(.new), .copy(replyTo: nil, unlinkedReply: nil)),
        ("new reply, target copied", facts(.new, reply: "r-1", replyCopy: "t-7"), .copy(replyTo: "t-7", unlinkedReply: nil)),
        ("new reply, target not copied, may wait", facts(.new, reply: "r-1"), .waitForReplyTarget("r-1")),
        ("new reply, target not copied, nothing more to read", facts(.new, reply: "r-1", mayWait: false),
         .copy(replyTo: nil, unlinkedReply: "r-1")),
    ]

    @Test("what becomes of a source message", arguments: messageCases)
    func message(_ name: String, _ facts: BridgeDecision.MessageFacts, _ expected: BridgeDecision.Message) {
        #expect(BridgeDecision.message(facts) == expected, "\(name)")
    }

    private static func remote(_ text: String, sender: UserID = "alice", deleted: Bool = false) -> RemoteMessage {
        RemoteMessage(remoteID: "s-1", conversation: "room", idempotencyKey: nil, sender: sender, text: text,
                      sentAt: Date(timeIntervalSince1970: 0), deletedAt: deleted ? Date(timeIntervalSince1970: 5) : nil)
    }

    private static func entry(_ text: String, sender: UserID = "alice", origin: BackendID? = "left",
                              deleted: Bool = false) -> BridgeCopy {
        BridgeCopy(pair: "p", messageID: "m-1", origin: origin, sender: sender, text: text, sentAt: Date(timeIntervalSince1970: 0),
                   deletedAt: deleted ? Date(timeIntervalSince1970: 5) : nil)
    }

    static let updateCases: [(String, RemoteMessage, Bool, BridgeCopy?, BridgeDecision.Update)] = [
        ("the bridge's own copy", remote("x"), true, entry("y"), .nothing),
        ("same text", remote("hello"), false, entry("hello"), .nothing),
        ("edited", remote("hello (edited)"), false, entry("hello"), .edit("hello (edited)")),
        ("deleted", remote("hello", deleted: true), false, entry("hello"), .delete),
        ("deleted again", remote("hello", deleted: true), false, entry("hello", deleted: true), .nothing),
        ("edited after its copy was deleted", remote("new"), false, entry("hello", deleted: true), .nothing),
        ("another sender under the ID", remote("mine now", sender: "mallory"), false, entry("hello"),
         .refuseNotOriginal(originalSender: "alice")),
        ("another sender deleting under the ID", remote("x", sender: "mallory", deleted: true), false, entry("hello"),
         .refuseNotOriginal(originalSender: "alice")),
        ("the original's sender from the other side", remote("x"), false, entry("hello", origin: "right"),
         .refuseNotOriginal(originalSender: "alice")),
        ("an entry without origin (older version), same sender", remote("edited"), false, entry("hello", origin: nil),
         .edit("edited")),
        ("no entry yet", remote("hello"), false, nil, .remember(deleted: false)),
        ("no entry yet, deleted", remote("hello", deleted: true), false, nil, .delete),
    ]

    @Test("what becomes of a change of a copied message", arguments: updateCases)
    func update(_ name: String, _ message: RemoteMessage, _ own: Bool, _ known: BridgeCopy?, _ expected: BridgeDecision.Update) {
        #expect(BridgeDecision.update(of: message, from: "left", isOwnCopy: own, known: known) == expected, "\(name)")
    }
}
