/// The replay-then-live merge of one subscription; pure, so its no-gap/no-duplicate rule is tested alone.
///
/// The listener is registered before the replay is read, so every message stored after registration arrives
/// live, and those stored before it are in the replay; anything in both is dropped here by a per-group
/// high-water mark (ids are assigned and published in increasing order).
struct SubscriptionMerge: Sendable, Hashable {
    /// Per group: the highest id delivered, or the filter's cursor before any delivery.
    private(set) var highWater: [XMTPNodeGroupID: UInt64]

    /// A merge starting from the filters' cursors.
    init(cursors: [XMTPNodeGroupID: UInt64]) {
        highWater = cursors
    }

    /// The groups followed.
    var groups: Set<XMTPNodeGroupID> { Set(highWater.keys) }

    /// Whether `message` is new for its group; records it when so.
    mutating func admit(_ message: XMTPNodeStoredMessage) -> Bool {
        guard let mark = highWater[message.groupID], message.id > mark else { return false }
        highWater[message.groupID] = message.id
        return true
    }

    /// Admits a batch, keeping the new ones in order.
    mutating func admit(_ messages: [XMTPNodeStoredMessage]) -> [XMTPNodeStoredMessage] {
        messages.filter { admit($0) }
    }
}
