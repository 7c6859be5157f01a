import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing

/// The key trust rule of DESIGN §2 as a property of the bridge (issue 27): two pairs share one store and one
/// client-assigned hub; members post honest messages (fresh keys, no key, empty keys, per-sender counters, one user
/// reusing their key in both pairs), edit and delete them, and collide on purpose (reusing another party's key or
/// copy ID, in upper case too, or pre-empting a copy's row ID on the hub), with catch-ups of either pair at random
/// points. After every catch-up and at the end: no pair stopped, every copy sits in its own pair's conversation and
/// reads the latest text of its own original, and every message crossed exactly once unless the target refused it.
@Suite("Bridge: the identity rule as a property")
struct BridgeIdentityPropertyTests {
    /// How the property's world is set up.
    enum Mode: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Plain targets; members collide by claiming keys only.
        case plain
        /// Hub members also pre-empt copies' row IDs.
        case preempt
        /// The hub is a bulk target that republishes by key (as the Supabase-like adapter is).
        case bulk
        /// Both.
        case bulkPreempt

        /// Whether hub members pre-empt row IDs.
        var preemptions: Bool { self == .preempt || self == .bulkPreempt }
        /// Whether the hub is a bulk target.
        var bulkHub: Bool { self == .bulk || self == .bulkPreempt }
        /// The mode's name in test output.
        var testDescription: String { rawValue }
    }

    /// The property, for six seeds in each mode.
    @Test("random honest and colliding keys over two pairs: each message crosses once, no copy changes but by its own original, no pair stops",
          arguments: [UInt64(1), 2, 3, 4, 5, 6], Mode.allCases)
    func identityRule(seed: UInt64, mode: Mode) async throws {
        try await Self.runProperty(seed: seed, mode: mode)
    }

    /// One run of the property: 70 random steps, a settling round, one more honest message per side, the checks.
    private static func runProperty(seed: UInt64, mode: Mode) async throws {
        let started = ContinuousClock.now
        var random = SeededGenerator(seed: seed &* 7919 &+ UInt64(Mode.allCases.firstIndex(of: mode) ?? 0))
        let world = try await PropertyWorld(bulkHub: mode.bulkHub)
        defer { world.remove() }
        var run = await PropertyRun(world: world, preemptions: mode.preemptions, label: "seed \(seed) \(mode.rawValue)")
        for _ in 0..<70 {
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<34: try await run.postHonest(using: &random)
            case 34..<48: try await run.postColliding(using: &random)
            case 48..<52: try await run.reuseOwnKeyInOtherPair(using: &random)
            case 52..<66: try run.edit(using: &random)
            case 66..<74: try run.delete(using: &random)
            default:
                switch Int.random(in: 0..<3, using: &random) {
                case 0: try await run.catchUp(pair: 0)
                case 1: try await run.catchUp(pair: 1)
                default:
                    try await run.catchUp(pair: 1)
                    try await run.catchUp(pair: 0)
                }
            }
        }
        // Settle, then one more honest message on every side: both pairs still go.
        for pair in [0, 1, 0, 1] { try await run.catchUp(pair: pair) }
        for place in PropertyPlace.allCases {
            try await run.post(.honest, in: place, as: place.members[0], key: .fresh, using: &random)
        }
        for pair in [0, 1] { try await run.catchUp(pair: pair) }
        try await run.checkFinal()
        let honestHeld = await run.honestHeldCount
        print("identity property \(run.label): \(run.allOriginals.count) messages "
              + "(\(run.collidingCount) colliding, \(run.preempted.count) pre-empted keys), \(run.catchUps) catch-ups, "
              + "collisions counted \(run.collisionsCounted), held \(run.heldCount) (honest \(honestHeld)); "
              + "\(ContinuousClock.now - started)")
    }

    /// The property's smallest counterexample towards a bulk target, found by it: `BridgeTrustTests`'s pre-empted key
    /// (a room member posts under the key of a hub message the bridge has not copied yet) with the hub as a bulk
    /// target. The room message's batched copy is refused ("taken by another sender") and held; its pending ledger
    /// entry and hub mapping must be taken back, or the hub message standing under the key would be read as that
    /// copy's echo and never cross.
    @Test("a batched copy the target refuses for good is taken back: the message standing under its key crosses apart")
    func refusedBatchCopy() async throws {
        let world = try await PropertyWorld(bulkHub: true)
        defer { world.remove() }
        let key = MessageID.make()
        let hubs = try await Self.post("frank's own message", in: .hubB, as: "frank", key: key, world: world)
        let rooms = try await Self.post("carol's pre-emption", in: .room, as: "carol", key: key, world: world)
        _ = try await Self.post("carol's honest message", in: .room, as: "carol", key: .make(), world: world)
        let stats = try await world.bridges[1].catchUp()
        let held = try await world.quarantine(1).entries()
        #expect(held.map(\.remoteID) == [rooms], "carol's pre-emption is held: the hub refused its key")
        #expect(world.hub.messages(in: "B").filter { $0.sender == "bridge" }.map(\.text) == ["carol's honest message"])
        #expect(stats.keyCollisions >= 1)
        let copies = world.room.messages(in: "r").filter { $0.sender == "bridge" }
        #expect(copies.map(\.text) == ["frank's own message"], "frank's message crossed apart")
        #expect(copies.first?.metadata["bridge.origin"] == "hub-net:\(hubs)")
    }

    /// Posts `text` as `sender` in `place` under `key`; returns its backend ID.
    private static func post(_ text: String, in place: PropertyPlace, as sender: UserID, key: MessageID,
                             world: PropertyWorld) async throws -> RemoteID {
        let adapter = world.backend(place).makeAdapter(for: sender)
        let outgoing = OutgoingMessage(id: key, conversation: place.conversation, sender: sender, text: text, createdAt: Date())
        return try #require(try await adapter.publish(try await adapter.prepare(outgoing, noSend: false)).remoteID)
    }
}

