import Foundation
import SwitchboardCore
import SwitchboardStore

/// What cannot cross now: changes held in the quarantine, reactions and receipts waiting for their target's copy,
/// and replies waiting for the copy of the message they answer.
extension Bridge {
    // MARK: - The quarantine

    /// Whether `error` is one no retry of the same change can fix (the change itself is refused), so the change is
    /// held in the quarantine instead of stopping the pair (`BridgeDecision.failure` is `hold`); transport,
    /// storage, authentication and missing conversation errors are the pair's, not the change's.
    static func isPermanent(_ error: any Error) -> Bool {
        BridgeDecision.failure(error) == .hold
    }

    /// Bridges one change; one that fails for a reason no retry can fix is held in the quarantine with that reason,
    /// logged and counted, so it cannot stop the pair.
    func bridgeOrHold(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide) async throws {
        do {
            try await bridge(change, from: source, to: target)
            try await releaseHeld(supersededBy: change, from: source)
        } catch where Self.isPermanent(error) {
            try await hold(change, from: source, to: target, because: error)
        }
    }

    /// Sets `change` aside in the quarantine (replacing an older version of it), and logs it.
    func hold(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide, because failure: any Error) async throws {
        // The reason as classified (`code: message`), also for an error that is not a `SwitchboardError`.
        let error = SwitchboardError.wrapping(failure)
        let subject = BridgeQuarantine.Subject(source: source.backend, change: change)
        try await quarantine.hold(change, from: source.backend, reason: String(describing: error))
        held.removeAll { $0 == subject }
        held.append(subject)
        if case .message(let message) = change {
            let mapped = try? await store.read { try $0.messageID(backend: source.backend, remoteID: message.remoteID) }
            let id = mapped ?? MessageID.derived(backend: source.backend, remote: message.remoteID)
            observer?(.refused(id, message.remoteID, reason: String(describing: error)))
        }
        log(.warning, "quarantined \(source.name) \(change.kindName) \(change.subjectRemoteID) (bridging it to "
                          + "\(target.name) failed: \(error)); the pair goes on")
    }

    /// Releases the quarantine's older version of `change`, which was just bridged, if it holds one (looked up in
    /// `held`, so a pair whose quarantine holds nothing of it writes nothing).
    func releaseHeld(supersededBy change: RemoteChange, from source: BridgeSide) async throws {
        let subject = BridgeQuarantine.Subject(source: source.backend, change: change)
        guard held.contains(subject) else { return }
        held.removeAll { $0 == subject }
        if try await quarantine.release(supersededBy: change, from: source.backend) {
            log(.info, "released the quarantined \(source.name) \(change.kindName) \(change.subjectRemoteID): a "
                              + "newer version was bridged")
        }
    }

    /// Stages a batch to leave in flight; when one of its messages cannot be staged (its copy's target ID is
    /// mapped to another message), bridges each alone instead, so only that one is held, and returns nil.
    func stageOrSplit(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                              via adapter: any BulkPublishingAdapter) async throws -> StagedCopy? {
        try Task.checkCancellation()
        do {
            return try await stage(run, from: source, to: target, via: adapter)
        } catch where Self.isPermanent(error) {
            try await completeInFlight()
            for planned in run { try await bridgeOrHold(.message(planned.message), from: source, to: target) }
            return nil
        }
    }

    /// A batch copy that falls back to one change at a time when one of its messages cannot go, so only that one
    /// is held.
    func copyOrSplit(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                             via adapter: any BulkPublishingAdapter) async throws {
        do {
            try await copy(run, from: source, to: target, via: adapter)
        } catch where Self.isPermanent(error) {
            for planned in run { try await bridgeOrHold(.message(planned.message), from: source, to: target) }
        }
    }

    /// Loads what the quarantine holds (`held`, once per bridge: holds and releases keep it up to date after), then
    /// bridges the changes an operator asked to retry; each that fails again is held again.
    func bridgeRetryRequests(_ direction: Direction) async throws {
        if !heldLoaded {
            held = try await quarantine.heldEntries().map { BridgeQuarantine.Subject(source: $0.source, change: $0.change) }
            heldLoaded = true
        }
        for entry in try await quarantine.takeRetryRequests() {
            let (source, target) = entry.source == a.backend ? (a, b) : (b, a)
            guard entry.source == a.backend || entry.source == b.backend, direction == .both || source.backend == a.backend
            else { continue }
            try await completeInFlight()
            // Success releases the entry (`bridgeOrHold`); another refusal holds the change again.
            try await bridgeOrHold(entry.change, from: source, to: target)
        }
    }

