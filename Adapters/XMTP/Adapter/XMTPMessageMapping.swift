import Foundation
import SwitchboardCore
import XMTPCodec
import XMTPCrypto

/// Translates between the core's messages and XMTP content: builds outgoing `EncodedContent`, seals and opens
/// envelopes, classifies rows and folds a message's current state from its row and the rows referencing it.
enum XMTPMessageMapping {
    /// Edits count only within this long after the target was sent (libxmtp's receivers enforce it).
    static let editWindowNs: Int64 = 15 * 60 * 1_000_000_000
    /// Deletes count only within this long after the target was sent.
    static let deleteWindowNs: Int64 = 2 * 3600 * 1_000_000_000
    /// The parameter prefix carrying `OutgoingMessage.metadata` (libxmtp ignores unknown parameters).
    static let metadataPrefix = "meta."
    /// The parameter carrying the attachments' switchboard identities (id, MIME type, plaintext digest, size).
    static let attachmentsParameter = "switchboard.attachments"

    // MARK: Outgoing

    /// The `EncodedContent` of an outgoing message: text, or (multi) remote attachments with the text as caption,
    /// wrapped in a reply when it answers another message; metadata as `meta.<key>` parameters.
    static func content(of message: OutgoingMessage, replyInboxID: String?) throws -> XMTPEncodedContent {
        var inner: XMTPEncodedContent
        if message.attachments.isEmpty {
            inner = XMTPText(message.text).encoded()
        } else {
            var remotes: [XMTPRemoteAttachment] = []
            var identities: [JSONValue] = []
            for attachment in message.attachments {
                remotes.append(try remoteAttachment(attachment))
                identities.append(["id": .string(attachment.id.rawValue), "mimeType": .string(attachment.mimeType),
                                   "sha256": .string(attachment.sha256), "byteCount": .int(attachment.byteCount)])
            }
            inner = XMTPMultiRemoteAttachment(attachments: remotes).encoded()
            if !message.text.isEmpty { inner.parameters["caption"] = message.text }
            inner.parameters[attachmentsParameter] = JSONValue.array(identities).serialized
        }
        var outer = inner
        if let reply = message.replyTo {
            outer = XMTPReply(reference: reply.rawValue, referenceInboxID: replyInboxID, content: inner).encoded()
        }
        for (key, value) in message.metadata { outer.parameters[metadataPrefix + key] = value }
        return outer
    }

    /// The `remoteStaticAttachment` info of an uploaded attachment.
    static func remoteAttachment(_ attachment: Attachment) throws -> XMTPRemoteAttachment {
        let parameters = attachment.remoteParameters
        guard let url = attachment.remoteLocation, let digest = parameters["contentDigest"],
              let secret = parameters["secret"].flatMap(Hex.decode), let salt = parameters["salt"].flatMap(Hex.decode),
              let nonce = parameters["nonce"].flatMap(Hex.decode) else {
            throw SwitchboardError(.invalidArgument, "attachment \(attachment.filename) is not uploaded to XMTP remote storage")
        }
        return XMTPRemoteAttachment(url: url, contentDigest: digest, secret: secret, salt: salt, nonce: nonce,
                                    scheme: parameters["scheme"] ?? "https://",
                                    contentLength: parameters["contentLength"].flatMap { UInt32($0) },
                                    filename: parameters["filename"] ?? attachment.filename)
    }

    /// Seals content for the group: `XMTPSealedMessage{sender, content, key}` under the group cipher with
    /// AAD = group ID and a fresh nonce, wrapped in an `XMTPGroupEnvelope`.
    static func seal(content: [UInt8], key: String, sender: String, groupID: [UInt8], cipher: GroupCipher) throws -> [UInt8] {
        let plaintext = XMTPSealedMessage(senderInboxID: sender, content: content, idempotencyKey: key).encoded()
        do {
            let (nonce, ciphertext) = try cipher.seal(plaintext, aad: groupID)
            return XMTPGroupEnvelope(groupID: groupID, nonce: nonce, ciphertext: ciphertext).encoded()
        } catch {
            throw SwitchboardError(.storage, "sealing a message failed: \(error)")
        }
    }

    // MARK: Incoming

