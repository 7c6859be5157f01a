import Foundation

/// The upload state of one attachment, persisted so a restart resumes or shows the failure.
public enum UploadState: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Waiting to start (or to restart after a crash).
    case pending
    /// Bytes are moving; `progress` is 0...1.
    case uploading(progress: Double)
    /// The remote copy exists (`Attachment.remoteLocation`).
    case uploaded
    /// The upload failed; the attachment can be retried.
    case failed(reason: String)

    /// Short text for timelines and logs.
    public var description: String {
        switch self {
        case .pending: "pending"
        case .uploading(let p): "uploading(\(Int((p * 100).rounded()))%)"
        case .uploaded: "uploaded"
        case .failed(let reason): "failed(\(reason))"
        }
    }

    /// The stable stored name.
    public var storageName: String {
        switch self {
        case .pending: "pending"
        case .uploading: "uploading"
        case .uploaded: "uploaded"
        case .failed: "failed"
        }
    }

    /// Rebuilds a state from its stored name; nil for an unknown name.
    public init?(storageName: String, progress: Double = 0, reason: String? = nil) {
        switch storageName {
        case "pending": self = .pending
        case "uploading": self = .uploading(progress: progress)
        case "uploaded": self = .uploaded
        case "failed": self = .failed(reason: reason ?? "unknown")
        default: return nil
        }
    }
}

/// A file carried by a message: local copy, remote copy, digest and upload state.
public struct Attachment: Sendable, Hashable, Codable, Identifiable {
    /// Stable identity of this attachment.
    public var id: AttachmentID
    /// File name shown to people.
    public var filename: String
    /// MIME type, for example `image/png`.
    public var mimeType: String
    /// Plaintext size in bytes.
    public var byteCount: Int64
    /// Lowercase hex SHA-256 of the plaintext bytes.
    public var sha256: String
    /// Local file that stays displayed until the remote copy is fetchable.
    public var localPath: String?
    /// Remote URL or storage path once uploaded.
    public var remoteLocation: String?
    /// Backend-specific parameters (encryption secret, salt, nonce, digest of the ciphertext...).
    public var remoteParameters: [String: String]
    /// Upload state.
    public var upload: UploadState

    /// Describes an attachment.
    public init(id: AttachmentID = .make(), filename: String, mimeType: String, byteCount: Int64, sha256: String,
                localPath: String? = nil, remoteLocation: String? = nil, remoteParameters: [String: String] = [:],
                upload: UploadState = .pending) {
        self.id = id
        self.filename = filename
        self.mimeType = mimeType
        self.byteCount = byteCount
        self.sha256 = sha256
        self.localPath = localPath
        self.remoteLocation = remoteLocation
        self.remoteParameters = remoteParameters
        self.upload = upload
    }
}

/// What a message says: text, what it replies to, the files it carries, and free metadata.
public struct MessageContent: Sendable, Hashable, Codable {
    /// The text; may be empty only when attachments are present.
    public var text: String
    /// The message this one replies to.
    public var replyTo: MessageID?
    /// Attached files, in order.
    public var attachments: [Attachment]
    /// Metadata that travels with the message (a bridge's original sender and time, for example).
    public var metadata: [String: String]

    /// Builds content.
    public init(text: String, replyTo: MessageID? = nil, attachments: [Attachment] = [], metadata: [String: String] = [:]) {
        self.text = text
        self.replyTo = replyTo
        self.attachments = attachments
        self.metadata = metadata
    }
}

/// One user's reaction to a message.
public struct Reaction: Sendable, Hashable, Codable {
    /// Who reacted.
    public var user: UserID
    /// The emoji or shortcode.
    public var symbol: String
    /// When the reaction was made.
    public var at: Date

    /// Builds a reaction.
    public init(user: UserID, symbol: String, at: Date = Date()) {
        self.user = user
        self.symbol = symbol
        self.at = at
    }
}

/// One recipient's acknowledgement of a message.
public struct Receipt: Sendable, Hashable, Codable {
    /// The acknowledged message.
    public var message: MessageID
    /// The recipient.
    public var user: UserID
    /// How far the recipient got.
    public var state: ReceiptState
    /// When.
    public var at: Date

