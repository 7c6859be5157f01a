import Foundation
import SwitchboardCore
import SwitchboardStore

extension ChatClient {
    /// Composes a message and shows it at once: stored with its outbox entry (and mapping, where the backend can
    /// compute it) in one transaction, before any network call. With `noSend` it waits for `publish(_:)`.
    @discardableResult
    public func send(_ text: String, in conversation: ConversationID, replyTo: MessageID? = nil,
                     attachments: [AttachmentSource] = [], metadata: [String: String] = [:],
                     noSend: Bool = false) async throws -> Message {
        let limits = adapter.capabilities
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty || !attachments.isEmpty else {
            throw SwitchboardError(.emptyMessage, "a message needs text or at least one attachment")
        }
        guard text.utf8.count <= limits.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge,
                                   "text is \(text.utf8.count) bytes; \(backend) accepts at most \(limits.maxTextBytes)")
        }
        guard attachments.count <= limits.maxAttachmentsPerMessage else {
            throw SwitchboardError(.contentTooLarge,
                                   "\(attachments.count) attachments; \(backend) accepts at most \(limits.maxAttachmentsPerMessage)")
        }
        if let replyTo, try await message(replyTo) == nil {
            throw SwitchboardError(.unknownMessage, "cannot reply to unknown message \(replyTo)")
        }
        let staged = try attachments.map { try stage($0, limit: limits.maxAttachmentBytes) }
        let id = MessageID.make()
        let createdAt = now
        var message = Message(id: id, conversation: conversation, sender: localUser,
                              content: MessageContent(text: text, replyTo: replyTo, attachments: staged, metadata: metadata),
                              timestamp: createdAt, delivery: staged.isEmpty ? (noSend ? .draft : .pending) : .uploading(progress: 0),
                              isOutgoing: true)
        var entry = OutboxEntry(messageID: id, backend: backend, conversation: conversation, prepared: nil, noSend: noSend,
                                nextAttemptAt: createdAt, status: .awaitingUploads, createdAt: createdAt)
        var prepared: PreparedMessage?
        if staged.isEmpty, let outgoing = try await outgoingIfReady(message) {
            prepared = try await adapter.prepare(outgoing, noSend: noSend)
            entry.prepared = prepared
            entry.status = .queued
        } else if staged.isEmpty {
            message.delivery = noSend ? .draft : .pending
        }
        let backend = self.backend
        try await store.write { [message, entry, prepared] tx in
            try tx.insertNewMessage(message)  // a fresh ID: nothing to clear first
            try tx.upsertOutbox(entry)
            if let remote = prepared?.remoteID {
                try tx.insertMapping(IDMapping(messageID: id, backend: backend, conversation: conversation, remoteID: remote))
            }
        }
        emit(.messageUpserted(message), in: conversation)
        if !staged.isEmpty { startUploads(for: id) } else { wakeAfterReturning() }
        return message
    }

    /// Publishes one prepared message now (releasing a noSend hold); a published message is a no-op.
    public func publish(_ id: MessageID) async throws {
        guard var entry = try await store.read({ tx in try tx.outboxEntry(id) }) else {
            guard let message = try await message(id) else {
                throw SwitchboardError(.unknownMessage, "no message \(id)")
            }
            if message.delivery.isPublished { return }
            throw SwitchboardError(.unknownMessage, "message \(id) has nothing to publish")
        }
        if entry.noSend {
            // Read and released in one transaction, so an entry finished meanwhile is not brought back.
            let released: (entry: OutboxEntry, message: Message?)? = try await store.write { tx in
                guard var entry = try tx.outboxEntry(id) else { return nil }
                entry.noSend = false
                try tx.upsertOutbox(entry)
                var message = try tx.message(id)
                if message?.delivery == .draft {
                    message?.delivery = .pending
                    try message.map(tx.upsertMessage)
                }
                return (entry, message)
            }
            guard let released else { return }
            entry = released.entry
            if let message = released.message { emit(.messageUpserted(message), in: message.conversation) }
        }
        switch entry.status {
        case .awaitingUploads:
            wake()
        case .failed:
            try await retry(id)
        case .queued:
            // The publish's failure as its source classified it (a retryable one is also retried by the outbox),
            // unless the echo has meanwhile shown the message published.
            if case .failed(let failure) = try await attemptPublish(entry, force: true),
               try await message(id)?.delivery.isPublished != true {
                throw failure
            }
        }
    }

    /// Publishes every queued message that is not held by noSend, oldest first, and returns when done.
    public func publishAll() async {
        let backend = self.backend
        let entries = (try? await store.read { tx in try tx.outbox(backend: backend) }) ?? []
        for entry in entries where entry.status == .queued && !entry.noSend {
            _ = try? await attemptPublish(entry, force: true)
        }
    }

    /// Drops an unpublished message locally (libxmtp's `deleteMessageLocally`); a published one is an error.
    public func discard(_ id: MessageID) async throws {
        guard let message = try await message(id) else { throw SwitchboardError(.unknownMessage, "no message \(id)") }
        if message.delivery.isPublished || !message.isOutgoing {
            throw SwitchboardError(.alreadyPublished, "message \(id) is already published; delete it instead")
        }
        if inFlight.contains(id) {
            throw SwitchboardError(.conflict, "message \(id) is being published right now")
        }
        uploadTasks[id]?.cancel()
        uploadTasks[id] = nil
        uploadTokens[id] = nil
        if let prepared = try await store.read({ tx in try tx.outboxEntry(id) })?.prepared {
            try await adapter.discard(prepared)
        }
        try await store.write { tx in try tx.removeMessage(id) }
        emit(.removed(id), in: message.conversation)
    }

    /// Re-enters a failed message into the ladder under the same `MessageID` (re-uploading failed attachments).
    public func retry(_ id: MessageID) async throws {
        let now = self.now
        // Read and re-queued in one transaction, so an echo that landed meanwhile is not undone.
        let requeued: (message: Message, needsUpload: Bool)? = try await store.write { tx in
            guard var message = try tx.message(id) else { throw SwitchboardError(.unknownMessage, "no message \(id)") }
            guard var entry = try tx.outboxEntry(id), entry.status == .failed else {
                if message.delivery.isPublished { return nil }
                throw SwitchboardError(.invalidArgument, "message \(id) has not failed")
            }
            entry.attempts = 0
            entry.lastError = nil
            entry.nextAttemptAt = now
            let needsUpload = message.content.attachments.contains { $0.upload != .uploaded }
            if needsUpload {
                for index in message.content.attachments.indices where message.content.attachments[index].upload != .uploaded {
                    message.content.attachments[index].upload = .pending
                }
                entry.status = .awaitingUploads
                entry.prepared = nil
                message.delivery = .uploading(progress: 0)
            } else {
                entry.status = entry.prepared == nil ? .awaitingUploads : .queued
                message.delivery = entry.noSend ? .draft : .pending
            }
            try tx.upsertMessage(message)
            try tx.upsertOutbox(entry)
            return (message, needsUpload)
        }
        guard let requeued else { return }
        emit(.messageUpserted(requeued.message), in: requeued.message.conversation)
        if requeued.needsUpload { startUploads(for: id) } else { wakeAfterReturning() }
    }

    // MARK: - Preparation

    /// The adapter's view of a message, or nil while its reply target has no backend ID yet.
    func outgoingIfReady(_ message: Message) async throws -> OutgoingMessage? {
        var replyRemote: RemoteID?
        if let replyTo = message.content.replyTo {
            let backend = self.backend
            guard let target = try await store.read({ tx in try tx.message(replyTo) }) else {
                throw SwitchboardError(.unknownMessage, "reply target \(replyTo) vanished")
            }
            let remote = try await store.read { tx in try tx.remoteID(of: replyTo, backend: backend, part: 0) }
            guard let remote, target.delivery.isPublished else { return nil }
            replyRemote = remote
        }
        guard message.content.attachments.allSatisfy({ $0.upload == .uploaded }) else { return nil }
        return OutgoingMessage(id: message.id, conversation: message.conversation, sender: message.sender,
                               text: message.content.text, replyTo: replyRemote,
                               attachments: message.content.attachments, metadata: message.content.metadata,
                               createdAt: message.timestamp)
    }

    /// Prepares entries still waiting (attachments uploaded, reply target published); returns how many became queued.
    func prepareWaitingEntries() async -> Int {
        let backend = self.backend
        let waiting = ((try? await store.read { tx in try tx.outbox(backend: backend) }) ?? [])
            .filter { $0.status == .awaitingUploads && uploadTasks[$0.messageID] == nil }
        var count = 0
        for var entry in waiting {
            do {
                guard var message = try await message(entry.messageID),
                      let outgoing = try await outgoingIfReady(message) else { continue }
                let prepared = try await adapter.prepare(outgoing, noSend: entry.noSend)
                entry.prepared = prepared
                entry.status = .queued
                entry.nextAttemptAt = now
                message.delivery = entry.noSend ? .draft : .pending
                let (finalEntry, finalMessage) = (entry, message)
                try await store.write { tx in
                    guard try tx.outboxEntry(finalEntry.messageID) != nil else { return }
                    try tx.upsertOutbox(finalEntry)
                    try tx.upsertMessage(finalMessage)
                    if let remote = prepared.remoteID {
                        try tx.insertMapping(IDMapping(messageID: finalEntry.messageID, backend: backend,
                                                       conversation: finalEntry.conversation, remoteID: remote))
                    }
                }
                emit(.messageUpserted(finalMessage), in: finalMessage.conversation)
                count += 1
            } catch {
                log(.warning, "prepare of \(entry.messageID) failed: \(error)")
            }
        }
        return count
    }

    // MARK: - Outbox worker

    /// Wakes the outbox worker from a task of its own, for calls that return to a waiting user (send, retry).
    ///
    /// Woken directly, the worker's job is queued on this actor when the call returns, so the thread that ran the
    /// call goes on with the publish and the caller waits for another thread to be woken; on a busy 2-core machine
    /// the scheduler often runs that thread only once the publish is done. Woken this way, the caller resumes at
    /// once and the publish follows (`bench send`: p99 0.59 → 0.50 ms, see BENCHMARKS.md).
    func wakeAfterReturning() {
        Task.detached(priority: .utility) { [weak self] in await self?.wake() }
    }

    /// Lets the outbox worker run its next pass now (or right after the pass it is in).
    func wake() {
        wakeRequested = true
        if let continuation = wakeContinuation {
            wakeContinuation = nil
            continuation.resume()
        }
    }

    private func sleep(until deadline: Date?) async {
        if wakeRequested { wakeRequested = false; return }
        wakeTimer?.cancel()
        if let deadline {
            let delay = max(0, deadline.timeIntervalSince(configuration.clock()))
            wakeTimer = Task { [weak self] in
                try? await Task.sleep(for: .seconds(delay))
                if !Task.isCancelled { await self?.wake() }
            }
        }
        await withCheckedContinuation { continuation in
            if wakeRequested { continuation.resume() } else { wakeContinuation = continuation }
        }
        wakeRequested = false
    }

    func runOutboxWorker() async {
        let backend = self.backend
        while !Task.isCancelled {
            _ = await prepareWaitingEntries()
            let now = configuration.clock()
            let due = (try? await store.read { tx in try tx.dueOutbox(backend: backend, now: now, limit: 64) }) ?? []
            var attempted = false
            for entry in due where !Task.isCancelled && !inFlight.contains(entry.messageID) {
                if let attempt = try? await attemptPublish(entry, force: false), attempt != .skipped { attempted = true }
            }
            if attempted { continue }
            // Nothing to do now: sleep until the next retry is due or someone wakes the worker
            // (a send, a completed attempt elsewhere, an upload settling).
            let next = (try? await store.read { tx in try tx.outbox(backend: backend) })?
                .filter { $0.status == .queued && !$0.noSend && !inFlight.contains($0.messageID) }
                .map(\.nextAttemptAt).min()
            if Task.isCancelled { return }
            await sleep(until: next)
        }
    }

    /// What one publish attempt came to.
    enum PublishAttempt: Equatable {
        /// Not attempted: in flight already, not queued, held by noSend or not due.
        case skipped
        /// Published.
        case published
        /// The publish failed with this error (classified where it was raised); the outbox retries it when
        /// retryable and attempts remain.
        case failed(SwitchboardError)
    }

    /// One publish attempt of one entry under its stored key; the outcome is persisted in one transaction.
    @discardableResult
    func attemptPublish(_ entry: OutboxEntry, force: Bool) async throws -> PublishAttempt {
        let id = entry.messageID
        guard !inFlight.contains(id) else { return .skipped }
        guard let current = try await store.read({ tx in try tx.outboxEntry(id) }), current.status == .queued,
              let prepared = current.prepared else { return .skipped }
        if current.noSend && !force { return .skipped }
        if !force && current.nextAttemptAt > configuration.clock() { return .skipped }
        inFlight.insert(id)
        defer { inFlight.remove(id) }
        // Read and changed in one transaction: an echo landing meanwhile (it marks the row sent) is never undone.
        let sending: Message? = try await store.write { tx in
            guard var message = try tx.message(id), !message.delivery.isPublished else { return nil }
            message.delivery = .sending
            try tx.upsertMessage(message)
            return message
        }
        if let sending { emit(.messageUpserted(sending), in: sending.conversation) }
        var machine = OutboxAttemptMachine(policy: configuration.retry, attempts: current.attempts)
        let action: OutboxAttemptMachine.Action
        var publishReceipt: PublishReceipt?
        var failure: SwitchboardError?
        do {
            publishReceipt = try await adapter.publish(prepared)
            action = machine.publishSucceeded()
        } catch {
            let classified = SwitchboardError.wrapping(error)
            failure = classified
            log(.debug, "publish of \(id) failed: \(classified)")
            action = machine.publishFailed(classified, now: configuration.clock(), random: Double.random(in: 0...1))
        }
        try await finishAttempt(id, prepared: prepared, action: action, receipt: publishReceipt, attempts: machine.attempts)
        return failure.map(PublishAttempt.failed) ?? .published
    }

    private func finishAttempt(_ id: MessageID, prepared: PreparedMessage, action: OutboxAttemptMachine.Action,
                               receipt: PublishReceipt?, attempts: Int) async throws {
        let backend = self.backend
        let updated: Message? = try await store.write { tx -> Message? in
            guard var entry = try tx.outboxEntry(id), var message = try tx.message(id) else {
                return nil  // the echo already completed it, or it was discarded
            }
            switch action {
            case .complete:
                if let remote = receipt?.remoteID ?? prepared.remoteID {
                    try tx.insertMapping(IDMapping(messageID: id, backend: backend, conversation: prepared.conversation,
                                                   remoteID: remote))
                }
                try tx.removeOutbox(id)
                if message.delivery.rank < DeliveryState.sent.rank || message.delivery.isFailed {
                    message.delivery = .sent
                }
                if let serverTime = receipt?.serverTime, !message.hasServerTimestamp {
                    message.timestamp = serverTime.roundedToMicroseconds
                    message.hasServerTimestamp = true
                }
            case .retry(let at):
                entry.attempts = attempts
                entry.nextAttemptAt = at
                entry.lastError = "will retry"
                try tx.upsertOutbox(entry)
                if !message.delivery.isPublished { message.delivery = .pending }
            case .fail(let reason, let retryable):
                entry.attempts = attempts
                entry.status = .failed
                entry.lastError = reason
                try tx.upsertOutbox(entry)
                if !message.delivery.isPublished { message.delivery = .failed(reason: reason, retryable: retryable) }
            }
            try tx.upsertMessage(message)
            return message
        }
        if let updated {
            emit(.messageUpserted(updated), in: updated.conversation)
            if case .complete = action { Task { await self.flushOperations(waitingOn: WaitKey.published(id)) } }
        }
        wake()
    }

    // MARK: - Attachments staging

    /// Reads (or writes to the staging folder) an attachment's bytes, checking the size limit.
    private func stage(_ source: AttachmentSource, limit: Int64) throws -> Attachment {
        let id = AttachmentID.make()
        let path: String, filename: String, mimeType: String
        switch source {
        case .file(let filePath, let name, let mime):
            guard FileManager.default.fileExists(atPath: filePath) else {
                throw SwitchboardError(.invalidArgument, "attachment file not found: \(filePath)")
            }
            path = filePath
            filename = name ?? URL(fileURLWithPath: filePath).lastPathComponent
            mimeType = mime ?? Self.mimeType(forExtension: URL(fileURLWithPath: filePath).pathExtension)
        case .data(let data, let name, let mime):
            guard Int64(data.count) <= limit else {
                throw SwitchboardError(.contentTooLarge, "attachment \(name) is \(data.count) bytes; limit \(limit)")
            }
            try FileManager.default.createDirectory(at: configuration.stagingDirectory, withIntermediateDirectories: true)
            let url = configuration.stagingDirectory.appendingPathComponent(id.rawValue)
            try data.write(to: url, options: .atomic)
            path = url.path
            filename = name
            mimeType = mime
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw SwitchboardError(.invalidArgument, "attachment file unreadable: \(path)")
        }
        defer { try? handle.close() }
        var hasher = SHA256Hasher()
        var size: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 16), !chunk.isEmpty {
            size += Int64(chunk.count)
            guard size <= limit else {
                throw SwitchboardError(.contentTooLarge, "attachment \(filename) exceeds \(limit) bytes")
            }
            hasher.update(chunk)
        }
        return Attachment(id: id, filename: filename, mimeType: mimeType, byteCount: size,
                          sha256: Digest.hex(hasher.finalize()), localPath: path)
    }

    static func mimeType(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "png": "image/png"
        case "jpg", "jpeg": "image/jpeg"
        case "gif": "image/gif"
        case "pdf": "application/pdf"
        case "txt": "text/plain"
        case "mp4": "video/mp4"
        default: "application/octet-stream"
        }
    }

}