    /// Opens an envelope of `groupID` into its row; nil when it does not decrypt or parse (it is skipped).
    /// `groupHex` is `Digest.hex(groupID)`, which a caller opening a page of envelopes computes once.
    static func open(_ envelope: XMTPNodeEnvelope, groupID: [UInt8], groupHex: String, cipher: GroupCipher) -> XMTPMessageRow? {
        guard envelope.groupID == groupID,
              let outer = try? XMTPGroupEnvelope.decode(envelope.data), outer.groupID == groupID,
              let plaintext = try? cipher.open(nonce: outer.nonce, ciphertext: outer.ciphertext, aad: groupID),
              let sealed = try? XMTPSealedMessage.decode(plaintext),
              let encoded = try? XMTPEncodedContent.decode(sealed.content) else { return nil }
        let id = XMTPMessageID.hex(groupID: groupID, idempotencyKey: sealed.idempotencyKey, encodedContent: sealed.content)
        let (type, reference) = classify(encoded)
        return XMTPMessageRow(id: id, groupID: groupHex, content: sealed.content,
                              sentAtNs: Int64(clamping: envelope.createdNs), sender: sealed.senderInboxID, status: .published,
                              contentType: type, referenceID: reference, sequenceID: Int64(clamping: envelope.sequence),
                              idempotencyKey: sealed.idempotencyKey)
    }

    /// The stored content type and reference of content; a known type whose content is invalid is `unknown`.
    static func classify(_ encoded: XMTPEncodedContent) -> (type: String, reference: String?) {
        guard let content = try? XMTPContent.decode(encoded) else { return ("unknown", nil) }
        switch content {
        case .text: return ("text", nil)
        case .reply(let reply): return ("reply", reply.reference)
        case .reaction(let reaction): return ("reaction", reaction.reference)
        case .legacyReaction(let reaction): return ("reaction", reaction.reference)
        case .readReceipt: return ("readReceipt", nil)
        case .attachment: return ("attachment", nil)
        case .remoteAttachment: return ("remoteStaticAttachment", nil)
        case .multiRemoteAttachment: return ("multiRemoteStaticAttachment", nil)
        case .deleteMessage(let delete): return ("deleteMessage", delete.messageID)
        case .editMessage(let edit): return ("editMessage", edit.messageID)
        case .unknown: return ("unknown", nil)
        }
    }

    /// A reaction row's (symbol, whether it adds) — nil for a row that is not a readable reaction.
    static func reaction(of row: XMTPMessageRow) -> (symbol: String, adds: Bool)? {
        switch try? XMTPContent.decode(bytes: row.content) {
        case .reaction(let reaction): return (reaction.content, reaction.action != .removed)
        case .legacyReaction(let reaction): return (reaction.content, reaction.action != "removed")
        default: return nil
        }
    }

    /// Standing reactions on `target`: rows folded in sequence order per (user, symbol).
    static func standingReactions(_ references: [XMTPMessageRow]) -> [(user: String, symbol: String, at: Int64)] {
        var state: [String: (user: String, symbol: String, active: Bool, at: Int64)] = [:]
        var order: [String] = []
        for row in references where row.contentType == "reaction" {
            guard let (symbol, adds) = reaction(of: row) else { continue }
            let key = row.sender + "\u{1F}" + symbol
            if state[key] == nil { order.append(key) }
            state[key] = (row.sender, symbol, adds, row.sentAtNs)
        }
        return order.compactMap { key in state[key].flatMap { $0.active ? ($0.user, $0.symbol, $0.at) : nil } }
    }

    /// Whether `user`'s `symbol` stands on the target after folding `references` in order.
    static func isActive(user: String, symbol: String, in references: [XMTPMessageRow]) -> Bool {
        var active = false
        for row in references where row.contentType == "reaction" && row.sender == user {
            if let (rowSymbol, adds) = reaction(of: row), rowSymbol == symbol { active = adds }
        }
        return active
    }

    /// A message's current state: its content, the latest valid edit (by sequence), a valid delete. Edits and
    /// deletes count only from the target's sender within the windows after its `sent_at_ns`; others are ignored.
    static func remoteMessage(_ row: XMTPMessageRow, references: [XMTPMessageRow], conversation: ConversationID) -> RemoteMessage {
        var view = contentView(row.content)
        var editedAt: Date?
        var deletedAt: Date?
        for reference in references where reference.sender == row.sender {
            switch reference.contentType {
            case "editMessage" where reference.sentAtNs <= row.sentAtNs + editWindowNs:
                guard case .editMessage(let edit)? = try? XMTPContent.decode(bytes: reference.content),
                      let edited = edit.editedContent else { continue }
                if case .text(let text)? = try? XMTPContent.decode(edited) { view.text = text.text } else { view.text = edited.fallback ?? view.text }
                editedAt = date(ns: reference.sentAtNs)
            case "deleteMessage" where reference.sentAtNs <= row.sentAtNs + deleteWindowNs:
                if deletedAt == nil { deletedAt = date(ns: reference.sentAtNs) }
            default:
                continue
            }
        }
        if deletedAt != nil {
            view.text = ""
            view.attachments = []
        }
        return RemoteMessage(remoteID: RemoteID(row.id), conversation: conversation,
                             idempotencyKey: row.idempotencyKey.isEmpty ? nil : MessageID(row.idempotencyKey),
                             sender: UserID(row.sender), text: view.text, replyTo: view.replyTo.map(RemoteID.init),
                             attachments: view.attachments, metadata: view.metadata, sentAt: date(ns: row.sentAtNs),
                             editedAt: deletedAt == nil ? editedAt : nil, deletedAt: deletedAt)
    }