    // MARK: - Reactions, receipts and the waiting queue

    struct WaitingOperation: Codable {
        var kind: String
        var symbol: String?
        var isActive: Bool?
        var receipt: String?
    }

    func bridgeReaction(_ reaction: RemoteReaction, from source: BridgeSide, to target: BridgeSide) async throws {
        let id = try await resolveTarget(reaction.target, on: source)
        let operation = WaitingOperation(kind: "reaction", symbol: reaction.symbol, isActive: reaction.isActive)
        try await apply(operation, to: id, on: target)
    }

    func bridgeReceipt(_ receipt: RemoteReceipt, from source: BridgeSide, to target: BridgeSide) async throws {
        let id = try await resolveTarget(receipt.target, on: source)
        try await apply(WaitingOperation(kind: "receipt", receipt: receipt.state.rawValue), to: id, on: target)
    }

    /// Applies an operation on the target when its message is mapped there, else queues it.
    func apply(_ operation: WaitingOperation, to id: MessageID, on target: BridgeSide) async throws {
        guard let remote = try await store.read({ try $0.remoteID(of: id, backend: target.backend, part: 0) }) else {
            let payload = try JSONEncoder().encode(operation)
            let key = WaitKey.copy(id, towards: target.backend)
            _ = try await store.write { [pair] tx in
                try tx.enqueueBridgeOperation(PendingOperation(waitKey: key, kind: operation.kind, payload: payload,
                                                               createdAt: Date()), pair: pair)
            }
            return
        }
        switch operation.kind {
        case "reaction":
            guard let reacting = target.adapter as? any ReactingAdapter, let symbol = operation.symbol else { return }
            try await reacting.setReaction(symbol, isActive: operation.isActive ?? true, on: remote, in: target.conversation)
        case "receipt":
            guard let receipts = target.adapter as? any ReceiptAdapter,
                  let state = operation.receipt.flatMap(ReceiptState.init(rawValue:)) else { return }
            try await receipts.sendReceipt(state, for: remote, in: target.conversation)
        default:
            return
        }
        stats.updates += 1
    }

    /// Runs the operations that waited for `id` to be bridged to `target`.
    func flushWaiting(for id: MessageID, on target: BridgeSide) async throws {
        let key = WaitKey.copy(id, towards: target.backend)
        let waiting = try await store.read { [pair] in try $0.bridgeOperations(pair: pair, waitingOn: key) }
        for entry in waiting {
            if let operation = try? JSONDecoder().decode(WaitingOperation.self, from: entry.payload) {
                do {
                    try await apply(operation, to: id, on: target)
                } catch where Self.isPermanent(error) {
                    log(.warning, "dropped a waiting \(operation.kind) on \(id): \(target.name) refused it (\(error))")
                }
            }
            try await store.write { try $0.removeBridgeOperation(entry.id) }
        }
    }

    /// Once per bridge: runs the reactions and receipts that still wait for copies which already exist. A run
    /// stopped between recording a copy and running what waited for it leaves them so; the copy then settles as
    /// already bridged, so nothing else would run them.
    func flushWaitingForExistingCopies() async throws {
        guard !checkedWaitingCopies else { return }
        for target in [a, b] {
            let family = WaitKey.Family.copies(towards: target.backend)
            let waiting = try await store.read { [pair] in try $0.bridgeOperations(pair: pair, in: family) }
            let ids = Set(waiting.map { MessageID(String($0.waitKey.rawValue.dropFirst(family.prefix.count))) })
            for id in ids.sorted(by: { $0.rawValue < $1.rawValue }) {
                let copied = try await store.read { try $0.remoteID(of: id, backend: target.backend, part: 0) } != nil
                if copied { try await flushWaiting(for: id, on: target) }
            }
        }
        checkedWaitingCopies = true
    }

    // MARK: - Replies whose target has no copy yet