/// One conversation of the property's world: pair 0 bridges the group `g` with the hub's `A`, pair 1 the room `r`
/// with the hub's `B`.
private enum PropertyPlace: CaseIterable, Hashable, CustomStringConvertible {
    case group, hubA, room, hubB

    /// The pair bridging it.
    var pair: Int { self == .group || self == .hubA ? 0 : 1 }
    /// The other side of its pair.
    var counterpart: PropertyPlace {
        switch self {
        case .group: .hubA
        case .hubA: .group
        case .room: .hubB
        case .hubB: .room
        }
    }
    /// Its conversation ID.
    var conversation: ConversationID {
        switch self {
        case .group: "g"
        case .hubA: "A"
        case .room: "r"
        case .hubB: "B"
        }
    }
    /// Its members other than the bridge (zed is in the group and in the room).
    var members: [UserID] {
        switch self {
        case .group: ["alice", "bob", "zed"]
        case .hubA: ["erin", "gus"]
        case .room: ["carol", "dave", "zed"]
        case .hubB: ["frank", "hal"]
        }
    }
    /// Whether a message's key there is whatever its sender wrote (XMTP-like envelope, Socket-style
    /// `clientMessageId`), rather than the row ID the hub derives everything from.
    var keysAreClaims: Bool { self == .group || self == .room }
    /// Its conversation's name in logs.
    var description: String { conversation.rawValue }
}

/// The keys a side's members claimed for their messages, by backend ID: what the bridge reads through a
/// `ClaimingAdapter` (nil: the message carries no key).
private final class KeyClaims: Sendable {
    private let claims = Locked<[RemoteID: MessageID?]>([:])

    /// Records that the message `remote` carries `key`.
    func set(_ key: MessageID?, for remote: RemoteID) {
        claims.withLock { $0[remote] = .some(key) }
    }

    /// `message` with the key its sender claimed, when one was recorded.
    func apply(to message: RemoteMessage) -> RemoteMessage {
        guard let claim = claims.withLock({ $0[message.remoteID] }) else { return message }
        var claimed = message
        claimed.idempotencyKey = claim
        return claimed
    }
}

/// A memory adapter whose delivered messages carry the keys their senders claimed (`KeyClaims`): upper-case UUIDs,
/// empty keys and counters, which the memory backend (lower-case UUID keys only) cannot store itself.
private final class ClaimingAdapter: ForwardingAdapter, EditingAdapter, DeletingAdapter, Sendable {
    let inner: MemoryAdapter
    private let claims: KeyClaims

