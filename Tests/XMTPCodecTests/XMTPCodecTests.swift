import SwitchboardCore
import Foundation
import Testing
import XMTPCodec

/// `encode_text("hello")` in libxmtp (PROTOCOLS.md).
let helloHex = "0a120a08786d74702e6f7267120474657874180112110a08656e636f64696e6712055554462d38220568656c6c6f"

/// Codec behaviour that needs no libxmtp: vectors, round trips, errors.
@Suite struct XMTPCodecTests {
    /// The fixed libxmtp vector for text "hello", both ways.
    @Test func textHelloVector() throws {
        #expect(hex(XMTPText("hello").encoded().encoded()) == helloHex)
        let decoded = try XMTPContent.decode(bytes: Hex.decode(helloHex)!)
        #expect(decoded == .text(XMTPText("hello")))
    }

    /// Every sample survives encode → bytes → decode, and re-encoding gives the same bytes.
    @Test(arguments: Samples.all) func roundTrip(_ content: XMTPContent) throws {
        let bytes = content.encoded().encoded()
        let decodedEnvelope = try XMTPEncodedContent.decode(bytes)
        #expect(decodedEnvelope == content.encoded())
        let decoded = try XMTPContent.decode(decodedEnvelope)
        #expect(decoded == content)
        #expect(decoded.encoded().encoded() == bytes)
        // The JSON form round-trips too (what the command line reads and prints).
        let type = content.encoded().type!.description
        #expect(try XMTPContent.fromJSON(type: type, content.json) == content)
    }