    /// Builds a receipt.
    public init(message: MessageID, user: UserID, state: ReceiptState, at: Date = Date()) {
        self.message = message
        self.user = user
        self.state = state
        self.at = at
    }
}

/// A message in the internal model, as a timeline shows it.
public struct Message: Sendable, Hashable, Codable, Identifiable {
    /// Stable identity; a UI keyed by it never flickers.
    public var id: MessageID
    /// The conversation it belongs to.
    public var conversation: ConversationID
    /// Who wrote it.
    public var sender: UserID
    /// What it says.
    public var content: MessageContent
    /// Compose time, replaced by the server's time once known; the timeline's sort key.
    public var timestamp: Date
    /// Whether `timestamp` came from the server.
    public var hasServerTimestamp: Bool
    /// When the text was last edited.
    public var editedAt: Date?
    /// When it was deleted (the row stays as a tombstone).
    public var deletedAt: Date?
    /// Where it stands on the delivery ladder.
    public var delivery: DeliveryState
    /// Current reactions.
    public var reactions: [Reaction]
    /// Whether this device composed it.
    public var isOutgoing: Bool

    /// Builds a message.
    public init(id: MessageID, conversation: ConversationID, sender: UserID, content: MessageContent,
                timestamp: Date, hasServerTimestamp: Bool = false, editedAt: Date? = nil, deletedAt: Date? = nil,
                delivery: DeliveryState, reactions: [Reaction] = [], isOutgoing: Bool) {
        self.id = id
        self.conversation = conversation
        self.sender = sender
        self.content = content
        self.timestamp = timestamp
        self.hasServerTimestamp = hasServerTimestamp
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.delivery = delivery
        self.reactions = reactions
        self.isOutgoing = isOutgoing
    }

    /// Whether the message is a tombstone.
    public var isDeleted: Bool { deletedAt != nil }

    /// The keyset position of this message in its timeline.
    public var position: TimelinePosition { TimelinePosition(timestamp: timestamp, id: id) }
}

/// A keyset position in a local timeline: (timestamp, id), never an offset.
public struct TimelinePosition: Sendable, Hashable, Codable, Comparable {
    /// The message's timestamp in whole microseconds since 1970.
    public var micros: Int64
    /// The tie-breaker.
    public var id: MessageID

    /// A position from a date (rounded to microseconds) and an identifier.
    public init(timestamp: Date, id: MessageID) {
        self.micros = Self.micros(timestamp)
        self.id = id
    }

    /// Microseconds since 1970 for a date, as stores keep them.
    public static func micros(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }

    /// The date for stored microseconds.
    public static func date(micros: Int64) -> Date { Date(timeIntervalSince1970: Double(micros) / 1_000_000) }

    /// Orders by time, then identifier.
    public static func < (lhs: TimelinePosition, rhs: TimelinePosition) -> Bool {
        (lhs.micros, lhs.id.rawValue) < (rhs.micros, rhs.id.rawValue)
    }
}

extension Date {
    /// This date rounded to whole microseconds, the precision every store keeps.
    public var roundedToMicroseconds: Date { TimelinePosition.date(micros: TimelinePosition.micros(self)) }
}

extension Attachment {
    /// Checks `data` against `limit` and against the SHA-256 this attachment declares (if any); returns the
    /// bytes' digest. Every adapter's upload starts here.
    public func verifiedDigest(of data: Data, limit: Int64) throws -> String {
        guard Int64(data.count) <= limit else {
            throw SwitchboardError(.contentTooLarge, "\(filename) exceeds \(limit) bytes")
        }
        let digest = Digest.sha256Hex(data)
        if !sha256.isEmpty, sha256 != digest {
            throw SwitchboardError(.invalidArgument, "\(filename): bytes do not match the attachment's SHA-256")
        }
        return digest
    }

    /// This attachment once `data` is stored at `location`: digest, size and location set, state `uploaded`.
    public func uploaded(_ data: Data, digest: String, to location: String,
                         parameters: [String: String]? = nil) -> Attachment {
        var uploaded = self
        uploaded.sha256 = digest
        uploaded.byteCount = Int64(data.count)
        uploaded.remoteLocation = location
        if let parameters { uploaded.remoteParameters = parameters }
        uploaded.upload = .uploaded
        return uploaded
    }
}
