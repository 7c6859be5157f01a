import Foundation
import SwitchboardCore

/// The Memory backend's wire format: canonical JSON of a message, the content-derived ID, and request validation.
///
/// Canonical means sorted keys, unescaped slashes, dates as whole microseconds since 1970, and attachments as
/// remote copies (no local path, state `uploaded`), so decoding and re-encoding gives the same bytes: the server
/// can recompute a content-derived ID from what it received and agree with the client.
public enum MemoryWire {
    /// Limits the server enforces (and the adapter checks before the network).
    public struct Limits: Sendable, Hashable {
        /// Largest text, in UTF-8 bytes.
        public var maxTextBytes: Int
        /// Largest single attachment, in bytes.
        public var maxAttachmentBytes: Int64
        /// Most attachments in one message.
        public var maxAttachmentsPerMessage: Int

        /// Describes the limits.
        public init(maxTextBytes: Int = 16 * 1024, maxAttachmentBytes: Int64 = 10 * 1024 * 1024,
                    maxAttachmentsPerMessage: Int = 10) {
            self.maxTextBytes = maxTextBytes
            self.maxAttachmentBytes = maxAttachmentBytes
            self.maxAttachmentsPerMessage = maxAttachmentsPerMessage
        }
    }

    /// A JSON encoder producing canonical bytes.
    static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(TimelinePosition.micros(date))
        }
        return encoder
    }

    /// A JSON decoder reading canonical bytes.
    static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            TimelinePosition.date(micros: try decoder.singleValueContainer().decode(Int64.self))
        }
        return decoder
    }

    /// The message as the wire carries it: remote copies of attachments, times rounded to microseconds.
    public static func canonical(_ message: OutgoingMessage) -> OutgoingMessage {
        var message = message
        message.createdAt = message.createdAt.roundedToMicroseconds
        message.attachments = message.attachments.map { attachment in
            var remote = attachment
            remote.localPath = nil
            remote.upload = .uploaded
            return remote
        }
        return message
    }

    /// The canonical payload bytes of a message.
    public static func payload(for message: OutgoingMessage) throws -> Data {
        do {
            return try makeEncoder().encode(canonical(message))
        } catch {
            throw SwitchboardError(.invalidArgument, "message cannot be encoded: \(error)")
        }
    }

    /// Decodes payload bytes back into a message.
    public static func message(fromPayload payload: Data) throws -> OutgoingMessage {
        do {
            return try makeDecoder().decode(OutgoingMessage.self, from: payload)
        } catch {
            throw SwitchboardError(.invalidArgument, "payload is not a Memory message")
        }
    }

    /// The content-derived ID: lowercase hex SHA-256 of conversation, TAB, idempotency key, TAB, canonical payload.
    public static func contentDerivedID(for message: OutgoingMessage) throws -> RemoteID {
        var bytes = Array(message.conversation.rawValue.utf8)
        bytes.append(0x09)
        bytes.append(contentsOf: message.id.rawValue.utf8)
        bytes.append(0x09)
        bytes.append(contentsOf: try payload(for: message))
        return RemoteID(Digest.sha256Hex(bytes))
    }

    /// Checks what the server would refuse: a malformed key, empty or oversized content, attachments not uploaded.
    public static func validate(_ message: OutgoingMessage, limits: Limits) throws {
        guard message.id.isCanonical else {
            throw SwitchboardError(.invalidArgument, "idempotency key \(message.id) is not a lowercase UUID")
        }
        guard !message.conversation.rawValue.isEmpty else {
            throw SwitchboardError(.invalidArgument, "conversation ID is empty")
        }
        try validateText(message.text, hasAttachments: !message.attachments.isEmpty, limits: limits)
        guard message.attachments.count <= limits.maxAttachmentsPerMessage else {
            throw SwitchboardError(.contentTooLarge,
                                   "\(message.attachments.count) attachments exceed \(limits.maxAttachmentsPerMessage)")
        }
        for attachment in message.attachments {
            guard attachment.byteCount <= limits.maxAttachmentBytes else {
                throw SwitchboardError(.contentTooLarge, "attachment \(attachment.filename) exceeds "
                                       + "\(limits.maxAttachmentBytes) bytes")
            }
            guard attachment.remoteLocation != nil else {
                throw SwitchboardError(.invalidArgument, "attachment \(attachment.filename) is not uploaded")
            }
        }
    }

    /// Checks a message text: not blank unless attachments are present, within the size limit.
    static func validateText(_ text: String, hasAttachments: Bool, limits: Limits) throws {
        if !hasAttachments, text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
            throw SwitchboardError(.emptyMessage, "message has no text and no attachments")
        }
        guard text.utf8.count <= limits.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge, "text of \(text.utf8.count) bytes exceeds \(limits.maxTextBytes)")
        }
    }
}
