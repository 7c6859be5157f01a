import Foundation
import SwitchboardCore
import SwitchboardStore

/// Test data builders; every date is whole microseconds so it round-trips exactly.
enum Fixtures {
    /// A fixed instant with a sub-second part, rounded to microseconds.
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000.123456).roundedToMicroseconds

    /// `epoch` plus `seconds` (which may carry microseconds), rounded to microseconds.
    static func time(_ seconds: Double) -> Date { epoch.addingTimeInterval(seconds).roundedToMicroseconds }

    /// A plain message in `conversation` at `time(seconds)`.
    static func message(_ id: MessageID = .make(), in conversation: ConversationID = "room-1", at seconds: Double = 0,
                        delivery: DeliveryState = .received, text: String = "hello") -> Message {
        Message(id: id, conversation: conversation, sender: "alice", content: MessageContent(text: text),
                timestamp: time(seconds), hasServerTimestamp: delivery.isPublished, delivery: delivery,
                isOutgoing: !delivery.isPublished || delivery == .sent)
    }

    /// An attachment with every optional field set.
    static func attachment(_ name: String, upload: UploadState) -> Attachment {
        Attachment(filename: name, mimeType: "image/png", byteCount: 12_345,
                   sha256: String(repeating: "ab", count: 32), localPath: "/tmp/\(name)",
                   remoteLocation: upload == .uploaded ? "https://cdn.example/\(name)" : nil,
                   remoteParameters: upload == .uploaded ? ["secret": "s3cr3t", "nonce": "n0nce"] : [:],
                   upload: upload)
    }

    /// An outbox entry of `backend`, created at `time(created)` and due at `time(due)`.
    static func outbox(_ id: MessageID = .make(), backend: BackendID = "memory", created: Double, due: Double,
                       status: OutboxStatus = .queued, noSend: Bool = false,
                       prepared: PreparedMessage? = nil) -> OutboxEntry {
        OutboxEntry(messageID: id, backend: backend, conversation: "room-1", prepared: prepared, noSend: noSend,
                    nextAttemptAt: time(due), status: status, createdAt: time(created))
    }
}

/// The store tests write keys in their stored form, odd characters included: a literal is a stored key.
extension WaitKey: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self.init(stored: value) }
}
