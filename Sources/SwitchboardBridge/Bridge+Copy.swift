import Foundation
import SwitchboardCore
import SwitchboardStore

/// Copying: resolving a source message, deciding what to do with it (`BridgeDecision`), publishing its copy one at a
/// time or in batches with everything a restart needs persisted first, and applying its later edits and deletes.
extension Bridge {
    func bridge(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide) async throws {
        switch change {
        case .message(let message):
            try await bridgeMessage(message, from: source, to: target)
        case .reaction(let reaction):
            guard reaction.user != source.adapter.localUser else { return }
            try await bridgeReaction(reaction, from: source, to: target)
        case .receipt(let receipt):
            guard receipt.user != source.adapter.localUser else { return }
            try await bridgeReceipt(receipt, from: source, to: target)
        }
    }

    /// The `MessageID` of a source message's reaction or receipt target: the map, else the derivation.
    func resolveTarget(_ remote: RemoteID, on side: BridgeSide) async throws -> MessageID {
        let backend = side.backend
        return try await store.read { tx in
            try tx.messageID(backend: backend, remoteID: remote) ?? MessageID.derived(backend: backend, remote: remote)
        }
    }

    /// The `MessageID` of a source message (`identify` in a read transaction), logging and counting a carried key
    /// that was refused.
    func identify(_ message: RemoteMessage, on side: BridgeSide) async throws -> MessageID {
        let pair = self.pair
        return noted(try await store.read { tx in try Self.identify(message, on: side, pair: pair, in: tx) }, of: message, on: side)
    }

    /// Logs and counts a resolution whose carried key was refused; returns its ID.
    func noted(_ resolution: MessageIdentity.Resolution, of message: RemoteMessage, on side: BridgeSide) -> MessageID {
        if let key = resolution.refusedKey, let reason = resolution.collision {
            stats.keyCollisions += 1
            log(.warning, "\(side.name) message \(message.remoteID) from \(message.sender) carries key \(key), which is "
                              + "not theirs to use (\(reason)); bridged apart as \(resolution.id)")
        }
        return resolution.id
    }

    /// Resolves a source message (DESIGN §2): the ID map by its backend ID first (the bridge's own copies and
    /// everything seen before), else its carried key when the claim holds, else a derived ID. A key binds only
    /// when that `MessageID` is unknown to the store, or is this pair's own copy coming back from the bridge's
    /// account; a key naming any other message (of this pair, another pair, another backend) is a collision.
    static func identify(_ message: RemoteMessage, on side: BridgeSide, pair: String,
                                 in tx: any StoreTransaction) throws -> MessageIdentity.Resolution {
        if let mapped = try tx.messageID(backend: side.backend, remoteID: message.remoteID) {
            return MessageIdentity.Resolution(id: mapped)
        }
        let own = side.adapter.localUser
        return try MessageIdentity.resolve(message, on: side.backend) { candidate in
            var evidence = KeyEvidence()
            let mappings = try tx.mappings(of: candidate)
            if let other = mappings.first(where: { $0.backend == side.backend && $0.part == 0 })?.remoteID,
               other != message.remoteID {
                evidence.otherRemoteOnBackend = other
            }
            let copy = try tx.bridgeCopy(candidate)
            evidence.isOwnCopy = message.sender == own && copy?.pair == pair
            evidence.isHeldElsewhere = copy != nil || !mappings.isEmpty
            return evidence
        }
    }

    /// Records a mapping unless the same one exists.
    func record(_ id: MessageID, _ remote: RemoteID, on side: BridgeSide) async throws {
        let backend = side.backend
        if try await store.read({ try $0.remoteID(of: id, backend: backend, part: 0) }) == remote { return }
        try await store.write { tx in try Self.record(id, remote, on: side, in: tx) }
    }

    /// Records a mapping inside `tx` unless the same one exists (one statement when it is new; a conflicting
    /// mapping throws).
    static func record(_ id: MessageID, _ remote: RemoteID, on side: BridgeSide, in tx: any StoreTransaction) throws {
        let mapping = IDMapping(messageID: id, backend: side.backend, conversation: side.conversation, remoteID: remote)
        if try tx.insertMappingIfAbsent(mapping) { return }
        if try tx.remoteID(of: id, backend: side.backend, part: 0) == remote { return }
        try tx.insertMapping(mapping)
    }

