import Foundation

/// Where an attachment's bytes come from when composing a message.
public enum AttachmentSource: Sendable, Hashable {
    /// A file on disk; it stays displayed from there until the remote copy is fetchable.
    case file(path: String, filename: String? = nil, mimeType: String? = nil)
    /// Bytes in memory; the engine keeps them in its staging folder so a restart can resume the upload.
    case data(Data, filename: String, mimeType: String)
}
