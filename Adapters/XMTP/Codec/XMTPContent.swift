import SwitchboardCore

/// Any message content: one of the known libxmtp content types, or `unknown` carrying the raw content and its
/// fallback text.
public enum XMTPContent: Sendable, Hashable {
    /// `text:1.0`.
    case text(XMTPText)
    /// `reply:1.0`.
    case reply(XMTPReply)
    /// `reaction:1.0` (legacy JSON).
    case legacyReaction(XMTPLegacyReaction)
    /// `reaction:2.0`.
    case reaction(XMTPReaction)
    /// `readReceipt:1.0`.
    case readReceipt
    /// `attachment:1.0`.
    case attachment(XMTPAttachment)
    /// `remoteStaticAttachment:1.0`.
    case remoteAttachment(XMTPRemoteAttachment)
    /// `multiRemoteStaticAttachment:1.0`.
    case multiRemoteAttachment(XMTPMultiRemoteAttachment)
    /// `deleteMessage:1.0`.
    case deleteMessage(XMTPDeleteMessage)
    /// `editMessage:1.0`.
    case editMessage(XMTPEditMessage)
    /// A type this codec does not know (or a missing type); show `content.fallback`.
    case unknown(XMTPEncodedContent)

    /// The `EncodedContent` libxmtp would produce (for `unknown`, the content unchanged).
    public func encoded() -> XMTPEncodedContent {
        switch self {
        case .text(let value): value.encoded()
        case .reply(let value): value.encoded()
        case .legacyReaction(let value): value.encoded()
        case .reaction(let value): value.encoded()
        case .readReceipt: XMTPReadReceipt().encoded()
        case .attachment(let value): value.encoded()
        case .remoteAttachment(let value): value.encoded()
        case .multiRemoteAttachment(let value): value.encoded()
        case .deleteMessage(let value): value.encoded()
        case .editMessage(let value): value.encoded()
        case .unknown(let content): content
        }
    }

    /// The fallback text of the encoded form.
    public var fallback: String? { encoded().fallback }

    /// Decodes by type ID and major version (the authority is not checked, as in libxmtp's `MessageBody`); an unknown
    /// type or version, or no type at all, gives `.unknown`; a known type whose content is invalid throws.
    public static func decode(_ content: XMTPEncodedContent) throws(XMTPCodecError) -> XMTPContent {
        guard let type = content.type else { return .unknown(content) }
        switch (type.typeID, type.versionMajor) {
        case ("text", 1): return .text(try XMTPText.decode(content))
        case ("reply", 1): return .reply(try XMTPReply.decode(content))
        case ("reaction", 1): return .legacyReaction(try XMTPLegacyReaction.decode(content))
        case ("reaction", 2): return .reaction(try XMTPReaction.decode(content))
        case ("readReceipt", 1): _ = try XMTPReadReceipt.decode(content); return .readReceipt
        case ("attachment", 1): return .attachment(try XMTPAttachment.decode(content))
        case ("remoteStaticAttachment", 1): return .remoteAttachment(try XMTPRemoteAttachment.decode(content))
        case ("multiRemoteStaticAttachment", 1): return .multiRemoteAttachment(try XMTPMultiRemoteAttachment.decode(content))
        case ("deleteMessage", 1): return .deleteMessage(try XMTPDeleteMessage.decode(content))
        case ("editMessage", 1): return .editMessage(try XMTPEditMessage.decode(content))
        default: return .unknown(content)
        }
    }

    /// Decodes `EncodedContent` protobuf bytes.
    public static func decode(bytes: [UInt8]) throws(XMTPCodecError) -> XMTPContent {
        try decode(XMTPEncodedContent.decode(bytes))
    }
}

/// libxmtp's message ID: `sha256(group_id ‖ "\t" ‖ idempotency_key ‖ "\t" ‖ EncodedContent bytes)`, where
/// `group_id` is the raw group ID bytes (not hex) and the key its UTF-8 bytes (`xmtp_mls::utils::calculate_message_id`).
public enum XMTPMessageID {
    /// The 32-byte message ID.
    public static func calculate(groupID: [UInt8], idempotencyKey: String, encodedContent: [UInt8]) -> [UInt8] {
        var input = groupID
        input.append(0x09)
        input += Array(idempotencyKey.utf8)
        input.append(0x09)
        input += encodedContent
        return Digest.sha256(input)
    }

    /// The message ID as lowercase hex (how libxmtp shows message IDs).
    public static func hex(groupID: [UInt8], idempotencyKey: String, encodedContent: [UInt8]) -> String {
        Digest.hex(calculate(groupID: groupID, idempotencyKey: idempotencyKey, encodedContent: encodedContent))
    }
}