    func bridgeMessage(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide,
                               repliesMayWait: Bool = true) async throws {
        let id = try await identify(message, on: source)
        try await record(id, message.remoteID, on: source)
        var facts = BridgeDecision.MessageFacts(state: try await copyState(id, on: target),
                                                isOwnCopy: isOwnCopy(message, from: source, to: target),
                                                isDeleted: message.deletedAt != nil, replyTo: message.replyTo,
                                                replyTargetCopy: nil, repliesMayWait: repliesMayWait)
        if case .new = facts.state, let reply = message.replyTo {
            let (sourceBackend, targetBackend) = (source.backend, target.backend)
            facts.replyTargetCopy = try await store.read { tx in
                try tx.messageID(backend: sourceBackend, remoteID: reply).flatMap {
                    try tx.remoteID(of: $0, backend: targetBackend, part: 0)
                }
            }
        }
        let replyTo: RemoteID?, unlinkedReply: RemoteID?
        switch BridgeDecision.message(facts) {
        case .refuseOtherPair:
            throw SwitchboardError(.conflict, "\(source.name) message \(message.remoteID) resolves to \(id), which "
                                   + "belongs to another bridged pair")
        case .applyUpdates(let remote):
            if !facts.isOwnCopy { observer?(.alreadyPresent(id)) }
            try await applyUpdates(message, id: id, remote: remote, from: source, to: target)
            return
        case .republish(let stored):
            // A copy was prepared and persisted, then the process stopped before its publish was recorded: publish
            // exactly that copy again (harmless if it went out), then apply what changed at the source since.
            try await republish(stored, of: message, id: id, from: source, to: target)
            return
        case .republishStaged(let text):
            // The same copy again: prepared from the text that was staged (the target keeps the first copy it
            // got under this key), then whatever changed at the source since is applied as an update.
            var original = message
            original.text = text
            let outgoing = outgoingCopy(of: original, id: id, from: source, to: target, replyTo: nil, attachments: [])
            let prepared = try await target.adapter.prepare(outgoing, noSend: true)
            try await republish(prepared, of: message, id: id, from: source, to: target)
            return
        case .skipOwnCopy:
            // A copy made from the other side whose mapping is gone cannot be copied back without looping; log it.
            log(.debug, "skipping \(source.name) message \(message.remoteID) sent by the bridge's own account "
                              + "(a copy made from \(target.name))")
            observer?(.copyFromOtherSide(id, message.remoteID))
            return
        case .skipDeleted:
            try await remember(message, id: id, from: source, deleted: true)
            observer?(.skippedDeleted(id, message.remoteID))
            return
        case .waitForReplyTarget(let reply):
            try await deferReply(message, to: reply, from: source, to: target)
            return
        case .copy(let linked, let unlinked):
            (replyTo, unlinkedReply) = (linked, unlinked)
        }
        let attachments = try await rehost(message.attachments, from: source, to: target)
        let outgoing = outgoingCopy(of: message, id: id, from: source, to: target, replyTo: replyTo,
                                    unlinkedReply: unlinkedReply, attachments: attachments)
        let prepared = try await target.adapter.prepare(outgoing, noSend: true)
        let pending = ledgerEntry(message, id: id, from: source, deleted: false)
        let pair = self.pair
        try await store.write { tx in try Self.persist(prepared, pending, on: target, pair: pair, in: tx) }
        let receipt = try await publishCopy(prepared, of: message, id: id, from: source, to: target)
        _ = try await finishCopy(id, prepared: prepared, receipt: receipt, on: target)
        counted(message, id: id, from: source)
        try await flushWaiting(for: id, on: target)
        try await copyReplies(waitingFor: [message.remoteID], from: source, to: target)
    }

    /// Publishes a staged copy; when the target refuses it for good, takes the staging back (`unstage`) before
    /// rethrowing, so nothing pending is left for a restart to publish again.
    func publishCopy(_ prepared: PreparedMessage, of message: RemoteMessage, id: MessageID, from source: BridgeSide,
                             to target: BridgeSide) async throws -> PublishReceipt {
        do {
            return try await target.adapter.publish(prepared)
        } catch where Self.isPermanent(error) {
            try await unstage(id, message, from: source)
            throw error
        }
    }

