import Foundation
import SwitchboardCore
import TestSupport
import Testing

private let alice = KeyScope(backend: "socket", conversation: "room", sender: "alice")
private let victimKey = MessageID("0190f0aa-1111-7000-8000-000000000001")

private func message(_ remote: String, key: String?, sender: UserID = "alice", conversation: ConversationID = "room")
    -> RemoteMessage
{
    RemoteMessage(remoteID: RemoteID(remote), conversation: conversation, idempotencyKey: key.map(MessageID.init),
                  sender: sender, text: "t", sentAt: Date(timeIntervalSince1970: 0))
}

@Suite("MessageIdentity: carried keys are claims, not proof (DESIGN §2)")
struct MessageIdentityTests {
    @Test("normalisation: empty is no key, a UUID is lower-cased, anything else is a UUIDv5 scoped to its sender")
    func normalisation() throws {
        #expect(MessageIdentity.normalizedKey(nil, scope: alice) == nil)
        #expect(MessageIdentity.normalizedKey(MessageID(""), scope: alice) == nil)
        #expect(MessageIdentity.normalizedKey(MessageID(victimKey.rawValue.uppercased()), scope: alice) == victimKey)
        #expect(MessageIdentity.normalizedKey(victimKey, scope: alice) == victimKey)
        let one = try #require(MessageIdentity.normalizedKey(MessageID("1"), scope: alice))
        #expect(one.isCanonical)
        #expect(MessageIdentity.normalizedKey(MessageID("1"), scope: alice) == one, "the same sender's retry keeps its ID")
        var bob = alice
        bob.sender = "bob"
        #expect(MessageIdentity.normalizedKey(MessageID("1"), scope: bob) != one, "two senders' 1 are two messages")
        var otherRoom = alice
        otherRoom.conversation = "other"
        #expect(MessageIdentity.normalizedKey(MessageID("1"), scope: otherRoom) != one, "one sender's 1 in two rooms")
        for awkward in [String(repeating: "é", count: 200), "a\u{7}b", String(repeating: "k", count: 129)] {
            let id = try #require(MessageIdentity.normalizedKey(MessageID(awkward), scope: alice))
            #expect(id.isCanonical, "a key no target could carry becomes one every target can")
        }
    }

    @Test("the claim rule, case by case", arguments: [
        ("unknown ID", KeyEvidence.unknown, nil as KeyCollision?),
        ("same conversation and sender", KeyEvidence(owner: alice), nil),
        ("another sender's message", KeyEvidence(owner: KeyScope(backend: "socket", conversation: "room", sender: "bob")),
         .ownedBy(KeyScope(backend: "socket", conversation: "room", sender: "bob"))),
        ("another conversation's message", KeyEvidence(owner: KeyScope(backend: "socket", conversation: "x", sender: "alice")),
         .ownedBy(KeyScope(backend: "socket", conversation: "x", sender: "alice"))),
        ("held elsewhere (another backend or pair)", KeyEvidence(isHeldElsewhere: true), .heldElsewhere),
        ("the bridge's own copy coming back", KeyEvidence(isHeldElsewhere: true, isOwnCopy: true), nil),
        ("names another message on this backend", KeyEvidence(otherRemoteOnBackend: "r-9", owner: alice),
         .namesAnotherMessage("r-9")),
        ("names another message, even for an own copy", KeyEvidence(otherRemoteOnBackend: "r-9", isOwnCopy: true),
         .namesAnotherMessage("r-9")),
    ])
    func claimRule(_ name: String, evidence: KeyEvidence, expected: KeyCollision?) {
        #expect(MessageIdentity.claim(by: alice, evidence: evidence) == expected, "\(name)")
    }

    @Test("a message without a key gets the plain derived ID")
    func derivedWithoutKey() throws {
        let resolution = try MessageIdentity.resolve(message("r-1", key: nil), on: "socket") { _ in .unknown }
        #expect(resolution.id == MessageID.derived(backend: "socket", remote: "r-1"))
        #expect(resolution.refusedKey == nil)
    }

    @Test("a colliding key is refused: the message keeps a derived ID and the refusal says why")
    func collision() throws {
        let owner = KeyScope(backend: "xmtp", conversation: "g", sender: "victim")
        let resolution = try MessageIdentity.resolve(message("r-1", key: victimKey.rawValue), on: "socket") { candidate in
            candidate == victimKey ? KeyEvidence(owner: owner) : .unknown
        }
        #expect(resolution.id == MessageID.derived(backend: "socket", remote: "r-1"))
        #expect(resolution.refusedKey == victimKey)
        #expect(resolution.collision == .ownedBy(owner))
    }

    @Test("derived IDs squatted as keys are skipped in a fixed order; when all are taken the message is refused")
    func squattedDerivations() throws {
        let squatted = (0..<3).map { MessageIdentity.derived(backend: "socket", remote: "r-1", attempt: $0) }
        #expect(Set(squatted).count == 3)
        let resolution = try MessageIdentity.resolve(message("r-1", key: nil), on: "socket") { candidate in
            squatted.contains(candidate) ? KeyEvidence(otherRemoteOnBackend: "r-0") : .unknown
        }
        #expect(resolution.id == MessageIdentity.derived(backend: "socket", remote: "r-1", attempt: 3))
        #expect(throws: SwitchboardError.self) {
            try MessageIdentity.resolve(message("r-1", key: nil), on: "socket") { _ in KeyEvidence(isHeldElsewhere: true) }
        }
    }

    @Test("property: random honest and colliding claims never give one ID to two senders or two messages")
    func randomClaims() throws {
        var generator = SeededGenerator(seed: 27)
        for _ in 0..<200 {
            // A tiny in-memory record of who holds which ID, like the engine's message rows.
            var owners: [MessageID: (scope: KeyScope, remote: RemoteID)] = [:]
            let senders: [UserID] = ["alice", "bob", "mallory"]
            let rooms: [ConversationID] = ["r1", "r2"]
            var keys: [String] = ["1", "2", victimKey.rawValue, victimKey.rawValue.uppercased(), ""]
            for step in 0..<40 {
                let sender = senders.randomElement(using: &generator)!
                let room = rooms.randomElement(using: &generator)!
                if Int.random(in: 0..<4, using: &generator) == 0 { keys.append(UUID().uuidString.lowercased()) }
                let key = keys.randomElement(using: &generator)!
                let incoming = message("r-\(step)", key: key, sender: sender, conversation: room)
                let resolution = try MessageIdentity.resolve(incoming, on: "socket") { candidate in
                    guard let held = owners[candidate] else { return .unknown }
                    return KeyEvidence(otherRemoteOnBackend: held.remote == incoming.remoteID ? nil : held.remote,
                                       owner: held.scope)
                }
                #expect(owners[resolution.id] == nil, "a fresh message never lands on an ID someone holds")
                owners[resolution.id] = (KeyScope(incoming, on: "socket"), incoming.remoteID)
            }
        }
    }
}
