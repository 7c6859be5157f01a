/// What travels in `GroupMessage.v1.data` on the XMTP-like network: the group ID in clear (as MLS framing
/// carries it, so the node can route and check membership) and the sealed payload.
///
/// Wire format (protobuf): `1: bytes group_id` (16 bytes), `2: bytes nonce` (12 bytes),
/// `3: bytes ciphertext` (AES-256-GCM under the group secret, tag appended, AAD = group_id). The plaintext is
/// a `XMTPSealedMessage`. The node reads field 1 only.
public struct XMTPGroupEnvelope: Sendable, Hashable {
    /// The group (16 bytes).
    public var groupID: [UInt8]
    /// The AES-GCM nonce (12 bytes).
    public var nonce: [UInt8]
    /// Ciphertext with the 16-byte tag appended.
    public var ciphertext: [UInt8]

    /// An envelope from its parts.
    public init(groupID: [UInt8], nonce: [UInt8], ciphertext: [UInt8]) {
        self.groupID = groupID
        self.nonce = nonce
        self.ciphertext = ciphertext
    }

    /// The protobuf bytes.
    public func encoded() -> [UInt8] {
        var writer = ProtobufWriter()
        writer.bytes(1, groupID)
        writer.bytes(2, nonce)
        writer.bytes(3, ciphertext)
        return writer.bytes
    }

    /// Decodes an envelope; throws when a field is malformed or the group ID is not 16 bytes.
    public static func decode(_ bytes: [UInt8]) throws(ProtobufError) -> XMTPGroupEnvelope {
        var reader = ProtobufReader(bytes)
        var envelope = XMTPGroupEnvelope(groupID: [], nonce: [], ciphertext: [])
        while let (field, type) = try reader.nextField() {
            switch field {
            case 1: try reader.expect(type, .lengthDelimited, field: 1); envelope.groupID = try reader.lengthDelimited()
            case 2: try reader.expect(type, .lengthDelimited, field: 2); envelope.nonce = try reader.lengthDelimited()
            case 3: try reader.expect(type, .lengthDelimited, field: 3); envelope.ciphertext = try reader.lengthDelimited()
            default: try reader.skip(type)
            }
        }
        guard envelope.groupID.count == 16 else { throw ProtobufError("group_id must be 16 bytes, got \(envelope.groupID.count)") }
        return envelope
    }
}

/// The plaintext inside a group envelope: who sent it and libxmtp's `PlaintextEnvelope` bytes.
///
/// Wire format (protobuf): `1: string sender_inbox_id`, `2: bytes plaintext_envelope` where the latter is
/// `PlaintextEnvelope { V1 v1 = 1 }`, `V1 { bytes content = 1; string idempotency_key = 2; }` as in xmtp/proto,
/// `content` being the `EncodedContent` bytes.
public struct XMTPSealedMessage: Sendable, Hashable {
    /// The sender's inbox ID (the MLS credential carries it in the real protocol).
    public var senderInboxID: String
    /// The `EncodedContent` bytes.
    public var content: [UInt8]
    /// The idempotency key (the sender's `MessageID`).
    public var idempotencyKey: String

    /// A sealed message from its parts.
    public init(senderInboxID: String, content: [UInt8], idempotencyKey: String) {
        self.senderInboxID = senderInboxID
        self.content = content
        self.idempotencyKey = idempotencyKey
    }

    /// The protobuf bytes.
    public func encoded() -> [UInt8] {
        var v1 = ProtobufWriter()
        v1.bytes(1, content)
        v1.string(2, idempotencyKey)
        var plaintext = ProtobufWriter()
        plaintext.message(1, v1.bytes)
        var writer = ProtobufWriter()
        writer.string(1, senderInboxID)
        writer.message(2, plaintext.bytes)
        return writer.bytes
    }

    /// Decodes a sealed message.
    public static func decode(_ bytes: [UInt8]) throws(ProtobufError) -> XMTPSealedMessage {
        var reader = ProtobufReader(bytes)
        var message = XMTPSealedMessage(senderInboxID: "", content: [], idempotencyKey: "")
        var plaintext: [UInt8] = []
        while let (field, type) = try reader.nextField() {
            switch field {
            case 1: try reader.expect(type, .lengthDelimited, field: 1); message.senderInboxID = try reader.string()
            case 2: try reader.expect(type, .lengthDelimited, field: 2); plaintext = try reader.lengthDelimited()
            default: try reader.skip(type)
            }
        }
        var outer = ProtobufReader(plaintext)
        var v1: [UInt8] = []
        while let (field, type) = try outer.nextField() {
            if field == 1 { try outer.expect(type, .lengthDelimited, field: 1); v1 = try outer.lengthDelimited() } else { try outer.skip(type) }
        }
        var inner = ProtobufReader(v1)
        while let (field, type) = try inner.nextField() {
            switch field {
            case 1: try inner.expect(type, .lengthDelimited, field: 1); message.content = try inner.lengthDelimited()
            case 2: try inner.expect(type, .lengthDelimited, field: 2); message.idempotencyKey = try inner.string()
            default: try inner.skip(type)
            }
        }
        guard !message.senderInboxID.isEmpty else { throw ProtobufError("sealed message without a sender") }
        return message
    }
}