    /// Publishes a copy left pending by an interrupted run, records it, then applies what changed at the source
    /// since and what waited for it.
    func republish(_ prepared: PreparedMessage, of message: RemoteMessage, id: MessageID, from source: BridgeSide,
                           to target: BridgeSide) async throws {
        let receipt = try await publishCopy(prepared, of: message, id: id, from: source, to: target)
        let remote = try await finishCopy(id, prepared: prepared, receipt: receipt, on: target)
        counted(message, id: id, from: source)
        if let remote { try await applyUpdates(message, id: id, remote: remote, from: source, to: target) }
        try await flushWaiting(for: id, on: target)
        try await copyReplies(waitingFor: [message.remoteID], from: source, to: target)
    }

    /// The copy state of `id` towards `target`: the ledger entry says pending or done, the ID map gives the target ID.
    func copyState(_ id: MessageID, on target: BridgeSide) async throws -> BridgeCopyState {
        let backend = target.backend, pair = self.pair
        return try await store.read { tx in try Self.copyState(id, towards: backend, pair: pair, in: tx) }
    }

    /// `copyState` inside a transaction.
    static func copyState(_ id: MessageID, towards backend: BackendID, pair: String,
                                  in tx: any StoreTransaction) throws -> BridgeCopyState {
        guard let copy = try tx.bridgeCopy(id) else { return .new }
        guard copy.pair == pair else { return .otherPair }
        // Pending towards this target: republish the stored copy (or prepare it again from the entry). Pending
        // towards the other side means this change is that copy's echo, which the map below recognises like any other.
        if copy.pendingTowards == backend { return copy.prepared.map(BridgeCopyState.pending) ?? .pendingUnstored(copy) }
        guard let remote = try tx.remoteID(of: id, backend: backend, part: 0) else { return .new }
        return .bridged(remote)
    }

    /// Whether `message` may go in a batch: not a copy made from the other side, not deleted, no reply, no
    /// attachment.
    func isPlain(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide) -> Bool {
        !isOwnCopy(message, from: source, to: target) && message.deletedAt == nil && message.replyTo == nil
            && message.attachments.isEmpty
    }

    /// Whether `message` is one the bridge leaves alone as written by its own account on `source`: every such
    /// message for a live bridge (its copies coming back), and under `copiesOwnMessages` only a copy made from
    /// `target` (its `bridge.origin` names the target's backend; one mapped there is recognised by the map first).
    func isOwnCopy(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide) -> Bool {
        guard message.sender == source.adapter.localUser else { return false }
        guard configuration.copiesOwnMessages else { return true }
        return BridgeDecision.isCopy(message, madeFrom: target.backend)
    }

    /// Records, before the publish, everything a restart needs to finish it: the target ID when the scheme knows
    /// it, the ledger entry pending towards the target, and the prepared copy itself (so a restart republishes
    /// these bytes, not a fresh preparation of content that may have been edited since).
    ///
    /// With `keepingCopy` false (a batch towards a target that `republishesByKey`) the prepared copy is not stored:
    /// a restart prepares it again from the entry's text.
    static func persist(_ prepared: PreparedMessage, _ entry: BridgeCopy, on target: BridgeSide, pair: String,
                                keepingCopy: Bool = true, in tx: any StoreTransaction) throws {
        if let remote = prepared.remoteID { try record(prepared.id, remote, on: target, in: tx) }
        var pending = entry
        pending.pendingTowards = target.backend
        pending.prepared = keepingCopy ? prepared : nil
        try tx.upsertBridgeCopy(pending)
    }

    /// Takes back a copy whose publish was refused for good: its ledger entry (with the stored copy) and target
    /// mapping go (a target row under its key, if any, is not the bridge's), the source mapping stays, so the key
    /// keeps naming the source message and nobody else's.
    func unstage(_ id: MessageID, _ message: RemoteMessage, from source: BridgeSide) async throws {
        let pair = self.pair
        try await store.write { tx in
            let kept = try tx.mappings(of: id).filter { $0.backend == source.backend }
            try tx.removeMessage(id)  // the mappings of `id` (a bridge store holds no message rows)
            for mapping in kept { try tx.insertMapping(mapping) }
            try tx.removeBridgeCopy(id, pair: pair)
        }
    }