    /// Once per bridge and source: notes whether replies from an earlier run still wait (none: nothing to look up).
    func lookUpWaitingReplies(from source: BridgeSide, to target: BridgeSide) async throws {
        guard repliesLookedUp.insert(source.backend).inserted else { return }
        if try await waitingReplies(from: source, to: target).isEmpty { noWaitingReplies.insert(source.backend) }
    }

    /// Every reply from `source` waiting for its target's copy on `target`, from the store.
    func waitingReplies(from source: BridgeSide, to target: BridgeSide) async throws -> [PendingOperation] {
        let family = WaitKey.Family.replies(from: source.backend, to: target.backend)
        return try await store.read { [pair] in try $0.bridgeOperations(pair: pair, in: family) }
    }

    /// Persists `message`, a reply whose target `reply` has no copy on `target` yet, to be copied once it has
    /// (`copyReplies(waitingFor:)`) or once the source has nothing more to read (`copyWaitingReplies`). A newer
    /// version of the same reply replaces the one waiting.
    func deferReply(_ message: RemoteMessage, to reply: RemoteID, from source: BridgeSide,
                            to target: BridgeSide) async throws {
        let key = WaitKey.reply(to: reply, from: source.backend, to: target.backend)
        let payload = try JSONEncoder().encode(message)
        try await store.write { [pair] tx in
            for waiting in try tx.bridgeOperations(pair: pair, waitingOn: key)
            where (try? JSONDecoder().decode(RemoteMessage.self, from: waiting.payload))?.remoteID == message.remoteID {
                try tx.removeBridgeOperation(waiting.id)
            }
            try tx.enqueueBridgeOperation(PendingOperation(waitKey: key, kind: "reply", payload: payload, createdAt: Date()),
                                          pair: pair)
        }
        noWaitingReplies.remove(source.backend)
    }

    /// Copies the replies that waited for the source messages copied since the last look (batches note theirs).
    func copyRepliesToCopiedTargets(from source: BridgeSide, to target: BridgeSide) async throws {
        guard let copied = copiedSinceReplyCheck.removeValue(forKey: source.backend) else { return }
        try await copyReplies(waitingFor: copied, from: source, to: target)
    }

    /// Copies, linked, the replies that waited for `copied` (source remote IDs whose copies now exist).
    func copyReplies(waitingFor copied: [RemoteID], from source: BridgeSide, to target: BridgeSide) async throws {
        guard !noWaitingReplies.contains(source.backend), !copied.isEmpty else { return }
        let keys = copied.map { WaitKey.reply(to: $0, from: source.backend, to: target.backend) }
        let waiting = try await store.read { [pair] tx in try keys.flatMap { try tx.bridgeOperations(pair: pair, waitingOn: $0) } }
        try await copyWaiting(waiting, from: source, to: target)
    }

    /// Copies every reply from `source` still waiting (the source has nothing more to read now): linked when its
    /// target's copy appeared meanwhile, else unlinked with `bridge.replyTo`, like a reply to a message never copied.
    func copyWaitingReplies(from source: BridgeSide, to target: BridgeSide) async throws {
        guard !noWaitingReplies.contains(source.backend) else { return }
        // All of them, so the copied targets noted since the last look need no lookup of their own.
        copiedSinceReplyCheck[source.backend] = nil
        try await copyWaiting(try waitingReplies(from: source, to: target), from: source, to: target)
        noWaitingReplies.insert(source.backend)
    }

    /// Copies waiting replies in the order they were deferred and drops each from the queue once copied (a kill in
    /// between copies it again next time, harmlessly: it is bridged by then). A reply deleted at the source
    /// meanwhile is not copied.
    func copyWaiting(_ waiting: [PendingOperation], from source: BridgeSide, to target: BridgeSide) async throws {
        guard !waiting.isEmpty else { return }
        try await completeInFlight()
        for entry in waiting.sorted(by: { $0.id < $1.id }) {
            if let message = try? JSONDecoder().decode(RemoteMessage.self, from: entry.payload) {
                let id = try await identify(message, on: source)
                let deleted = try await store.read { try $0.bridgeCopy(id) }?.deletedAt != nil
                if !deleted {
                    do {
                        try await bridgeMessage(message, from: source, to: target, repliesMayWait: false)
                    } catch where Self.isPermanent(error) {
                        try await hold(.message(message), from: source, to: target, because: error)
                    }
                }
            }
            try await store.write { try $0.removeBridgeOperation(entry.id) }
        }
    }
}
