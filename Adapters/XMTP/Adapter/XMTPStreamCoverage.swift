import Foundation

/// Which node sequences of each group the adapter's live streams (or a count) have stored without a gap.
///
/// The node delivers a subscription's envelopes of a group in increasing sequence, the replay of those after its
/// cursor first and then the live ones, without gaps or repeats (its `SubscriptionMerge`). So once a stream that
/// subscribed at `from` has stored everything it received up to `through`, every envelope of the group with a
/// sequence in `from + 1 ... through` is in the local database (or could not be opened, which a read from the
/// node would skip too), and a delta read of that run can be answered from there. A stream that resubscribes
/// where it stopped extends its run; one that starts elsewhere starts a new run. Pure state, tested alone.
struct XMTPStreamCoverage: Sendable {
    /// One stream's run: sequences `from + 1 ... through` of `group` are stored.
    struct Run: Sendable, Hashable {
        /// The group's hex ID.
        var group: String
        /// The subscription cursor the run starts after.
        var from: UInt64
        /// The last sequence stored (`from` while nothing is).
        var through: UInt64
    }

    private(set) var runs: [UUID: Run] = [:]

    /// No stream has stored anything.
    init() {}

    /// `stream` subscribed to `group` after `cursor`: its run goes on when it ends at `cursor`, else starts there.
    mutating func subscribed(_ stream: UUID, group: String, after cursor: UInt64) {
        if let run = runs[stream], run.group == group, run.through == cursor { return }
        runs[stream] = Run(group: group, from: cursor, through: cursor)
    }

    /// `stream` stored everything its subscription delivered up to `sequence`.
    mutating func stored(_ stream: UUID, through sequence: UInt64) {
        guard var run = runs[stream], sequence > run.through else { return }
        run.through = sequence
        runs[stream] = run
    }

    /// A whole read (a count paging the group newest first, not a stream) has stored every envelope of `group` in
    /// `from + 1 ... through`: `run` now covers exactly that (stored rows stay, so it needs no ending).
    mutating func covered(_ run: UUID, group: String, from: UInt64, through: UInt64) {
        guard through > from else { return }
        runs[run] = Run(group: group, from: from, through: through)
    }

    /// `stream` stopped; its run is no longer extended or used.
    mutating func ended(_ stream: UUID) {
        runs[stream] = nil
    }

    /// The furthest sequence up to which `group` is stored without a gap after `cursor`: the largest `through` of a
    /// run containing `cursor` with something after it; nil when no run does.
    func coveredThrough(group: String, after cursor: UInt64) -> UInt64? {
        runs.values.filter { $0.group == group && $0.from <= cursor && cursor < $0.through }.map(\.through).max()
    }
}