    /// After a publish: records the target ID (when the answer or the scheme tells it; an echo-only backend's
    /// copy stays unmapped, so the next pass republishes it under its key, harmlessly), marks the ledger row done
    /// and drops the stored copy; returns the ID.
    @discardableResult
    func finishCopy(_ id: MessageID, prepared: PreparedMessage, receipt: PublishReceipt,
                            on target: BridgeSide) async throws -> RemoteID? {
        let remote = receipt.remoteID ?? prepared.remoteID
        let pair = self.pair
        try await store.write { tx in
            if let remote { try Self.record(id, remote, on: target, in: tx) }
            try tx.markBridgeCopiesPublished([id], pair: pair)
        }
        return remote
    }

    /// Counts a copied message and tells the observer.
    func counted(_ message: RemoteMessage, id: MessageID, from source: BridgeSide) {
        if source.backend == a.backend { stats.messagesAToB += 1 } else { stats.messagesBToA += 1 }
        if let unsupported = message.metadata[RemoteMessage.unsupportedContentKey] {
            observer?(.copiedAsFallback(id, message.remoteID, contentType: unsupported))
        } else {
            observer?(.copied(id))
        }
    }

    /// The copy of `message` to publish on `target` under `id`: the source's relayable metadata (`relayable`), then
    /// the bridge's own naming the original sender, time and origin, and the source ID of a reply's target that has
    /// no copy (`unlinkedReply`); content the source could not translate is logged and crosses as its fallback text.
    func outgoingCopy(of message: RemoteMessage, id: MessageID, from source: BridgeSide, to target: BridgeSide,
                              replyTo: RemoteID?, unlinkedReply: RemoteID? = nil, attachments: [Attachment]) -> OutgoingMessage {
        if let unsupported = message.metadata[RemoteMessage.unsupportedContentKey] {
            log(.info, "bridging \(source.name) message \(message.remoteID) of unsupported content type \(unsupported) "
                              + "as its fallback text")
        }
        var metadata = Self.relayable(message.metadata)
        if let unlinkedReply { metadata["bridge.replyTo"] = unlinkedReply.rawValue }
        metadata["bridge.sender"] = message.sender.rawValue
        metadata["bridge.sentAt"] = String(TimelinePosition.micros(message.sentAt))
        metadata["bridge.origin"] = "\(source.backend):\(message.remoteID)"
        return OutgoingMessage(id: id, conversation: target.conversation, sender: target.adapter.localUser,
                               text: message.text.isEmpty && attachments.isEmpty ? "(empty message)" : message.text,
                               replyTo: replyTo, attachments: attachments, metadata: metadata, createdAt: message.sentAt)
    }

    /// The source metadata a copy may carry: everything but the reserved `switchboard.*` and `bridge.*` keys,
    /// which only Switchboard itself sets (a sender who writes them could otherwise claim another message's key
    /// or forge a copy's origin on the other side).
    static func relayable(_ metadata: [String: String]) -> [String: String] {
        guard metadata.keys.contains(where: isReserved) else { return metadata }
        return metadata.filter { !isReserved($0.key) }
    }

    /// Whether a metadata key is reserved for Switchboard.
    static func isReserved(_ key: String) -> Bool {
        key.hasPrefix("switchboard.") || key.hasPrefix("bridge.")
    }

    // MARK: - Batched copies

    /// A new source message a batch will copy, with everything decided before the network.
    /// A class: a batch's copies pass through several arrays and loops, each then a reference, not a copy of every
    /// field.
    final class PlannedCopy: Sendable {
        /// The source message.
        let message: RemoteMessage
        /// Its `MessageID` (the key on both sides).
        let id: MessageID
        /// The copy to prepare on the target.
        let outgoing: OutgoingMessage

        /// A planned copy of `message` under `id`.
        init(message: RemoteMessage, id: MessageID, outgoing: OutgoingMessage) {
            self.message = message
            self.id = id
            self.outgoing = outgoing
        }
    }