    /// Wraps `inner`, rewriting the keys of its messages from `claims`.
    init(_ inner: MemoryAdapter, claims: KeyClaims) {
        self.inner = inner
        self.claims = claims
    }

    /// The inner history with the claimed keys.
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        var page = try await inner.history(in: conversation, before: cursor, limit: limit)
        page.messages = page.messages.map(claims.apply)
        return page
    }
    /// The inner changes with the claimed keys.
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        var batch = try await inner.changes(in: conversation, after: cursor, limit: limit)
        batch.changes = batch.changes.map { change in
            guard case .message(let message) = change else { return change }
            return .message(claims.apply(to: message))
        }
        return batch
    }
}

/// The hub as a bulk target that republishes by key, as the Supabase-like adapter is, so copies towards it also take
/// the bridge's batched path (and its split when one message of a batch is refused).
private final class BulkHubAdapter: ForwardingAdapter, BulkPublishingAdapter, EditingAdapter, DeletingAdapter, Sendable {
    let inner: MemoryAdapter

    /// Wraps `inner`.
    init(_ inner: MemoryAdapter) { self.inner = inner }

    /// Small, so pages split into several batches.
    var bulkPublishLimit: Int { 3 }
    /// The hub's row ID is the key, and a repeat by the same sender is ignored.
    var republishesByKey: Bool { true }

    /// Publishes each in order (the first refusal fails the whole call, as a bulk request would).
    func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt] {
        var receipts: [PublishReceipt] = []
        for message in prepared { receipts.append(try await inner.publish(message)) }
        return receipts
    }
}

/// The backends, the store and the two bridges of one property run.
private final class PropertyWorld: Sendable {
    /// The group (content-derived IDs, keys are claims).
    let group: MemoryBackend
    /// The room (server-assigned IDs, keys are claims).
    let room: MemoryBackend
    /// The hub both pairs copy to (row ID = key).
    let hub: MemoryBackend
    /// Keys claimed in the group.
    let groupClaims = KeyClaims()
    /// Keys claimed in the room.
    let roomClaims = KeyClaims()
    /// The store both pairs share.
    let store: SQLiteStore
    /// Whether the hub is a bulk target.
    let bulkHub: Bool
    /// The two bridges: pair 0 (group ↔ A) and pair 1 (room ↔ B).
    let bridges: [Bridge]
    private let directory: URL