    /// Hand-checked wire bytes for types whose shape is fixed by xmtp/proto.
    @Test func wireShapes() throws {
        // ReactionV2 { reference "ab", action ADDED, content "x", schema UNICODE }.
        let reaction = XMTPReaction(reference: "ab", action: .added, content: "x", schema: .unicode).encoded()
        #expect(hex(reaction.content) == "0a02616218012201782801")
        #expect(reaction.fallback == "Reacted with \"x\" to an earlier message")
        #expect(XMTPReaction(reference: "ab", action: .removed, content: "x", schema: .unicode).encoded().fallback
                    == "Removed \"x\" from an earlier message")
        // DeleteMessage { message_id "ab" }; EditMessage adds field 2 with the nested EncodedContent.
        #expect(hex(XMTPDeleteMessage(messageID: "ab").encoded().content) == "0a026162")
        #expect(hex(XMTPEditMessage(messageID: "ab", editedContent: XMTPText("hello").encoded()).encoded().content)
                    == "0a02616212" + String(format: "%02x", helloHex.count / 2) + helloHex)
        #expect(XMTPEditMessage.contentType.description == "xmtp.org/editMessage:1.0")
        // Read receipt: type only.
        #expect(hex(XMTPReadReceipt().encoded().encoded()) == "0a190a08786d74702e6f7267120b72656164526563656970741801")
        // Map entry with an empty value: prost omits the value field.
        let attachment = XMTPAttachment(filename: nil, mimeType: "", data: [1]).encoded().encoded()
        #expect(hex(attachment).contains("120a0a086d696d6554797065"))
        // Legacy reaction JSON in serde_json's field order and compact form.
        let legacy = XMTPLegacyReaction(reference: "ab", referenceInboxID: "in", action: "added", content: "👍\"", schema: "unicode")
        #expect(String(decoding: legacy.encoded().content, as: UTF8.self)
                    == #"{"action":"added","reference":"ab","referenceInboxId":"in","schema":"unicode","content":"👍\""}"#)
        let noInbox = XMTPLegacyReaction(reference: "ab", action: "removed", content: "x", schema: "custom")
        #expect(String(decoding: noInbox.encoded().content, as: UTF8.self)
                    == #"{"action":"removed","reference":"ab","schema":"custom","content":"x"}"#)
    }

    /// libxmtp's fallbacks and parameters.
    @Test func fallbacksAndParameters() {
        let reply = XMTPReply(reference: "r", referenceInboxID: "i", content: XMTPText("hi").encoded()).encoded()
        #expect(reply.fallback == "Replied with \"hi\" to an earlier message")
        #expect(reply.parameters == ["reference": "r", "referenceInboxId": "i", "contentType": "xmtp.org/text:1.0"])
        let nonText = XMTPReply(reference: "r", content: XMTPReadReceipt().encoded()).encoded()
        #expect(nonText.fallback == "Replied to an earlier message")
        #expect(nonText.parameters == ["reference": "r", "contentType": "xmtp.org/readReceipt:1.0"])
        #expect(XMTPAttachment(filename: "a.png", mimeType: "image/png", data: []).encoded().fallback
                    == "Can't display a.png. This app doesn't support attachments.")
        #expect(XMTPAttachment(filename: nil, mimeType: "image/png", data: []).encoded().fallback
                    == "Can't display this content. This app doesn't support attachments.")
        let remote = Samples.remoteFull.encoded()
        #expect(remote.fallback == "Can't display photo ü.jpg. This app doesn't support remote attachments.")
        #expect(remote.parameters["secret"] == hex(Array(0..<32)))
        #expect(remote.parameters["contentLength"] == "1234")
        #expect(remote.content == Array(Samples.remoteFull.url.utf8))
        #expect(Samples.remoteMinimal.encoded().parameters.keys.sorted() == ["contentDigest", "nonce", "salt", "scheme", "secret"])
        #expect(XMTPText("x").encoded().fallback == nil)
        #expect(XMTPDeleteMessage(messageID: "x").encoded().fallback == nil)
    }

    /// Malformed protobuf gives a typed error, never a crash.
    @Test(arguments: [
        "0a",                     // truncated length
        "0a05786d7470",           // length past the end
        "0a020a",                 // nested ContentTypeId truncated
        "08ffffffffffffffffffff01", // varint longer than 10 bytes
        "0b",                     // wire type 3 (groups) unsupported
        "0800",                   // field 1 with the wrong wire type
        "00",                     // field number 0
        "0a040a02c328",           // authority_id not UTF-8
    ])
    func malformedEnvelope(_ text: String) {
        #expect(throws: XMTPCodecError.self) { try XMTPContent.decode(bytes: Hex.decode(text)!) }
    }

    /// A known type with bad content throws a typed error.
    @Test func malformedKnownContent() throws {
        var reaction = XMTPReaction(reference: "a", action: .added, content: "x", schema: .unicode).encoded()
        reaction.content = [0x0A, 0x09, 0x61]
        #expect(throws: XMTPCodecError.self) { try XMTPContent.decode(reaction) }
        var text = XMTPText("x").encoded()
        text.content = [0xFF, 0xFE]
        #expect(throws: XMTPCodecError.invalidContent(type: "text", reason: "content is not valid UTF-8")) { try XMTPContent.decode(text) }
        text = XMTPText("x").encoded()
        text.parameters["encoding"] = "UTF-16"
        #expect(throws: XMTPCodecError.self) { try XMTPText.decode(text) }
        var remote = Samples.remoteFull.encoded()
        remote.parameters["salt"] = "zz"
        #expect(throws: XMTPCodecError.invalidContent(type: "remoteStaticAttachment", reason: "invalid hex in salt parameter")) {
            try XMTPRemoteAttachment.decode(remote)
        }
        remote = Samples.remoteFull.encoded()
        remote.parameters["contentLength"] = "4294967296"
        #expect(throws: XMTPCodecError.self) { try XMTPRemoteAttachment.decode(remote) }
        var legacy = XMTPLegacyReaction(reference: "a", action: "added", content: "x", schema: "unicode").encoded()
        legacy.content = Array(#"{"reference":"a"}"#.utf8)
        #expect(throws: XMTPCodecError.self) { try XMTPContent.decode(legacy) }
        var reply = Samples.replies[0].encoded()
        reply.content = [0x0A]
        #expect(throws: XMTPCodecError.self) { try XMTPContent.decode(reply) }
        // A codec asked to decode another type refuses.
        #expect(throws: XMTPCodecError.typeMismatch(expected: .reaction, actual: .text)) { try XMTPReaction.decode(XMTPText("x").encoded()) }
    }

    /// Unknown types, unknown versions and a missing type decode to `.unknown` with the fallback kept.
    @Test func unknownContent() throws {
        let poll = XMTPEncodedContent(type: XMTPContentTypeID(authorityID: "example.com", typeID: "poll", versionMajor: 1, versionMinor: 0),
                                      parameters: ["a": "b"], fallback: "Poll: lunch?", content: [9, 9])
        let decoded = try XMTPContent.decode(bytes: poll.encoded())
        #expect(decoded == .unknown(poll))
        #expect(decoded.fallback == "Poll: lunch?")
        let futureText = XMTPEncodedContent(type: .xmtp("text", 2), fallback: "new text", content: [1])
        #expect(try XMTPContent.decode(bytes: futureText.encoded()) == .unknown(futureText))
        let untyped = XMTPEncodedContent(type: nil, fallback: "???", content: [1])
        #expect(try XMTPContent.decode(bytes: untyped.encoded()) == .unknown(untyped))
        // Unknown fields are skipped, as protobuf requires.
        let extra = Hex.decode(helloHex)! + [0x30, 0x05, 0x3D, 1, 2, 3, 4]
        #expect(try XMTPContent.decode(bytes: extra) == .text(XMTPText("hello")))
    }

    /// Compressed content (deflate = zlib-wrapped or raw, gzip) is inflated; bad or unknown compression throws.
    @Test func compression() throws {
        let payload = Array(String(repeating: "compress me, compress me again; ", count: 200).utf8) + Array(0...255)
        for format in ["zlib", "raw", "gzip"] {
            let compressed = try LibXMTPFixture.compress(payload, format: format)
            let content = XMTPEncodedContent(type: .attachment, parameters: ["mimeType": "application/octet-stream"],
                                             content: compressed, compression: format == "gzip" ? .gzip : .deflate)
            let decoded = try XMTPContent.decode(bytes: content.encoded())
            #expect(decoded == .attachment(XMTPAttachment(filename: nil, mimeType: "application/octet-stream", data: payload)), "\(format)")
        }
        let small = try LibXMTPFixture.compress(Array("hello".utf8), format: "zlib")
        let text = XMTPEncodedContent(type: .text, parameters: ["encoding": "UTF-8"], content: small, compression: .deflate)
        #expect(try XMTPContent.decode(bytes: text.encoded()) == .text(XMTPText("hello")))
        var corrupt = text
        corrupt.content[corrupt.content.count - 1] ^= 0xFF
        #expect(throws: XMTPCodecError.self) { try XMTPContent.decode(corrupt) }
        let unknown = XMTPEncodedContent(type: .text, content: [1], compression: XMTPCompression(rawValue: 7))
        #expect(throws: XMTPCodecError.unsupportedCompression(7)) { try XMTPContent.decode(bytes: unknown.encoded()) }
        // Compression is written after content (field 5), with value 0 kept since the field is optional.
        #expect(hex(XMTPEncodedContent(type: nil, content: [1], compression: .deflate).encoded()) == "2201012800")
    }

    /// libxmtp's message ID formula with the raw group ID bytes (vector computed independently with Python hashlib:
    /// sha256(bytes(range(16)) + b"\t" + b"key-1" + b"\t" + encode_text("hello"))).
    @Test func messageID() {
        let id = XMTPMessageID.hex(groupID: Array(0..<16), idempotencyKey: "key-1", encodedContent: Hex.decode(helloHex)!)
        #expect(id == "3e8757d2637c8745ad3fc9980e056e859a9141273484d44175ad473e69d53b91")
        // Hex-encoding the group ID first would give a different ID.
        #expect(id != "6a3bfec7817d0fdb3f23d60f076e759ca5747322a9c7b79fb830552e02c96fd0")
        #expect(XMTPMessageID.calculate(groupID: [1], idempotencyKey: "k", encodedContent: []).count == 32)
    }

    /// Content type names and the parse of `authority/type:major.minor`.
    @Test func contentTypeNames() {
        #expect(XMTPContentTypeID(parsing: "xmtp.org/reaction:2.0") == .reaction)
        #expect(XMTPContent.contentType(named: "reaction") == .reaction)
        #expect(XMTPContent.contentType(named: "reaction:1.0") == .legacyReaction)
        #expect(XMTPContent.contentType(named: "multiRemoteStaticAttachment") == .multiRemoteAttachment)
        #expect(XMTPContent.contentType(named: "nonsense") == nil)
        #expect(XMTPContentTypeID(parsing: "a/b:x.0") == nil)
    }

    /// The package's JSON type parses and writes what the codecs and the command line need.
    @Test func json() throws {
        let value = try JSONValue.parse(#" {"a": [1, -2.5e1, true, null, "\u00e9\ud83d\ude00\n"], "b": {}} "#,
                                        maximumDepth: XMTPContent.maximumJSONDepth)
        #expect(value["a"] == .array([.int(1), .int(-25), .bool(true), .null, .string("é😀\n")]))
        #expect(value.serialized == #"{"a":[1,-2.5e1,true,null,"é😀\n"],"b":{}}"#)
        for bad in ["", "{", "[1,]", "01", "\"\u{01}\"", "{\"a\" 1}", "tru", "1 2"] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bad) }
        }
        let limit = XMTPContent.maximumJSONDepth
        let deepest = String(repeating: "[", count: limit) + String(repeating: "]", count: limit)
        #expect(try JSONValue.parse(deepest, maximumDepth: limit).arrayValue?.count == 1)
        #expect(throws: JSONParseError.self) { try JSONValue.parse("[" + deepest + "]", maximumDepth: limit) }
        #expect(Base64.encode(Array("hello!?".utf8)) == "aGVsbG8hPw==")
        #expect(Base64.decode("aGVsbG8hPw==") == Array("hello!?".utf8))
        #expect(Base64.decode("aGVsbG8hPw=") == nil)
    }
}
