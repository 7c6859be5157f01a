import Foundation

/// Where a message stands on the delivery ladder: draft → pending → uploading → sending → sent → delivered → read, or failed.
public enum DeliveryState: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Prepared with noSend: held locally until published by name.
    case draft
    /// Stored locally and queued for the outbox worker.
    case pending
    /// Attachments are uploading; `progress` is 0...1 over all of them.
    case uploading(progress: Double)
    /// The publish request is in flight.
    case sending
    /// The backend accepted the message.
    case sent
    /// At least one recipient's device has it.
    case delivered
    /// At least one recipient has read it.
    case read
    /// Publishing stopped; `retryable` says whether a user retry can succeed.
    case failed(reason: String, retryable: Bool)
    /// A message received from someone else (no delivery ladder of ours applies).
    case received

    /// The rung on the ladder; a state change never lowers it except a retry after failure.
    public var rank: Int {
        switch self {
        case .draft: 0
        case .pending: 1
        case .uploading: 2
        case .sending: 3
        case .failed: 4
        case .sent: 5
        case .delivered: 6
        case .read: 7
        case .received: 8
        }
    }

    /// Whether the backend has the message (sent, delivered, read or received).
    public var isPublished: Bool {
        switch self {
        case .sent, .delivered, .read, .received: true
        default: false
        }
    }

    /// Whether the message failed.
    public var isFailed: Bool { if case .failed = self { true } else { false } }

    /// Short text for timelines and logs.
    public var description: String {
        switch self {
        case .draft: "draft"
        case .pending: "pending"
        case .uploading(let progress): "uploading(\(Int((progress * 100).rounded()))%)"
        case .sending: "sending"
        case .sent: "sent"
        case .delivered: "delivered"
        case .read: "read"
        case .failed(let reason, let retryable): "failed(\(reason)\(retryable ? ", retryable" : ""))"
        case .received: "received"
        }
    }

    /// The stable name stored in databases (`pending`, `failed`, ...).
    public var storageName: String {
        switch self {
        case .draft: "draft"
        case .pending: "pending"
        case .uploading: "uploading"
        case .sending: "sending"
        case .sent: "sent"
        case .delivered: "delivered"
        case .read: "read"
        case .failed: "failed"
        case .received: "received"
        }
    }

    /// Rebuilds a state from its stored name and details; nil for an unknown name.
    public init?(storageName: String, progress: Double = 0, reason: String? = nil, retryable: Bool = true) {
        switch storageName {
        case "draft": self = .draft
        case "pending": self = .pending
        case "uploading": self = .uploading(progress: progress)
        case "sending": self = .sending
        case "sent": self = .sent
        case "delivered": self = .delivered
        case "read": self = .read
        case "failed": self = .failed(reason: reason ?? "unknown", retryable: retryable)
        case "received": self = .received
        default: return nil
        }
    }
}

/// A recipient's acknowledgement level; it only ever climbs.
public enum ReceiptState: String, Sendable, Hashable, Codable, Comparable {
    /// The recipient's device has the message.
    case delivered
    /// The recipient has read the message.
    case read

    /// Orders delivered below read.
    public static func < (lhs: ReceiptState, rhs: ReceiptState) -> Bool { lhs == .delivered && rhs == .read }
}
