import SwitchboardCore
import Testing
import XMTPCodec

/// Interop with libxmtp itself (PyPI `xmtp-bindings`): what we encode libxmtp decodes to the same values, what
/// libxmtp encodes we decode to the same values, and the bytes are identical wherever no map of two or more entries
/// is involved (libxmtp writes map entries in hash order).
@Suite struct LibXMTPInteropTests {
    /// The libxmtp value tree of a reaction.
    static func tree(_ value: XMTPReaction) -> JSONValue {
        let actions: [XMTPReactionAction: String] = [.added: "ADDED", .removed: "REMOVED", .unspecified: "UNKNOWN"]
        let schemas: [XMTPReactionSchema: String] = [.unicode: "UNICODE", .shortcode: "SHORTCODE", .custom: "CUSTOM", .unspecified: "UNKNOWN"]
        return Tree.object("FfiReactionPayload", [
            ("reference", .string(value.reference)), ("reference_inbox_id", .string(value.referenceInboxID)),
            ("action", Tree.enumCase("FfiReactionAction", actions[value.action]!)), ("content", .string(value.content)),
            ("schema", Tree.enumCase("FfiReactionSchema", schemas[value.schema]!)),
        ])
    }

    /// The libxmtp value tree of a reply.
    static func tree(_ value: XMTPReply) -> JSONValue {
        Tree.object("FfiReply", [("reference", .string(value.reference)), ("reference_inbox_id", Tree.string(value.referenceInboxID)),
                                 ("content", Tree.encodedContent(value.content))])
    }

    /// The libxmtp value tree of an attachment.
    static func tree(_ value: XMTPAttachment) -> JSONValue {
        Tree.object("FfiAttachment", [("filename", Tree.string(value.filename)), ("mime_type", .string(value.mimeType)),
                                      ("content", Tree.bytes(value.data))])
    }

    /// The libxmtp value tree of a multi remote attachment.
    static func tree(_ value: XMTPMultiRemoteAttachment) -> JSONValue {
        Tree.object("FfiMultiRemoteAttachment", [("attachments", .array(value.attachments.map(Tree.remote)))])
    }

    /// The libxmtp value tree of a delete request.
    static func tree(_ value: XMTPDeleteMessage) -> JSONValue {
        Tree.object("FfiDeleteMessage", [("message_id", .string(value.messageID))])
    }

