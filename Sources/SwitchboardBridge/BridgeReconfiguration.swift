/// What replacing a worker's pairs with a new list changes, decided from the pairs' names and definitions alone:
/// the pure part of `BridgeWorker.reconfigure(pairs:)`.
///
/// A pair is matched by name. One only in the new list is added (started), one only in the old list is removed
/// (stopped after its change in flight, its lease released), one in both whose `definition` differs is changed
/// (stopped like a removed one, then started with the new definition), and one in both with the same definition is
/// unchanged (its bridge runs on untouched, whatever it was doing).
public struct BridgeReconfiguration: Sendable, Hashable {
    /// Pairs to start, in the new list's order.
    public var added: [String]
    /// Pairs to stop, in the old list's order.
    public var removed: [String]
    /// Pairs to restart with their new definition, in the new list's order.
    public var changed: [String]
    /// Pairs to leave running, in the new list's order.
    public var unchanged: [String]

    /// A decision from its parts (for comparisons in tests).
    public init(added: [String] = [], removed: [String] = [], changed: [String] = [], unchanged: [String] = []) {
        self.added = added
        self.removed = removed
        self.changed = changed
        self.unchanged = unchanged
    }

    /// The decision for going from the pairs `current` to the pairs `new` (names are unique in each list).
    public init(from current: [BridgeWorkerPair], to new: [BridgeWorkerPair]) {
        let currentDefinitions = Dictionary(current.map { ($0.name, $0.definition) }, uniquingKeysWith: { first, _ in first })
        let newNames = Set(new.map(\.name))
        self.init()
        for pair in new {
            switch currentDefinitions[pair.name] {
            case nil: added.append(pair.name)
            case pair.definition: unchanged.append(pair.name)
            default: changed.append(pair.name)
            }
        }
        removed = current.map(\.name).filter { !newNames.contains($0) }
    }

    /// Whether nothing is started, stopped or restarted.
    public var changesNothing: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }

    /// `added new; removed old; restarted general (changed); unchanged other`, leaving out the empty parts.
    public var summary: String {
        let parts = [("added", added, ""), ("removed", removed, ""), ("restarted", changed, " (changed)"),
                     ("unchanged", unchanged, "")]
            .filter { !$0.1.isEmpty }
            .map { "\($0.0) \($0.1.joined(separator: ", "))\($0.2)" }
        return parts.isEmpty ? "no pairs" : parts.joined(separator: "; ")
    }
}