    /// What a content message shows before edits.
    struct ContentView {
        /// The text (the fallback for unknown types).
        var text = ""
        /// The replied-to message's hex ID.
        var replyTo: String?
        /// Remote attachments.
        var attachments: [Attachment] = []
        /// `meta.*` parameters.
        var metadata: [String: String] = [:]
    }

    /// Reads content bytes into what the timeline shows; never throws (unreadable content shows its fallback).
    static func contentView(_ bytes: [UInt8]) -> ContentView {
        var view = ContentView()
        guard let encoded = try? XMTPEncodedContent.decode(bytes) else { return view }
        for (key, value) in encoded.parameters where key.hasPrefix(metadataPrefix) {
            view.metadata[String(key.dropFirst(metadataPrefix.count))] = value
        }
        var inner = encoded
        if case .reply(let reply)? = try? XMTPContent.decode(encoded) {
            view.replyTo = reply.reference.isEmpty ? nil : reply.reference
            inner = reply.content
            for (key, value) in inner.parameters where key.hasPrefix(metadataPrefix) && view.metadata[String(key.dropFirst(metadataPrefix.count))] == nil {
                view.metadata[String(key.dropFirst(metadataPrefix.count))] = value
            }
        }
        switch try? XMTPContent.decode(inner) {
        case .text(let text)?:
            view.text = text.text
        case .remoteAttachment(let remote)?:
            view.text = inner.parameters["caption"] ?? ""
            view.attachments = attachments([remote], identities: inner.parameters[attachmentsParameter])
        case .multiRemoteAttachment(let multi)?:
            view.text = inner.parameters["caption"] ?? ""
            view.attachments = attachments(multi.attachments, identities: inner.parameters[attachmentsParameter])
        default:
            // Content this client cannot show: its fallback text, marked so a bridge can log it.
            let type = inner.type.map { "\($0)" } ?? "unknown"
            view.metadata[RemoteMessage.unsupportedContentKey] = type
            view.text = inner.fallback ?? encoded.fallback ?? "[unsupported content: \(type)]"
        }
        return view
    }

    /// Core attachments for remote attachment infos, with the identities the sender carried when present.
    static func attachments(_ remotes: [XMTPRemoteAttachment], identities: String?) -> [Attachment] {
        let known = identities.flatMap { JSONValue.parseOrNil($0)?.arrayValue } ?? []
        return remotes.enumerated().map { index, remote in
            let identity: JSONValue = index < known.count ? known[index] : .null
            var parameters = ["contentDigest": remote.contentDigest, "secret": Digest.hex(remote.secret),
                              "salt": Digest.hex(remote.salt), "nonce": Digest.hex(remote.nonce), "scheme": remote.scheme]
            if let length = remote.contentLength { parameters["contentLength"] = String(length) }
            if let filename = remote.filename { parameters["filename"] = filename }
            let id = identity["id"]?.stringValue.map(AttachmentID.init)
                ?? AttachmentID(UUIDv5.make(namespace: UUIDv5.switchboardNamespace, name: "xmtp-attachment\u{1F}" + remote.contentDigest))
            return Attachment(id: id, filename: remote.filename ?? "attachment",
                              mimeType: identity["mimeType"]?.stringValue ?? "application/octet-stream",
                              byteCount: identity["byteCount"]?.intValue ?? 0, sha256: identity["sha256"]?.stringValue ?? "",
                              remoteLocation: remote.url, remoteParameters: parameters, upload: .uploaded)
        }
    }

    /// A date from nanoseconds since 1970.
    static func date(ns: Int64) -> Date { Date(timeIntervalSince1970: Double(ns) / 1_000_000_000) }

    /// Nanoseconds since 1970 now.
    static func nowNs() -> Int64 { Int64(Date().timeIntervalSince1970 * 1_000_000_000) }
}
