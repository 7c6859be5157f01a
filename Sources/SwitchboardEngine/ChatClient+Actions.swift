import Foundation
import SwitchboardCore
import SwitchboardStore

/// An edit, delete, reaction or receipt on a message that is not published yet; sent once it is.
struct DeferredAction: Codable, Sendable {
    enum Kind: String, Codable, Sendable { case edit, delete, reaction, receipt }
    var kind: Kind
    var messageID: MessageID
    var text: String?
    var symbol: String?
    var isActive: Bool?
    var receipt: ReceiptState?
    /// The message before the optimistic change, restored if the backend refuses the deferred request.
    var snapshot: Message?
}

extension ChatClient {
    /// Edits the text of one of the local user's messages: checked against the window, applied at once,
    /// sent, and rolled back if the backend refuses.
    public func edit(_ id: MessageID, text: String) async throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw SwitchboardError(.emptyMessage, "an edit needs text") }
        guard text.utf8.count <= adapter.capabilities.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge, "text is \(text.utf8.count) bytes; limit \(adapter.capabilities.maxTextBytes)")
        }
        guard let editing = adapter as? any EditingAdapter else {
            throw SwitchboardError(.notSupported, "\(backend) does not support edits")
        }
        let snapshot = try await ownMessage(id, verb: "edit")
        guard now.timeIntervalSince(snapshot.timestamp) <= configuration.editWindow else {
            throw SwitchboardError(.editWindowExpired,
                                   "messages can be edited for \(Int(configuration.editWindow / 60)) minutes after sending")
        }
        var edited = snapshot
        edited.content.text = text
        edited.editedAt = now
        try await commit(edited, event: .contentEdited(edited))
        guard snapshot.delivery.isPublished, let remote = try? await remoteID(id) else {
            try await deferUntilPublished(DeferredAction(kind: .edit, messageID: id, text: text, snapshot: snapshot), until: id)
            return
        }
        do {
            try await editing.edit(remote, in: snapshot.conversation, text: text)
        } catch {
            try await rollBack(to: snapshot, event: .contentEdited(snapshot), after: error)
        }
    }

    /// Deletes one of the local user's messages (a tombstone stays): checked, applied, sent, rolled back on refusal.
    /// An unpublished message is discarded instead.
    public func delete(_ id: MessageID) async throws {
        let snapshot = try await ownMessage(id, verb: "delete")
        if !snapshot.delivery.isPublished && !inFlight.contains(id) {
            try await discard(id)
            return
        }
        guard let deleting = adapter as? any DeletingAdapter else {
            throw SwitchboardError(.notSupported, "\(backend) does not support deletes")
        }
        guard now.timeIntervalSince(snapshot.timestamp) <= configuration.deleteWindow else {
            throw SwitchboardError(.deleteWindowExpired,
                                   "messages can be deleted for \(Int(configuration.deleteWindow / 3600)) hours after sending")
        }
        var deleted = snapshot
        deleted.deletedAt = now
        deleted.content.text = ""
        try await commit(deleted, event: .deleted(deleted))
        guard snapshot.delivery.isPublished, let remote = try? await remoteID(id) else {
            try await deferUntilPublished(DeferredAction(kind: .delete, messageID: id, snapshot: snapshot), until: id)
            return
        }
        do {
            try await deleting.delete(remote, in: snapshot.conversation)
        } catch {
            try await rollBack(to: snapshot, event: .deleted(snapshot), after: error)
        }
    }

    /// Taps a reaction: toggles it (one per user per symbol) or replaces the user's reaction (one per user),
    /// as the backend's policy says; applied at once and rolled back on refusal.
    public func react(_ id: MessageID, symbol: String) async throws {
        guard !symbol.isEmpty, symbol.utf8.count <= 64 else {
            throw SwitchboardError(.invalidArgument, "a reaction symbol is 1 to 64 bytes")
        }
        guard let reacting = adapter as? any ReactingAdapter else {
            throw SwitchboardError(.notSupported, "\(backend) does not support reactions")
        }
        guard let snapshot = try await message(id) else { throw SwitchboardError(.unknownMessage, "no message \(id)") }
        guard !snapshot.isDeleted else { throw SwitchboardError(.invalidArgument, "message \(id) is deleted") }
        let user = localUser
        let had = snapshot.reactions.contains { $0.user == user && $0.symbol == symbol }
        var updated = snapshot
        switch reacting.reactionPolicy {
        case .onePerUserPerSymbol:
            if had { updated.reactions.removeAll { $0.user == user && $0.symbol == symbol } }
            else { updated.reactions.append(Reaction(user: user, symbol: symbol, at: now)) }
        case .onePerUser:
            updated.reactions.removeAll { $0.user == user }
            if !had { updated.reactions.append(Reaction(user: user, symbol: symbol, at: now)) }
        }
        reactionsInFlight[id, default: 0] += 1
        defer {
            reactionsInFlight[id, default: 1] -= 1
            if reactionsInFlight[id] == 0 { reactionsInFlight[id] = nil }
        }
        try await commit(updated, event: .reactionsChanged(updated))
        guard snapshot.delivery.isPublished, let remote = try? await remoteID(id) else {
            try await deferUntilPublished(DeferredAction(kind: .reaction, messageID: id, symbol: symbol, isActive: !had,
                                                   snapshot: snapshot), until: id)
            return
        }
        do {
            try await reacting.setReaction(symbol, isActive: !had, on: remote, in: snapshot.conversation)
        } catch {
            try await rollBack(to: snapshot, event: .reactionsChanged(snapshot), after: error)
        }
    }

    /// Marks a received message as delivered.
    public func markDelivered(_ id: MessageID) async throws { try await acknowledge(id, state: .delivered) }

    /// Marks a received message as read; receipts never step back.
    public func markRead(_ id: MessageID) async throws { try await acknowledge(id, state: .read) }

    private func acknowledge(_ id: MessageID, state: ReceiptState) async throws {
        guard let receipting = adapter as? any ReceiptAdapter else {
            throw SwitchboardError(.notSupported, "\(backend) does not support receipts")
        }
        guard let message = try await message(id) else { throw SwitchboardError(.unknownMessage, "no message \(id)") }
        let user = localUser
        if let existing = try await receipts(of: id).first(where: { $0.user == user }), existing.state >= state { return }
        let receipt = Receipt(message: id, user: user, state: state, at: now)
        try await store.write { tx in try tx.upsertReceipt(receipt) }
        emit(.receiptChanged(message, receipt), in: message.conversation)
        try await receipting.sendReceipt(state, for: try remoteID(id), in: message.conversation)
    }

    /// Says the local user is typing (debounced; "stopped" is sent after idle) or stopped. Never persisted.
    public func setTyping(_ isTyping: Bool, in id: ConversationID) async throws {
        guard let typing = adapter as? any TypingAdapter else { return }
        let state = try state(id)
        state.localTypingIdleTask?.cancel()
        state.localTypingIdleTask = nil
        if isTyping {
            let current = configuration.clock()
            if let last = state.localTypingSentAt, current.timeIntervalSince(last) < configuration.typingDebounce {
                // Debounced: the others already know.
            } else {
                state.localTypingSentAt = current
                try await typing.sendTyping(true, in: id)
            }
            let idle = configuration.typingIdleTimeout
            state.localTypingIdleTask = Task { [weak self] in
                try? await Task.sleep(for: .seconds(idle))
                guard !Task.isCancelled else { return }
                try? await self?.setTyping(false, in: id)
            }
        } else if state.localTypingSentAt != nil {
            state.localTypingSentAt = nil
            try await typing.sendTyping(false, in: id)
        }
    }

    /// Shows someone else's typing indicator and clears it after the timeout unless renewed.
    func remoteTyping(_ user: UserID, isTyping: Bool, in id: ConversationID) {
        guard let state = conversations[id], user != localUser else { return }
        state.typingExpiry[user]?.cancel()
        state.typingExpiry[user] = nil
        if isTyping {
            let timeout = configuration.remoteTypingTimeout
            state.typingExpiry[user] = Task { [weak self] in
                try? await Task.sleep(for: .seconds(timeout))
                guard !Task.isCancelled else { return }
                await self?.remoteTyping(user, isTyping: false, in: id)
            }
        }
        emit(.typingChanged(user: user, isTyping: isTyping), in: id)
    }

    // MARK: - Helpers

    private func ownMessage(_ id: MessageID, verb: String) async throws -> Message {
        guard let message = try await message(id) else { throw SwitchboardError(.unknownMessage, "no message \(id)") }
        guard message.sender == localUser else { throw SwitchboardError(.notOwner, "only the sender can \(verb) a message") }
        guard !message.isDeleted else { throw SwitchboardError(.invalidArgument, "message \(id) is deleted") }
        return message
    }

    private func remoteID(_ id: MessageID) async throws -> RemoteID {
        let backend = self.backend
        guard let remote = try await store.read({ tx in try tx.remoteID(of: id, backend: backend, part: 0) }) else {
            throw SwitchboardError(.unknownMessage, "message \(id) has no ID on \(backend) yet")
        }
        return remote
    }

    /// Stores the fields a local edit, delete or reaction changed onto the row as it is now, in one transaction (so
    /// news that landed since the message was read, such as its echo marking it sent, stays), and emits `event` with
    /// the stored row.
    private func commit(_ message: Message, event: ConversationEvent) async throws {
        let stored = try await Self.storeLocalFields(of: message, in: store) ?? message
        emit(Self.event(like: event, with: stored), in: message.conversation)
    }

    /// Writes the fields a local edit, delete or reaction touches (text, edit and delete times, reactions) from
    /// `message` onto the stored row in one transaction; returns the row as stored, nil when it is gone.
    private static func storeLocalFields(of message: Message, in store: any Store) async throws -> Message? {
        try await store.write { tx in
            guard var current = try tx.message(message.id) else { return nil }
            current.content.text = message.content.text
            current.editedAt = message.editedAt
            current.deletedAt = message.deletedAt
            current.reactions = message.reactions
            try tx.upsertMessage(current)
            return current
        }
    }

    /// `event`'s kind (edited, deleted, reactions changed) carrying `message`.
    private static func event(like event: ConversationEvent, with message: Message) -> ConversationEvent {
        switch event {
        case .contentEdited: .contentEdited(message)
        case .deleted: .deleted(message)
        default: .reactionsChanged(message)
        }
    }

    private func rollBack(to snapshot: Message, event: ConversationEvent, after error: any Error) async throws -> Never {
        // Only the fields the operation touched roll back; news that arrived meanwhile stays.
        let restored = try await Self.storeLocalFields(of: snapshot, in: store) ?? snapshot
        emit(Self.event(like: event, with: restored), in: snapshot.conversation)
        let failure = SwitchboardError.wrapping(error)
        throw SwitchboardError(failure.code, "rolled back: \(failure.message)", retryable: failure.isRetryable)
    }

    private func deferUntilPublished(_ action: DeferredAction, until id: MessageID) async throws {
        let payload = try JSONEncoder().encode(action)
        let operation = PendingOperation(waitKey: WaitKey.published(id), kind: action.kind.rawValue, payload: payload, createdAt: now)
        _ = try await store.write { tx in try tx.enqueuePending(operation) }
        pendingWaitKeys.insert(operation.waitKey)
    }

    /// Runs the operations waiting on `key` whose target is now resolvable.
    func flushOperations(waitingOn key: WaitKey) async {
        guard pendingWaitKeys.contains(key) else { return }
        guard let operations = try? await store.read({ tx in try tx.pendingOperations(waitingOn: key) }) else { return }
        if operations.isEmpty { pendingWaitKeys.remove(key) }
        for operation in operations { await run(operation) }
    }

    /// Runs every waiting operation whose target has become resolvable (after a sync or a restart).
    func flushAllPendingOperations() async throws {
        for operation in try await store.read({ tx in try tx.allPendingOperations() }) { await run(operation) }
    }

    private func run(_ operation: PendingOperation) async {
        do {
            if operation.kind == "incoming" {
                let change = try JSONDecoder().decode(RemoteChange.self, from: operation.payload)
                let target: RemoteID
                switch change {
                case .reaction(let r): target = r.target
                case .receipt(let r): target = r.target
                case .message(let m): target = m.remoteID
                }
                let backend = self.backend
                let events = try await reconcile { reconciler, tx -> [ConversationEvent]? in
                    guard try tx.messageID(backend: backend, remoteID: target) != nil else { return nil }
                    try tx.removePending(operation.id)
                    return try reconciler.apply(change, tx: tx)
                }
                for event in events ?? [] {
                    if let conversation = event.message?.conversation { emit(event, in: conversation) }
                }
                return
            }
            let action = try JSONDecoder().decode(DeferredAction.self, from: operation.payload)
            guard let message = try await message(action.messageID) else {
                try await store.write { tx in try tx.removePending(operation.id) }
                return
            }
            // Keep waiting until the message is published AND its backend ID is known (echo-only backends).
            guard message.delivery.isPublished, let remote = try? await remoteID(action.messageID) else { return }
            try await store.write { tx in try tx.removePending(operation.id) }
            do {
                try await perform(action, remote: remote, in: message.conversation)
            } catch {
                // The request was refused after the user moved on: the event stream shows the rollback.
                if let snapshot = action.snapshot {
                    let event: ConversationEvent = switch action.kind {
                    case .edit: .contentEdited(snapshot)
                    case .delete: .deleted(snapshot)
                    default: .reactionsChanged(snapshot)
                    }
                    _ = try? await rollBack(to: snapshot, event: event, after: error)
                }
                throw error
            }
        } catch {
            log(.warning, "deferred \(operation.kind) failed: \(error)")
        }
    }

    private func perform(_ action: DeferredAction, remote: RemoteID, in conversation: ConversationID) async throws {
        switch action.kind {
        case .edit: try await (adapter as? any EditingAdapter)?.edit(remote, in: conversation, text: action.text ?? "")
        case .delete: try await (adapter as? any DeletingAdapter)?.delete(remote, in: conversation)
        case .reaction:
            try await (adapter as? any ReactingAdapter)?.setReaction(action.symbol ?? "", isActive: action.isActive ?? true,
                                                                    on: remote, in: conversation)
        case .receipt:
            try await (adapter as? any ReceiptAdapter)?.sendReceipt(action.receipt ?? .read, for: remote, in: conversation)
        }
    }
}
