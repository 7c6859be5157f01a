import XMTPCodec

/// Values of every content type used by the round-trip and interop tests (awkward characters on purpose).
enum Samples {
    /// A remote attachment with every field set.
    static let remoteFull = XMTPRemoteAttachment(
        url: "https://files.example/abc?x=1&y=\"2\"", contentDigest: String(repeating: "ab", count: 32),
        secret: Array(0..<32), salt: Array(32..<64), nonce: Array(64..<76), scheme: "https://",
        contentLength: 1234, filename: "photo ü.jpg")
    /// A remote attachment with the optional fields absent.
    static let remoteMinimal = XMTPRemoteAttachment(
        url: "https://files.example/2", contentDigest: "00ff", secret: [0xFF], salt: [], nonce: [1, 2, 3], scheme: "https://")
    /// A remote attachment with a zero length and an empty file name (present but default-valued on the wire).
    static let remoteZero = XMTPRemoteAttachment(
        url: "", contentDigest: "", secret: [], salt: [], nonce: [], scheme: "", contentLength: 0, filename: "")

    /// Text samples.
    static let texts = ["hello", "", "héllo 👋 \"quoted\" \\ back\nslash\t\u{01}", String(repeating: "long ", count: 400)]

    /// Reactions (v2).
    static let reactions = [
        XMTPReaction(reference: "0f1e2d", referenceInboxID: "inbox-1", action: .added, content: "👍", schema: .unicode),
        XMTPReaction(reference: "abc", action: .removed, content: ":smile:", schema: .shortcode),
        XMTPReaction(reference: "", action: .added, content: "party \"parrot\"", schema: .custom),
    ]

    /// Replies.
    static let replies = [
        XMTPReply(reference: "deadbeef", referenceInboxID: "inbox-2", content: XMTPText("a reply").encoded()),
        XMTPReply(reference: "cafe", content: XMTPReaction(reference: "cafe", action: .added, content: "🔥", schema: .unicode).encoded()),
        XMTPReply(reference: "", content: XMTPEncodedContent(type: XMTPContentTypeID(authorityID: "example.com", typeID: "poll",
                                                                                       versionMajor: 3, versionMinor: 1),
                                                              parameters: ["q": "lunch?"], fallback: "A poll", content: [1, 2, 3])),
    ]

    /// Attachments.
    static let attachments = [
        XMTPAttachment(filename: "notes.txt", mimeType: "text/plain", data: Array("some notes\n".utf8)),
        XMTPAttachment(filename: nil, mimeType: "application/octet-stream", data: Array(0...255)),
        XMTPAttachment(filename: nil, mimeType: "", data: []),
    ]

    /// Remote attachments.
    static let remotes = [remoteFull, remoteMinimal]

    /// Multi remote attachments.
    static let multis = [
        XMTPMultiRemoteAttachment(attachments: [remoteFull, remoteMinimal, remoteZero]),
        XMTPMultiRemoteAttachment(attachments: []),
    ]

    /// Delete requests.
    static let deletes = [XMTPDeleteMessage(messageID: String(repeating: "9a", count: 32)), XMTPDeleteMessage(messageID: "")]

    /// Every sample as `XMTPContent`.
    static var all: [XMTPContent] {
        texts.map { .text(XMTPText($0)) } + reactions.map { .reaction($0) } + replies.map { .reply($0) }
            + [.legacyReaction(XMTPLegacyReaction(reference: "ab", referenceInboxID: "inbox", action: "added", content: "👍", schema: "unicode")),
               .legacyReaction(XMTPLegacyReaction(reference: "ab", action: "removed", content: "a\"b", schema: "custom")),
               .readReceipt]
            + attachments.map { .attachment($0) } + remotes.map { .remoteAttachment($0) }
            + multis.map { .multiRemoteAttachment($0) } + deletes.map { .deleteMessage($0) }
            + [.editMessage(XMTPEditMessage(messageID: "beef", editedContent: XMTPText("fixed typo").encoded())),
               .editMessage(XMTPEditMessage(messageID: "beef", editedContent: nil))]
    }
}
