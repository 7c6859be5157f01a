import Foundation
import SwitchboardCore
import SwitchboardStore

extension ChatClient {
    /// Uploads a message's pending attachments independently, persisting each one's state, then settles the message:
    /// all uploaded → prepare and publish; none → failed; some → the message carries the uploaded ones and a
    /// separate failed placeholder holds the rest, with retry.
    func startUploads(for id: MessageID) {
        guard uploadTasks[id] == nil else { return }
        let token = UUID()
        uploadTokens[id] = token
        uploadTasks[id] = Task { [weak self] in
            await self?.runUploads(for: id, token: token)
        }
    }

    private func runUploads(for id: MessageID, token: UUID) async {
        defer {
            // A task cancelled by stop() must not clear the entry of one started after a restart.
            if uploadTokens[id] == token {
                uploadTasks[id] = nil
                uploadTokens[id] = nil
                uploadProgress[id] = nil
            }
            wake()
        }
        guard let message = try? await message(id) else { return }
        guard let uploader = adapter as? any UploadingAdapter else {
            try? await settle(id, failure: "\(backend) does not host attachments")
            return
        }
        let todo = message.content.attachments.filter { $0.upload != .uploaded && !Self.isFailed($0.upload) }
        await withTaskGroup(of: Void.self) { group in
            for attachment in todo {
                group.addTask { [weak self] in
                    await self?.upload(attachment, of: id, in: message.conversation, with: uploader)
                }
            }
        }
        if Task.isCancelled { return }
        do { try await settle(id, failure: nil) } catch { log(.warning, "settling \(id) failed: \(error)") }
    }

    private func upload(_ attachment: Attachment, of id: MessageID, in conversation: ConversationID,
                        with uploader: any UploadingAdapter) async {
        var working = attachment
        working.upload = .uploading(progress: 0)
        try? await store.write { [working] tx in try tx.updateAttachment(working, of: id) }
        do {
            guard let path = attachment.localPath, let data = FileManager.default.contents(atPath: path) else {
                throw SwitchboardError(.notFound, "local copy of \(attachment.filename) is gone")
            }
            guard Digest.sha256Hex(data) == attachment.sha256 else {
                throw SwitchboardError(.conflict, "local copy of \(attachment.filename) changed since it was attached")
            }
            let attachmentID = attachment.id
            var uploaded = try await uploader.upload(attachment, data: data, in: conversation) { [weak self] fraction in
                Task { await self?.uploadProgressed(id, attachment: attachmentID, fraction: fraction) }
            }
            uploaded.id = attachment.id
            uploaded.localPath = attachment.localPath
            uploaded.upload = .uploaded
            let done = uploaded
            try await store.write { tx in try tx.updateAttachment(done, of: id) }
        } catch {
            if Task.isCancelled { return }
            working.upload = .failed(reason: SwitchboardError.wrapping(error).message)
            let failed = working
            try? await store.write { tx in try tx.updateAttachment(failed, of: id) }
        }
    }

    private func uploadProgressed(_ id: MessageID, attachment: AttachmentID, fraction: Double) async {
        guard var message = try? await message(id), case .uploading = message.delivery else { return }
        uploadProgress[id, default: [:]][attachment] = min(1, max(0, fraction))
        let fractions = uploadProgress[id] ?? [:]
        for index in message.content.attachments.indices {
            if let fraction = fractions[message.content.attachments[index].id], message.content.attachments[index].upload != .uploaded,
               !Self.isFailed(message.content.attachments[index].upload) {
                message.content.attachments[index].upload = .uploading(progress: fraction)
            }
        }
        let total = message.content.attachments.reduce(0.0) { sum, item in
            switch item.upload {
            case .uploaded, .failed: sum + 1
            case .uploading(let p): sum + p
            case .pending: sum
            }
        } / Double(max(1, message.content.attachments.count))
        message.delivery = .uploading(progress: total)
        emit(.messageUpserted(message), in: message.conversation)
    }

    /// Splits or finishes a message whose uploads have all ended, in one transaction.
    private func settle(_ id: MessageID, failure: String?) async throws {
        let clock = now
        let emitted = try await store.write { tx -> [Message] in
            guard var message = try tx.message(id), var entry = try tx.outboxEntry(id) else { return [] }
            var attachments = message.content.attachments
            if let failure {
                for index in attachments.indices where attachments[index].upload != .uploaded {
                    attachments[index].upload = .failed(reason: failure)
                }
            }
            let succeeded = attachments.filter { $0.upload == .uploaded }
            let failed = attachments.filter { $0.upload != .uploaded }
            if failed.isEmpty {
                message.content.attachments = attachments
                message.delivery = entry.noSend ? .draft : .pending
                try tx.upsertMessage(message)
                return [message]
            }
            let reason = failed.count == 1 ? "upload of \(failed[0].filename) failed"
                                           : "\(failed.count) uploads failed"
            if succeeded.isEmpty {
                message.content.attachments = attachments
                message.delivery = .failed(reason: reason, retryable: true)
                entry.status = .failed
                entry.lastError = reason
                try tx.upsertMessage(message)
                try tx.upsertOutbox(entry)
                return [message]
            }
            // Partial failure: the message goes out with what uploaded; a failed placeholder keeps the rest.
            message.content.attachments = succeeded
            message.delivery = entry.noSend ? .draft : .pending
            try tx.upsertMessage(message)
            let placeholderID = MessageID.make()
            let placeholder = Message(id: placeholderID, conversation: message.conversation, sender: message.sender,
                                      content: MessageContent(text: "", attachments: failed,
                                                              metadata: ["switchboard.splitFrom": id.rawValue]),
                                      timestamp: message.timestamp.addingTimeInterval(0.000_001),
                                      delivery: .failed(reason: reason, retryable: true), isOutgoing: true)
            try tx.upsertMessage(placeholder)
            try tx.upsertOutbox(OutboxEntry(messageID: placeholderID, backend: entry.backend, conversation: entry.conversation,
                                            prepared: nil, noSend: entry.noSend, nextAttemptAt: clock, lastError: reason,
                                            status: .failed, createdAt: clock))
            return [message, placeholder]
        }
        for message in emitted { emit(.messageUpserted(message), in: message.conversation) }
    }

    private static func isFailed(_ state: UploadState) -> Bool { if case .failed = state { true } else { false } }
}