    /// The batched copy of `message` when it is a plain new message (not bridged, not the bridge's own, not
    /// deleted, no reply, no attachment, not already in the batch); nil sends it down the one-by-one path.
    /// Reads the store only: the mappings are written by `copy`.
    func plan(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide,
                      excluding planned: Set<MessageID>, known: (id: MessageID, state: BridgeCopyState)?) async throws -> PlannedCopy? {
        guard isPlain(message, from: source, to: target) else { return nil }
        let id: MessageID
        if let known { id = known.id } else { id = try await identify(message, on: source) }
        guard !planned.contains(id) else { return nil }
        let state: BridgeCopyState
        if let known { state = known.state } else { state = try await copyState(id, on: target) }
        guard case .new = state else { return nil }  // done, or pending: one by one
        let outgoing = outgoingCopy(of: message, id: id, from: source, to: target, replyTo: nil, attachments: [])
        return PlannedCopy(message: message, id: id, outgoing: outgoing)
    }

    /// Copies a batch in `bridgeMessage`'s order of steps: prepare each (noSend) under its key → record every
    /// mapping in one transaction → `publishAll` → record the receipts' IDs and remember each message in one
    /// transaction → counts, observer and waiting operations. A kill anywhere leaves each message either not
    /// remembered (the next run republishes it harmlessly under the same key) or fully bridged.
    func copy(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                      via adapter: any BulkPublishingAdapter) async throws {
        let staged = try await stage(run, from: source, to: target, via: adapter)
        try await finish(staged, receipts: try await adapter.publishAll(staged.prepared))
    }

    /// A batch prepared and persisted (mappings, pending ledger rows and prepared copies), ready to publish.
    struct StagedCopy {
        /// The planned copies.
        var run: [PlannedCopy]
        /// Their prepared messages, in the same order.
        var prepared: [PreparedMessage]
        /// Where they come from.
        var source: BridgeSide
        /// Where they go.
        var target: BridgeSide
    }

    /// `copy`'s steps before the publish: prepare each under its key, then persist everything in one transaction.
    func stage(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                       via adapter: any BulkPublishingAdapter) async throws -> StagedCopy {
        var prepared: [PreparedMessage] = []
        prepared.reserveCapacity(run.count)
        for planned in run { prepared.append(try await adapter.prepare(planned.outgoing, noSend: true)) }
        let entries = run.map { ledgerEntry($0.message, id: $0.id, from: source, deleted: false) }
        let keepingCopies = !adapter.republishesByKey
        let (pair, persisted) = (self.pair, prepared)
        try await store.write { tx in
            for index in run.indices {
                try Self.record(run[index].id, run[index].message.remoteID, on: source, in: tx)
                try Self.persist(persisted[index], entries[index], on: target, pair: pair, keepingCopy: keepingCopies, in: tx)
            }
        }
        return StagedCopy(run: run, prepared: prepared, source: source, target: target)
    }

    /// `copy`'s steps after the publish: record the receipts (and, with `advancing`, the source's cursor past the
    /// batch's page) in one transaction, count, and apply operations that waited.
    func finish(_ staged: StagedCopy, receipts: [PublishReceipt], advancing pageEnd: PageEnd? = nil) async throws {
        let (run, prepared, source, target) = (staged.run, staged.prepared, staged.source, staged.target)
        guard receipts.count == prepared.count else {
            throw SwitchboardError(.transport, "\(target.name) returned \(receipts.count) receipts for \(prepared.count) messages",
                                   retryable: true)
        }
        let pair = self.pair
        let waitKeys = run.map { WaitKey.copy($0.id, towards: target.backend) }
        let waiting = try await store.write { tx in
            for index in run.indices {
                // A target ID known at prepare was recorded with the batch; only a different or new one is recorded now.
                let remote = receipts[index].remoteID ?? prepared[index].remoteID
                if let remote, remote != prepared[index].remoteID { try Self.record(run[index].id, remote, on: target, in: tx) }
            }
            // The batch's ledger entries leave `pending` together: one statement, not one per message.
            try tx.markBridgeCopiesPublished(run.map(\.id), pair: pair)
            if let pageEnd { try tx.setBridgeCursor(pageEnd.cursor, pair: pair, backend: source.backend) }
            return try tx.bridgeWaitKeys(pair: pair, among: waitKeys)
        }
        if let pageEnd { cursors[source.backend] = pageEnd.cursor }
        for planned in run {
            counted(planned.message, id: planned.id, from: source)
            try await releaseHeld(supersededBy: .message(planned.message), from: source)
        }
        if !noWaitingReplies.contains(source.backend) {
            // Replies waiting for these are copied at the pass's next safe point (nothing in flight then).
            copiedSinceReplyCheck[source.backend, default: []] += run.map(\.message.remoteID)
        }
        let waited = waiting.isEmpty ? [] : run.indices.filter { waiting.contains(waitKeys[$0]) }
        for index in waited { try await flushWaiting(for: run[index].id, on: target) }
    }

