import SwitchboardCore

/// The bounded, ordered slice of a conversation held in memory, whatever the thread's length.
///
/// Messages live in `storage[start...]`: trimming the oldest only advances `start` (the prefix is dropped in one
/// move once it grows as large as the window), and an ID set answers "is it here?" without a scan, so a live
/// message costs a binary search and, usually, an append.
public struct TimelineWindow: Sendable {
    private var storage: [Message] = []
    private var start = 0
    private var ids: Set<MessageID> = []
    /// Most messages held.
    public let limit: Int
    /// Whether older messages exist that the window has not loaded (false for a fresh window: it starts at the beginning).
    public var hasOlder: Bool = false
    /// Whether newer messages were trimmed off the bottom (after paging far back).
    public private(set) var hasNewer: Bool = false
    /// Messages older than this are not contiguous with the window (history not fetched that far); nil: no bound.
    public var floor: TimelinePosition?

    /// An empty window holding at most `limit` messages.
    public init(limit: Int) { self.limit = max(1, limit) }

    /// Messages oldest first.
    public var messages: [Message] { Array(storage[start...]) }
    /// How many messages the window holds.
    public var count: Int { storage.count - start }
    /// The oldest message's position.
    public var oldest: TimelinePosition? { count > 0 ? storage[start].position : nil }
    /// The newest message's position.
    public var newest: TimelinePosition? { count > 0 ? storage[storage.count - 1].position : nil }
    /// Whether the window holds the message `id`.
    public func contains(_ id: MessageID) -> Bool { ids.contains(id) }

    /// Whether a message at `position` belongs inside the window's range.
    public func covers(_ position: TimelinePosition) -> Bool {
        if let floor, position < floor { return false }
        guard let oldest, let newest else { return true }
        if position < oldest { return !hasOlder }
        if position > newest { return !hasNewer }
        return true
    }

    /// Inserts or replaces a message (by ID), keeping order; trims the oldest when over the limit.
    public mutating func apply(_ message: Message) {
        let position = message.position
        if ids.contains(message.id) {
            let index = insertionIndex(for: position)
            if index < storage.count, storage[index].id == message.id {
                storage[index] = message
                return
            }
            remove(message.id)  // it moved (an optimistic row adopting the server's time)
        }
        guard covers(position) else { return }
        storage.insert(message, at: insertionIndex(for: position))
        ids.insert(message.id)
        if count > limit {
            trimOldest(count - limit)
            hasOlder = true
        }
    }

    /// Removes a message.
    public mutating func remove(_ id: MessageID) {
        guard ids.remove(id) != nil, let index = storage[start...].firstIndex(where: { $0.id == id }) else { return }
        storage.remove(at: index)
    }

    /// Adds a page of older messages (any order); trims the newest when over the limit.
    public mutating func prepend(_ older: [Message]) {
        for message in older.sorted(by: { $0.position < $1.position }).reversed() where !ids.contains(message.id) {
            storage.insert(message, at: insertionIndex(for: message.position))
            ids.insert(message.id)
        }
        if count > limit {
            for message in storage[(start + limit)...] { ids.remove(message.id) }
            storage.removeLast(count - limit)
            hasNewer = true
        }
    }

    /// Replaces the whole window with the newest messages (ascending order expected).
    public mutating func reset(newest: [Message], hasOlder: Bool) {
        var sorted = newest.sorted { $0.position < $1.position }
        let trimmed = sorted.count > limit
        if trimmed { sorted.removeFirst(sorted.count - limit) }
        storage = sorted
        start = 0
        ids = Set(sorted.map(\.id))
        self.hasOlder = hasOlder || trimmed
        hasNewer = false
    }

    /// Drops the `n` oldest messages; the dead prefix is compacted once it is as long as the window.
    private mutating func trimOldest(_ n: Int) {
        for message in storage[start..<(start + n)] { ids.remove(message.id) }
        start += n
        if start >= limit {
            storage.removeFirst(start)
            start = 0
        }
    }

    /// Where a message at `position` goes (the first held message not before it), as an index into `storage`.
    private func insertionIndex(for position: TimelinePosition) -> Int {
        var low = start, high = storage.count
        while low < high {
            let mid = (low + high) / 2
            if storage[mid].position < position { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
