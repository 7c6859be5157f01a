import Foundation
import SwitchboardCore

// Each capability protocol is offered exactly when the inner adapter offers it; every call that would reach the
// network fails while the user is offline.

extension FaultInjectingAdapter: EditingAdapter where Inner: EditingAdapter {
    /// Edits through the inner adapter unless offline or edits are refused.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try requireOnline()
        if faults.refusesEdits { throw SwitchboardError(.refused, "edit refused (injected)") }
        try await inner.edit(target, in: conversation, text: text)
    }
}

extension FaultInjectingAdapter: DeletingAdapter where Inner: DeletingAdapter {
    /// Deletes through the inner adapter unless offline or deletes are refused.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try requireOnline()
        if faults.refusesDeletes { throw SwitchboardError(.refused, "delete refused (injected)") }
        try await inner.delete(target, in: conversation)
    }
}

extension FaultInjectingAdapter: ReactingAdapter where Inner: ReactingAdapter {
    /// The inner adapter's policy.
    public var reactionPolicy: ReactionPolicy { inner.reactionPolicy }

    /// Reacts through the inner adapter unless offline.
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws {
        try requireOnline()
        try await inner.setReaction(symbol, isActive: isActive, on: target, in: conversation)
    }
}

extension FaultInjectingAdapter: ReceiptAdapter where Inner: ReceiptAdapter {
    /// Sends the receipt through the inner adapter unless offline.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        try requireOnline()
        try await inner.sendReceipt(state, for: target, in: conversation)
    }
}

extension FaultInjectingAdapter: TypingAdapter where Inner: TypingAdapter {
    /// Sends typing through the inner adapter unless offline.
    public func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws {
        try requireOnline()
        try await inner.sendTyping(isTyping, in: conversation)
    }
}

extension FaultInjectingAdapter: UploadingAdapter where Inner: UploadingAdapter {
    /// Uploads through the inner adapter unless offline or uploads of this file name fail.
    public func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment {
        try requireOnline()
        if faults.uploadFails(attachment.filename) {
            throw SwitchboardError(.transport, "upload of \(attachment.filename) failed (injected)", retryable: true)
        }
        return try await inner.upload(attachment, data: data, in: conversation, progress: progress)
    }

    /// Downloads through the inner adapter unless offline.
    public func download(_ attachment: Attachment) async throws -> Data {
        try requireOnline()
        return try await inner.download(attachment)
    }
}

extension FaultInjectingAdapter: OwnMessageFilteringAdapter where Inner: OwnMessageFilteringAdapter {
    /// The inner adapter's filtered changes unless offline.
    public func changesSkippingOwnPlainMessages(in conversation: ConversationID, after cursor: Cursor?,
                                                limit: Int) async throws -> ChangeBatch {
        try requireOnline()
        return try await inner.changesSkippingOwnPlainMessages(in: conversation, after: cursor, limit: limit)
    }

    /// The inner adapter's filtered live stream under the live faults.
    public func liveEventsSkippingOwnMessages(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let inner = self.inner
        return FaultyLiveStream.make(for: localUser, faults: faults) { inner.liveEventsSkippingOwnMessages(in: conversation) }
    }
}

extension FaultInjectingAdapter: MessageCountingAdapter where Inner: MessageCountingAdapter {
    /// The inner adapter's count unless offline.
    public func messageCount(in conversation: ConversationID) async throws -> Int {
        try requireOnline()
        return try await inner.messageCount(in: conversation)
    }
}

extension FaultInjectingAdapter: ConversationCheckingAdapter where Inner: ConversationCheckingAdapter {
    /// The inner adapter's check unless offline.
    public func checkAccess(to conversation: ConversationID) async throws {
        try requireOnline()
        try await inner.checkAccess(to: conversation)
    }
}

extension FaultInjectingAdapter: BulkPublishingAdapter where Inner: BulkPublishingAdapter {
    /// The inner adapter's limit.
    public var bulkPublishLimit: Int { inner.bulkPublishLimit }
    /// The inner adapter's promise.
    public var republishesByKey: Bool { inner.republishesByKey }
}