    /// Applies an edit or delete of an already bridged message on the other side (once).
    func applyUpdates(_ message: RemoteMessage, id: MessageID, remote: RemoteID, from source: BridgeSide,
                              to target: BridgeSide) async throws {
        let known = try await store.read { try $0.bridgeCopy(id) }
        switch BridgeDecision.update(of: message, from: source.backend, isOwnCopy: isOwnCopy(message, from: source, to: target),
                                     known: known) {
        case .nothing:
            return
        case .refuseNotOriginal(let original):
            stats.keyCollisions += 1
            log(.warning, "not bridging changes of \(source.name) message \(message.remoteID) from \(message.sender): it "
                              + "stands under \(id), whose original is \(original)'s")
        case .delete:
            if let deleting = target.adapter as? any DeletingAdapter {
                try await deleting.delete(remote, in: target.conversation)
                stats.updates += 1
            }
            try await remember(message, id: id, from: source, deleted: true)
        case .edit(let text):
            if let editing = target.adapter as? any EditingAdapter {
                try await editing.edit(remote, in: target.conversation, text: text)
                stats.updates += 1
            }
            try await remember(message, id: id, from: source, deleted: false)
        case .remember(let deleted):
            try await remember(message, id: id, from: source, deleted: deleted)
        }
    }

    /// Keeps the last bridged text and deletion of a message, so an edit is applied once.
    func remember(_ message: RemoteMessage, id: MessageID, from source: BridgeSide, deleted: Bool) async throws {
        let entry = ledgerEntry(message, id: id, from: source, deleted: deleted)
        try await store.write { try $0.upsertBridgeCopy(entry) }
    }

    /// The pair's ledger entry for a message as bridged now (`persist` marks it pending while its copy is prepared
    /// but not yet published). It names the original's sender and side, so only its author can change the copy.
    func ledgerEntry(_ message: RemoteMessage, id: MessageID, from source: BridgeSide, deleted: Bool) -> BridgeCopy {
        BridgeCopy(pair: pair, messageID: id, origin: source.backend, sender: message.sender, text: message.text,
                   sentAt: message.sentAt, editedAt: message.editedAt,
                   deletedAt: deleted ? (message.deletedAt ?? Date()) : nil)
    }

    /// Downloads each attachment from the source and uploads it to the target, checking the digest.
    func rehost(_ attachments: [Attachment], from source: BridgeSide, to target: BridgeSide) async throws -> [Attachment] {
        guard !attachments.isEmpty else { return [] }
        guard let downloader = source.adapter as? any UploadingAdapter, let uploader = target.adapter as? any UploadingAdapter else {
            return []
        }
        var hosted: [Attachment] = []
        for attachment in attachments where attachment.remoteLocation != nil {
            let data = try await downloader.download(attachment)
            let digest = Digest.sha256Hex(data)
            if !attachment.sha256.isEmpty, digest != attachment.sha256 {
                throw SwitchboardError(.storage, "attachment \(attachment.filename): digest mismatch while re-hosting")
            }
            var fresh = Attachment(id: attachment.id, filename: attachment.filename, mimeType: attachment.mimeType,
                                   byteCount: Int64(data.count), sha256: digest)
            fresh = try await uploader.upload(fresh, data: data, in: target.conversation, progress: { _ in })
            hosted.append(fresh)
        }
        return hosted
    }
}
