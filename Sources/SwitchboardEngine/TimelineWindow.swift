import SwitchboardCore

/// The bounded, ordered slice of a conversation held in memory, whatever the thread's length.
public struct TimelineWindow: Sendable {
    /// Messages oldest first.
    public private(set) var messages: [Message] = []
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

    /// The oldest message's position.
    public var oldest: TimelinePosition? { messages.first?.position }
    /// The newest message's position.
    public var newest: TimelinePosition? { messages.last?.position }

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
        if let index = messages.firstIndex(where: { $0.id == message.id }) {
            if messages[index].position == message.position {
                messages[index] = message
                return
            }
            messages.remove(at: index)
        }
        guard covers(message.position) else { return }
        let index = insertionIndex(for: message.position)
        messages.insert(message, at: index)
        if messages.count > limit {
            messages.removeFirst(messages.count - limit)
            hasOlder = true
        }
    }

    /// Removes a message.
    public mutating func remove(_ id: MessageID) {
        messages.removeAll { $0.id == id }
    }

    /// Adds a page of older messages (any order); trims the newest when over the limit.
    public mutating func prepend(_ older: [Message]) {
        for message in older.sorted(by: { $0.position < $1.position }).reversed()
        where !messages.contains(where: { $0.id == message.id }) {
            messages.insert(message, at: insertionIndex(for: message.position))
        }
        if messages.count > limit {
            messages.removeLast(messages.count - limit)
            hasNewer = true
        }
    }

    /// Replaces the whole window with the newest messages (ascending order expected).
    public mutating func reset(newest: [Message], hasOlder: Bool) {
        messages = newest.sorted { $0.position < $1.position }
        let trimmed = messages.count > limit
        if trimmed { messages.removeFirst(messages.count - limit) }
        self.hasOlder = hasOlder || trimmed
        hasNewer = false
    }

    private func insertionIndex(for position: TimelinePosition) -> Int {
        var low = 0, high = messages.count
        while low < high {
            let mid = (low + high) / 2
            if messages[mid].position < position { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