    /// Creates the backends, their conversations, the store and the bridges.
    init(bulkHub: Bool) async throws {
        group = try MemoryBackend(scheme: .contentDerived, backendID: "group-net")
        room = try MemoryBackend(scheme: .serverAssigned, backendID: "room-net")
        hub = try MemoryBackend(scheme: .clientAssigned, backendID: "hub-net")
        for place in PropertyPlace.allCases {
            let backend = place == .group ? group : place == .room ? room : hub
            try backend.createConversation(place.conversation, members: place.members + ["bridge"])
        }
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("bridge-identity-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        store = try SQLiteStore(path: directory.appendingPathComponent("bridge.sqlite").path)
        self.bulkHub = bulkHub
        let hubAdapter: any ChatAdapter = bulkHub ? BulkHubAdapter(hub.makeAdapter(for: "bridge")) : hub.makeAdapter(for: "bridge")
        bridges = [
            try await Bridge(a: BridgeSide(name: "group", adapter: ClaimingAdapter(group.makeAdapter(for: "bridge"), claims: groupClaims),
                                     conversation: "g"),
                       b: BridgeSide(name: "hub", adapter: hubAdapter, conversation: "A"), store: store),
            try await Bridge(a: BridgeSide(name: "room", adapter: ClaimingAdapter(room.makeAdapter(for: "bridge"), claims: roomClaims),
                                     conversation: "r"),
                       b: BridgeSide(name: "hub", adapter: hubAdapter, conversation: "B"), store: store),
        ]
    }

    /// The backend holding `place`.
    func backend(_ place: PropertyPlace) -> MemoryBackend {
        switch place {
        case .group: group
        case .room: room
        case .hubA, .hubB: hub
        }
    }

    /// The quarantine of `pair`.
    func quarantine(_ pair: Int) -> BridgeQuarantine {
        pair == 0 ? BridgeQuarantine(store: store, a: "g", b: "A") : BridgeQuarantine(store: store, a: "r", b: "B")
    }

    /// Closes the store and removes the folder.
    func remove() {
        store.close()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One message a member posted, as the test knows it.
private struct PropertyOriginal {
    /// Whether it was posted as an honest message or to collide with another party's key.
    enum Kind { case honest, colliding }

    /// Where it was posted.
    let place: PropertyPlace
    /// Its ID there.
    let remote: RemoteID
    /// Its author.
    let sender: UserID
    /// Honest or colliding.
    let kind: Kind
    /// The UUID key it carries, lower-cased (nil: no key, or a key that is not a UUID).
    let key: MessageID?
    /// Its latest text.
    var text: String
    /// Whether its author deleted it.
    var deleted = false
    /// Whether a catch-up of its pair ran while it existed (undeleted).
    var seen = false
    /// Whether it was deleted before any catch-up of its pair saw it.
    var deletedUnseen = false
    /// Whether it was ever found in its pair's quarantine.
    var everHeld = false
}

/// The kind of key an honest message carries.
private enum HonestKey: CaseIterable {
    /// A fresh UUID (stored by the backend).
    case fresh
    /// No key at all (claim side only).
    case none
    /// An empty key, which is no key (claim side only).
    case empty
    /// The sender's own counter, `1`, `2`, … (claim side only; Socket-style clients number their messages).
    case counter
}

/// The state of one property run: the messages posted, what the bridges reported, and the checks.
private struct PropertyRun {
    /// The backends, store and bridges.
    let world: PropertyWorld
    /// Whether hub members pre-empt copies' row IDs.
    let preemptions: Bool
    /// The run's name in failure messages.
    let label: String
    /// Every message posted, by place and backend ID.
    var originals: [PropertyPlace: [RemoteID: PropertyOriginal]] = [:]
    /// Order of posting, for picking messages at random.
    var order: [(PropertyPlace, RemoteID)] = []
    /// Keys a hub member pre-empted (posted as a row ID before the copy that was to carry it).
    var preempted: Set<MessageID> = []
    /// Per place and sender, the next counter key.
    var counters: [String: Int] = [:]
    /// Zed's keys already reused in the other pair.
    var reusedByZed: Set<MessageID> = []
    /// Per pair, each original's text and deletion as of the pair's last catch-up.
    var snapshots: [[RemoteID: (text: String, deleted: Bool)]] = [[:], [:]]
    /// The latest stats of each bridge.
    var stats: [BridgeStats] = [BridgeStats(), BridgeStats()]
    /// How many catch-ups ran.
    var catchUps = 0
    /// The number in the next message text (and its send time, so content-derived IDs repeat from run to run).
    var nextText = 0

    /// A run in `world`.
    init(world: PropertyWorld, preemptions: Bool, label: String) async {
        self.world = world
        self.preemptions = preemptions
        self.label = label
    }

    /// How many colliding messages were posted.
    var collidingCount: Int { allOriginals.filter { $0.kind == .colliding }.count }
    /// Collisions both bridges counted.
    var collisionsCounted: Int { stats[0].keyCollisions + stats[1].keyCollisions }
    /// Changes held in both quarantines now.
    var heldCount: Int { stats[0].quarantined + stats[1].quarantined }
    /// Honest messages held now.
    var honestHeldCount: Int {
        get async {
            var held: [BridgeQuarantine.Entry] = []
            for side in 0..<2 { held += (try? await world.quarantine(side).entries()) ?? [] }
            return held.compactMap { original(for: $0) }.filter { $0.kind == .honest }.count
        }
    }
    /// Every message posted.
    var allOriginals: [PropertyOriginal] { originals.values.flatMap(\.values) }

    // MARK: Actions

    /// A fresh lower-case UUID from the generator.
    private static func uuid(using random: inout SeededGenerator) -> MessageID {
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let uuid = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                               bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return MessageID(uuid.uuidString.lowercased())
    }

    /// What a message's key is made of when it is posted.
    enum PostKey {
        /// A fresh UUID, or a kind of honest claim.
        case honest(HonestKey)
        /// Stored as this lower-case UUID by the backend.
        case stored(MessageID)
        /// Stored under a fresh key, claimed as this text.
        case claimed(MessageID)

        /// A fresh UUID.
        static var fresh: PostKey { .honest(.fresh) }
    }

    /// Posts a message as `sender` in `place`; false when the backend refused it (a key it will not take twice).
    @discardableResult
    mutating func post(_ kind: PropertyOriginal.Kind, in place: PropertyPlace, as sender: UserID, key: PostKey,
                       using random: inout SeededGenerator) async throws -> Bool {
        nextText += 1
        let text = "\(place) \(sender) m\(nextText)"
        var stored = Self.uuid(using: &random)
        var claim: MessageID??  // .some: the key the bridge will read instead of the stored one
        switch key {
        case .honest(.fresh): break
        case .honest(.none): claim = .some(nil)
        case .honest(.empty): claim = .some(MessageID(""))
        case .honest(.counter):
            let counter = "\(place)|\(sender)"
            counters[counter, default: 0] += 1
            claim = .some(MessageID(String(counters[counter] ?? 1)))
        case .stored(let id): stored = id
        case .claimed(let id): claim = .some(id)
        }
        let adapter = world.backend(place).makeAdapter(for: sender)
        let outgoing = OutgoingMessage(id: stored, conversation: place.conversation, sender: sender, text: text,
                                       createdAt: Date(timeIntervalSince1970: 1_700_000_000 + Double(nextText)))
        let remote: RemoteID
        do {
            guard let published = try await adapter.publish(try await adapter.prepare(outgoing, noSend: false)).remoteID else {
                Issue.record("\(label): the memory backend published without an ID")
                return false
            }
            remote = published
        } catch let error as SwitchboardError where error.code == .conflict {
            return false  // the backend keeps a key once per conversation (the hub: once at all)
        }
        if let claim { (place == .group ? world.groupClaims : world.roomClaims).set(claim, for: remote) }
        let carried: MessageID? = switch claim {
        case .none: stored
        case .some(let claimed): claimed.flatMap { UUIDText.canonical($0.rawValue).map(MessageID.init) }
        }
        originals[place, default: [:]][remote] = PropertyOriginal(place: place, remote: remote, sender: sender, kind: kind,
                                                                   key: carried, text: text)
        order.append((place, remote))
        return true
    }

    /// An honest message by a random member of a random place, under a random kind of key its place allows.
    mutating func postHonest(using random: inout SeededGenerator) async throws {
        let place = PropertyPlace.allCases.randomElement(using: &random)!
        let sender = place.members.randomElement(using: &random)!
        let key: HonestKey = place.keysAreClaims ? HonestKey.allCases.randomElement(using: &random)! : .fresh
        try await post(.honest, in: place, as: sender, key: .honest(key), using: &random)
    }

    /// A message whose key is another party's: the key or copy ID of a message of the other pair, or of another
    /// sender of the same pair; claimed as is or in upper case where keys are claims, or pre-empted as a hub row ID
    /// (with `preemptions`) before the copy that was to carry it exists.
    mutating func postColliding(using random: inout SeededGenerator) async throws {
        let place = PropertyPlace.allCases.randomElement(using: &random)!
        let sender = place.members.randomElement(using: &random)!
        if !place.keysAreClaims && !preemptions { return }
        var candidates = Set(allOriginals.filter { $0.sender != sender || $0.place.pair != place.pair }.compactMap(\.key))
        // The copies' IDs, as readers see them (the row ID on the hub, the key elsewhere), of others' messages.
        for target in PropertyPlace.allCases {
            for row in world.backend(target).messages(in: target.conversation) where row.sender == "bridge" {
                let origin = original(ofCopy: row, in: target)
                if let origin, origin.sender == sender, origin.place.pair == place.pair { continue }
                candidates.insert(row.idempotencyKey)
            }
        }
        if !place.keysAreClaims {
            // A hub row ID must be new on the hub: only a key whose copy is not made yet can be pre-empted.
            let onHub = Set(PropertyPlace.allCases.filter { !$0.keysAreClaims }
                .flatMap { world.hub.messages(in: $0.conversation).map(\.idempotencyKey) })
            candidates.subtract(onHub)
        }
        guard let victim = candidates.sorted(by: { $0.rawValue < $1.rawValue }).randomElement(using: &random) else { return }
        if place.keysAreClaims {
            let claim = Bool.random(using: &random) ? victim : MessageID(victim.rawValue.uppercased())
            try await post(.colliding, in: place, as: sender, key: .claimed(claim), using: &random)
        } else if try await post(.colliding, in: place, as: sender, key: .stored(victim), using: &random) {
            preempted.insert(victim)
        }
    }

    /// Zed, a member of the group and of the room, posts again under the key of one of their own messages, in the
    /// other pair: honest, and a collision for the bridge (keys belong to one conversation).
    mutating func reuseOwnKeyInOtherPair(using random: inout SeededGenerator) async throws {
        let own = allOriginals.filter { original in
            original.sender == "zed" && original.kind == .honest && original.key.map { !reusedByZed.contains($0) } == true
        }.sorted { $0.remote.rawValue < $1.remote.rawValue }
        guard let first = own.randomElement(using: &random), let key = first.key else { return }
        let other: PropertyPlace = first.place == .group ? .room : .group
        if try await post(.honest, in: other, as: "zed", key: .stored(key), using: &random) { reusedByZed.insert(key) }
    }

    /// A random undeleted message, edited by its author.
    mutating func edit(using random: inout SeededGenerator) throws {
        guard let (place, remote) = randomUndeleted(using: &random), var original = originals[place]?[remote] else { return }
        nextText += 1
        original.text = "\(place) \(original.sender) edit \(nextText)"
        try world.backend(place).edit(remote, in: place.conversation, text: original.text, as: original.sender)
        originals[place]?[remote] = original
    }

    /// A random undeleted message, deleted by its author.
    mutating func delete(using random: inout SeededGenerator) throws {
        guard let (place, remote) = randomUndeleted(using: &random), var original = originals[place]?[remote] else { return }
        try world.backend(place).delete(remote, in: place.conversation, as: original.sender)
        original.deleted = true
        original.deletedUnseen = !original.seen
        originals[place]?[remote] = original
    }

    /// A random message still standing.
    private func randomUndeleted(using random: inout SeededGenerator) -> (PropertyPlace, RemoteID)? {
        order.filter { originals[$0.0]?[$0.1]?.deleted == false }.randomElement(using: &random)
    }

    /// Catches `pair` up (it must not throw: no message can stop a pair), then checks every copy of both pairs and
    /// this pair's quarantine.
    mutating func catchUp(pair: Int) async throws {
        catchUps += 1
        do {
            stats[pair] = try await world.bridges[pair].catchUp()
        } catch {
            Issue.record("\(label): pair \(pair)'s catch-up failed: \(error)")
        }
        var snapshot: [RemoteID: (text: String, deleted: Bool)] = [:]
        for place in PropertyPlace.allCases where place.pair == pair {
            for (remote, var original) in originals[place] ?? [:] {
                if !original.deleted { original.seen = true }
                originals[place]?[remote] = original
                snapshot[remote] = (original.text, original.deleted)
            }
        }
        snapshots[pair] = snapshot
        for entry in try await world.quarantine(pair).entries() {
            guard var held = original(for: entry) else {
                Issue.record("\(label): pair \(pair) holds \(entry.kind) \(entry.remoteID) from \(entry.source), posted by nobody")
                continue
            }
            held.everHeld = true
            originals[held.place]?[held.remote] = held
            // The target's refusal of the key: another sender's message stands under it there, here or in the other
            // conversation (the hub's row IDs are global), or the ID map already names that row as another message.
            let refused = ["taken by another sender", "already exists in another conversation", "already mapped as hub-net/"]
                .contains { entry.reason.contains($0) }
            let what = "\(label): \(held.kind) \(held.place) message \(held.remote) by \(held.sender)"
            #expect(refused, "\(what) is held for a reason other than the target's refusal: \(entry.reason)")
            let preempted = held.key.map(self.preempted.contains) ?? false
            #expect(held.kind == .colliding || preempted, "\(what) is held, and no one pre-empted its key: \(entry.reason)")
        }
        for checked in 0..<2 { checkCopies(of: checked) }
    }

    // MARK: Checks

    /// The original a quarantine entry holds.
    private func original(for entry: BridgeQuarantine.Entry) -> PropertyOriginal? {
        PropertyPlace.allCases.filter { world.backend($0).backendID == entry.source }
            .lazy.compactMap { originals[$0]?[entry.remoteID] }.first
    }

    /// The original a copy on `target` names in `bridge.origin` (the bridge sets it; a source's own is dropped).
    private func original(ofCopy row: MemoryMessageRow, in target: PropertyPlace) -> PropertyOriginal? {
        guard let origin = row.metadata["bridge.origin"], let colon = origin.firstIndex(of: ":") else { return nil }
        let backend = BackendID(String(origin[..<colon])), remote = RemoteID(String(origin[origin.index(after: colon)...]))
        return PropertyPlace.allCases.filter { world.backend($0).backendID == backend }
            .lazy.compactMap { originals[$0]?[remote] }.first
    }

    /// The copies on each side of `pair`: each names an original of its own pair's other side, at most one per
    /// original, reading that original's text (or deleted) as of the pair's last catch-up.
    private func checkCopies(of pair: Int) {
        for target in PropertyPlace.allCases where target.pair == pair {
            var seen: Set<RemoteID> = []
            for row in world.backend(target).messages(in: target.conversation) where row.sender == "bridge" {
                guard let original = original(ofCopy: row, in: target), original.place == target.counterpart else {
                    let origin = row.metadata["bridge.origin"] ?? "-", source = target.counterpart
                    Issue.record("\(label): copy \(row.remoteID) in \(target) ('\(row.text)') is of no message of \(source): \(origin)")
                    continue
                }
                let what = "\(label): the copy in \(target) of \(original.remote) by \(original.sender)"
                #expect(seen.insert(original.remote).inserted, "\(what) is not the only one")
                guard let expected = snapshots[pair][original.remote] else {
                    Issue.record("\(label): \(target) holds a copy of \(original.remote) before its pair caught up with it")
                    continue
                }
                if expected.deleted {
                    #expect(row.deletedAt != nil, "\(what) still reads '\(row.text)', its original is deleted")
                } else {
                    let state = row.deletedAt != nil ? " (deleted)" : ""
                    #expect(row.deletedAt == nil && row.text == expected.text,
                            "\(what) reads '\(row.text)'\(state), not '\(expected.text)'")
                }
            }
        }
    }

    /// The end state: each message crossed exactly once, unless it was deleted before its pair saw it or the target
    /// refused it (then it is held, or was held and deleted since); the collisions were counted.
    func checkFinal() async throws {
        var held: [BridgeQuarantine.Entry] = []
        for side in 0..<2 { held += try await world.quarantine(side).entries() }
        let heldKeys = Set(held.map { "\($0.source)|\($0.remoteID)" })
        for original in allOriginals {
            let target = original.place.counterpart
            let copies = world.backend(target).messages(in: target.conversation).filter { row in
                guard row.sender == "bridge", let origin = self.original(ofCopy: row, in: target) else { return false }
                return origin.place == original.place && origin.remote == original.remote
            }
            let isHeld = heldKeys.contains("\(world.backend(original.place).backendID)|\(original.remote)")
            let what = "\(label): \(original.kind) \(original.place) message \(original.remote) by \(original.sender) "
                + "('\(original.text)')"
            if copies.isEmpty {
                let excused = original.deletedUnseen || isHeld || (original.deleted && original.everHeld)
                #expect(excused, "\(what) never crossed")
                if original.kind == .honest, !original.deletedUnseen {
                    #expect(original.key.map(preempted.contains) == true, "\(what) did not cross and no one pre-empted its key")
                }
            } else {
                #expect(copies.count == 1, "\(what) crossed \(copies.count) times")
                #expect(!original.deletedUnseen, "\(what) crossed although it was deleted before its pair saw it")
            }
        }
        if collidingCount > 0 {
            #expect(collisionsCounted > 0, "\(label): \(collidingCount) colliding messages, no collision counted")
        }
        // Each key claimed by n messages binds to at most one of them: at least n − 1 collisions.
        let claimants = Dictionary(grouping: allOriginals.compactMap(\.key), by: { $0 }).values.map { $0.count - 1 }.reduce(0, +)
        #expect(collisionsCounted >= claimants,
                "\(label): \(claimants) messages claimed a key another had, \(collisionsCounted) collisions counted")
        if !preemptions {
            #expect(held.allSatisfy { original(for: $0)?.kind == .colliding },
                    "\(label): an honest message is held, and nothing was pre-empted")
        }
    }
}