    /// Checks one value both ways against libxmtp; `byteIdentical` when the encoding involves no multi-entry map.
    func check<T: XMTPContentCodable>(_ value: T, tree: JSONValue, encoder: String, decoder: String, byteIdentical: Bool,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        let ours = value.encoded().encoded()
        // Ours → libxmtp.
        let theirView = try LibXMTPFixture.decoded(decoder, ours)
        #expect(theirView == tree, "libxmtp decoded our \(T.contentType) as \(theirView.serialized), expected \(tree.serialized)",
                sourceLocation: sourceLocation)
        // libxmtp → ours.
        let theirs = try LibXMTPFixture.encode(encoder, tree)
        #expect(try T.decode(bytes: theirs) == value, sourceLocation: sourceLocation)
        #expect(try XMTPEncodedContent.decode(theirs) == value.encoded(), "type, parameters, fallback and content must match",
                sourceLocation: sourceLocation)
        if byteIdentical {
            #expect(hex(ours) == hex(theirs), sourceLocation: sourceLocation)
        }
    }

    /// The libxmtp build the fixture drives (printed for the record).
    @Test func libxmtpIsAvailable() throws {
        let result = try LibXMTPFixture.one(.object([("op", .string("version"))]))
        guard case .string(let version)? = result["value"] else { throw LibXMTPFixture.Failure(description: result.serialized) }
        #expect(version.contains("Version"))
    }

    /// `text:1.0` (one parameter, so byte-identical).
    @Test(arguments: Samples.texts) func text(_ text: String) throws {
        let ours = XMTPText(text).encoded().encoded()
        #expect(try LibXMTPFixture.decoded("decode_text", ours) == .string(text))
        let theirs = try LibXMTPFixture.encode("encode_text", .string(text))
        #expect(hex(ours) == hex(theirs))
        #expect(try XMTPText.decode(bytes: theirs) == XMTPText(text))
    }

    /// `reaction:2.0` (no parameters, byte-identical).
    @Test(arguments: Samples.reactions) func reaction(_ value: XMTPReaction) throws {
        try check(value, tree: Self.tree(value), encoder: "encode_reaction", decoder: "decode_reaction", byteIdentical: true)
    }

    /// `reply:1.0` (three or two parameters: compared as values).
    @Test(arguments: Samples.replies) func reply(_ value: XMTPReply) throws {
        try check(value, tree: Self.tree(value), encoder: "encode_reply", decoder: "decode_reply",
                  byteIdentical: value.encoded().parameters.count <= 1)
    }

    /// `readReceipt:1.0` (byte-identical).
    @Test func readReceipt() throws {
        try check(XMTPReadReceipt(), tree: Tree.object("FfiReadReceipt", []), encoder: "encode_read_receipt",
                  decoder: "decode_read_receipt", byteIdentical: true)
    }

    /// `attachment:1.0` (byte-identical without a file name: only `mimeType`).
    @Test(arguments: Samples.attachments) func attachment(_ value: XMTPAttachment) throws {
        try check(value, tree: Self.tree(value), encoder: "encode_attachment", decoder: "decode_attachment",
                  byteIdentical: value.filename == nil)
    }

    /// `remoteStaticAttachment:1.0` (five or more parameters: compared as values).
    @Test(arguments: Samples.remotes) func remoteAttachment(_ value: XMTPRemoteAttachment) throws {
        try check(value, tree: Tree.remote(value), encoder: "encode_remote_attachment", decoder: "decode_remote_attachment",
                  byteIdentical: false)
    }

    /// `multiRemoteStaticAttachment:1.0` (protobuf, byte-identical).
    @Test(arguments: Samples.multis) func multiRemoteAttachment(_ value: XMTPMultiRemoteAttachment) throws {
        try check(value, tree: Self.tree(value), encoder: "encode_multi_remote_attachment",
                  decoder: "decode_multi_remote_attachment", byteIdentical: true)
    }

    /// `deleteMessage:1.0` (protobuf, byte-identical).
    @Test(arguments: Samples.deletes) func deleteMessage(_ value: XMTPDeleteMessage) throws {
        try check(value, tree: Self.tree(value), encoder: "encode_delete_message", decoder: "decode_delete_message",
                  byteIdentical: true)
    }

    /// Bytes libxmtp rejects we reject too (and the other way round for valid ones).
    @Test func malformedAgreesWithLibxmtp() throws {
        for text in ["0a", "0a05786d7470", "0800", "0a040a02c328", "220568656c6c"] {
            let bytes = Hex.decode(text)!
            let theirs = try LibXMTPFixture.decode("decode_text", bytes)
            #expect(throws: XMTPCodecError.self, "\(text)") { try XMTPEncodedContent.decode(bytes) }
            #expect((try? theirs.get()) == nil, "libxmtp accepted \(text)")
        }
        // A reaction whose protobuf content is truncated: both refuse.
        var reaction = Samples.reactions[0].encoded()
        reaction.content.removeLast()
        #expect(throws: XMTPCodecError.self) { try XMTPReaction.decode(reaction) }
        #expect((try? LibXMTPFixture.decode("decode_reaction", reaction.encoded()).get()) == nil)
    }

    /// An unknown type's fallback is carried; the same bytes pass through libxmtp's reply as nested content unchanged.
    @Test func unknownNestedInReply() throws {
        let reply = Samples.replies[2]
        let theirs = try LibXMTPFixture.encode("encode_reply", Self.tree(reply))
        guard case .reply(let decoded) = try XMTPContent.decode(bytes: theirs) else { Issue.record("not a reply"); return }
        #expect(try XMTPContent.decode(decoded.content) == .unknown(reply.content))
        #expect(try XMTPContent.decode(decoded.content).fallback == "A poll")
    }
}
