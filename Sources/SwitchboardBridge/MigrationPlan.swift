import Foundation
import SwitchboardCore
import SwitchboardStore

/// What a migration would do, worked out without writing anything (`switchboard migrate --dry-run`).
public struct MigrationPlan: Sendable, Hashable {
    /// Source messages after the checkpoint that would be copied.
    public var toCopy: Int
    /// Source messages already on the target (copied by an earlier run, or mapped there).
    public var alreadyPresent: Int
    /// Source messages that would not be carried as they are, with the reason (deleted at the source, a copy made
    /// from the target, content the target has no equivalent of); a target's refusal shows only when copying.
    public var notCarried: [NotCarried]
    /// Whether an earlier run left a checkpoint (the plan then covers only what follows it, plus the earlier runs'
    /// outcomes).
    public var resumes: Bool

    /// A plan from its parts.
    public init(toCopy: Int, alreadyPresent: Int, notCarried: [NotCarried], resumes: Bool) {
        self.toCopy = toCopy
        self.alreadyPresent = alreadyPresent
        self.notCarried = notCarried
        self.resumes = resumes
    }
}

extension Migration {
    /// Reads the source's changes after the checkpoint and the store's records (nothing is written, nothing is
    /// published) and says what `run` would do with each message: the same rules, without the target's answer.
    /// Throws `MigrationError` when a side cannot be reached, as `run` does.
    public func plan() async throws -> MigrationPlan {
        try await checkSides()
        let pair = Bridge.pairKey(a: source.conversation, b: target.conversation)
        let (sourceBackend, targetBackend) = (source.backend, target.backend)
        let checkpoint = try await store.read { try $0.bridgeCursor(pair: pair, backend: sourceBackend) }
        let earlier = try await earlierOutcomes(of: pair)
        var latest: [RemoteID: RemoteMessage] = [:]
        var order: [RemoteID] = []
        var cursor = checkpoint
        while true {
            try Task.checkCancellation()
            let batch = try await source.adapter.changes(in: source.conversation, after: cursor,
                                                         limit: configuration.batchSize)
            for case .message(let message) in batch.changes {
                if latest.updateValue(message, forKey: message.remoteID) == nil { order.append(message.remoteID) }
            }
            guard batch.hasMore, batch.cursor != cursor else { break }
            cursor = batch.cursor
        }
        let own = source.adapter.localUser
        let (toCopy, present, notCarried) = try await store.read { [order, latest] tx -> (Int, Set<MessageID>, [NotCarried]) in
            var toCopy = 0
            var present = earlier.present
            var notCarried: [NotCarried] = []
            for remote in order {
                guard let message = latest[remote] else { continue }
                let id = try tx.messageID(backend: sourceBackend, remoteID: remote)
                    ?? MessageIdentity.normalizedKey(message.idempotencyKey, scope: KeyScope(message, on: sourceBackend))
                    ?? MessageID.derived(backend: sourceBackend, remote: remote)
                if try tx.remoteID(of: id, backend: targetBackend, part: 0) != nil, !earlier.skipped.contains(id) {
                    present.insert(id)
                } else if earlier.present.contains(id) || earlier.skipped.contains(id) {
                    continue  // handled by an earlier run, counted there
                } else if message.sender == own, BridgeDecision.isCopy(message, madeFrom: targetBackend) {
                    notCarried.append(NotCarried(id: id, sourceRemoteID: remote, reason: .copyFromTarget))
                } else if message.deletedAt != nil {
                    notCarried.append(NotCarried(id: id, sourceRemoteID: remote, reason: .deletedAtSource))
                } else {
                    toCopy += 1
                    if let type = message.metadata[RemoteMessage.unsupportedContentKey] {
                        notCarried.append(NotCarried(id: id, sourceRemoteID: remote, reason: .unsupportedContent(contentType: type)))
                    }
                }
            }
            return (toCopy, present, notCarried)
        }
        return MigrationPlan(toCopy: toCopy, alreadyPresent: present.count, notCarried: notCarried, resumes: checkpoint != nil)
    }
}
