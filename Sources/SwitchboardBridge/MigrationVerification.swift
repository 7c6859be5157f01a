import Foundation
import SwitchboardCore
import SwitchboardStore

/// The differences between a migration's source and target, message by message.
public struct MigrationVerification: Sendable, Hashable {
    /// One message whose copy differs from its original.
    public struct Mismatch: Sendable, Hashable {
        /// The message's `MessageID` (the key on both sides).
        public var id: MessageID
        /// Its ID on the source.
        public var sourceRemoteID: RemoteID
        /// Its copy's ID on the target.
        public var targetRemoteID: RemoteID
        /// What differs: `text` or `attachments`.
        public var field: String
        /// The source's value.
        public var expected: String
        /// The target's value.
        public var found: String
    }

    /// One target message without a live original on the source.
    public struct Extra: Sendable, Hashable {
        /// Its ID on the target.
        public var targetRemoteID: RemoteID
        /// The key it carries (or maps to).
        public var key: MessageID?
        /// Why it is extra: `no original`, `original deleted` or `duplicate`.
        public var reason: String
        /// Its text.
        public var text: String
    }

    /// Live (not deleted) messages on the source.
    public var sourceMessages = 0
    /// Deleted messages on the source (not expected on the target).
    public var sourceDeleted = 0
    /// Live messages on the target.
    public var targetMessages = 0
    /// Source messages whose copy matches.
    public var matched = 0
    /// How many live source messages have no live copy on the target.
    public var missingCount = 0
    /// The first of those (by source order).
    public var missing: [RemoteMessage] = []
    /// How many live target messages have no live original.
    public var extraCount = 0
    /// The first of those.
    public var extra: [Extra] = []
    /// How many copies differ from their original.
    public var mismatchCount = 0
    /// The first of those.
    public var mismatches: [Mismatch] = []

    /// No message missing, extra or different.
    public var isClean: Bool { missingCount == 0 && extraCount == 0 && mismatchCount == 0 }
}

extension Migration {
    /// Every message of `bridgeSide`'s conversation; a failure is a `MigrationError` of `side` (source or target).
    private func history(of bridgeSide: BridgeSide, side: String) async throws -> [RemoteMessage] {
        do {
            return try await allMessages(of: bridgeSide)
        } catch {
            throw MigrationError(side: side, "cannot read the history of \(bridgeSide.name) conversation "
                                 + "\(bridgeSide.conversation): \(error)")
        }
    }

    /// Pages both histories fully and compares them by key: a target message's key (its idempotency key, else
    /// the store's ID map) must be a live source message's `MessageID` (its key, else the ID map, else the
    /// bridge's derivation), with the same text (and attachment count when both sides host attachments).
    public func verify() async throws -> MigrationVerification {
        let sourceMessages = try await history(of: source, side: "source")
        let targetMessages = try await history(of: target, side: "target")
        let limit = configuration.sampleLimit
        let sourceBackend = source.backend, targetBackend = target.backend
        let compareAttachments = source.adapter is any UploadingAdapter && target.adapter is any UploadingAdapter
        var result = MigrationVerification()

        let (originals, order, deleted) = try await store.read { tx -> ([MessageID: RemoteMessage], [MessageID], Set<MessageID>) in
            var originals: [MessageID: RemoteMessage] = [:]
            var order: [MessageID] = []
            var deleted = Set<MessageID>()
            for message in sourceMessages {
                let id = try message.idempotencyKey ?? tx.messageID(backend: sourceBackend, remoteID: message.remoteID)
                    ?? MessageID.derived(backend: sourceBackend, remote: message.remoteID)
                if message.deletedAt != nil {
                    deleted.insert(id)
                    continue
                }
                if originals.updateValue(message, forKey: id) == nil { order.append(id) }
            }
            return (originals, order, deleted)
        }
        result.sourceMessages = originals.count
        result.sourceDeleted = deleted.subtracting(originals.keys).count

        let (copies, counted) = try await store.read { [result] tx -> ([MessageID: RemoteMessage], MigrationVerification) in
            var result = result
            var copies: [MessageID: RemoteMessage] = [:]
            for message in targetMessages where message.deletedAt == nil {
                result.targetMessages += 1
                let key = try message.idempotencyKey ?? tx.messageID(backend: targetBackend, remoteID: message.remoteID)
                var reason: String?
                if let key, originals[key] != nil {
                    if copies[key] == nil { copies[key] = message } else { reason = "duplicate" }
                } else {
                    reason = key.map { deleted.contains($0) } == true ? "original deleted" : "no original"
                }
                if let reason {
                    result.extraCount += 1
                    if result.extra.count < limit {
                        result.extra.append(.init(targetRemoteID: message.remoteID, key: key, reason: reason, text: message.text))
                    }
                }
            }
            return (copies, result)
        }
        result = counted

        for id in order {
            guard let original = originals[id] else { continue }
            guard let copy = copies[id] else {
                result.missingCount += 1
                if result.missing.count < limit { result.missing.append(original) }
                continue
            }
            let expectedText = original.text.isEmpty && original.attachments.isEmpty ? "(empty message)" : original.text
            var difference: (field: String, expected: String, found: String)?
            if copy.text != expectedText {
                difference = ("text", expectedText, copy.text)
            } else if compareAttachments, copy.attachments.count != original.attachments.count {
                difference = ("attachments", "\(original.attachments.count)", "\(copy.attachments.count)")
            }
            if let difference {
                result.mismatchCount += 1
                if result.mismatches.count < limit {
                    result.mismatches.append(.init(id: id, sourceRemoteID: original.remoteID, targetRemoteID: copy.remoteID,
                                                   field: difference.field, expected: difference.expected,
                                                   found: difference.found))
                }
            } else {
                result.matched += 1
            }
        }
        return result
    }

    /// Every message of a side's conversation, oldest first, paging its history back to the beginning.
    func allMessages(of side: BridgeSide) async throws -> [RemoteMessage] {
        var pages: [[RemoteMessage]] = []
        var cursor: Cursor?
        repeat {
            try Task.checkCancellation()
            let page = try await side.adapter.history(in: side.conversation, before: cursor, limit: configuration.historyPageSize)
            pages.append(page.messages)
            cursor = page.olderCursor
        } while cursor != nil
        return pages.reversed().flatMap { $0 }
    }
}
