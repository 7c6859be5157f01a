import SwitchboardCore
import XMTPCodec

/// `switchboard xmtp codec encode|decode` and `switchboard xmtp message-id`: libxmtp-compatible content codecs.
enum XMTPCodecCommand {
    /// The detailed help of these commands (`switchboard xmtp codec --help`); `CommandLineTool.usage` has a summary.
    static let usage = """
      xmtp codec encode         Encode content as libxmtp does; prints the EncodedContent protobuf as hex.
          --type T                text | reply | reaction (2.0) | reaction:1.0 (legacy JSON) | readReceipt |
                                  attachment | remoteStaticAttachment | multiRemoteStaticAttachment |
                                  deleteMessage | editMessage (or the full form, e.g. xmtp.org/text:1.0)
          --json J                the value as JSON, e.g. '"hello"' for text,
                                  '{"reference":"ab12","action":"added","content":"👍","schema":"unicode"}';
                                  nested content (reply, edit) is {"type":T,"content":value} or {"hex":H}

      xmtp codec decode         Decode EncodedContent; prints {"type","parameters","fallback","content"} as JSON
                                (an unknown type gives its raw content in base64; the fallback is kept).
          --hex H                 the EncodedContent protobuf as hex

      xmtp message-id           Print libxmtp's message ID:
                                hex(sha256(group_id ‖ TAB ‖ idempotency_key ‖ TAB ‖ EncodedContent bytes)).
          --group G               the group ID as hex (hashed as raw bytes)
          --key K                 the idempotency key
          --content-hex H         the EncodedContent protobuf as hex
    """

    /// Runs `encode` or `decode`.
    static func codec(_ arguments: [String]) throws -> Int32 {
        guard let sub = arguments.first else { throw UsageError("xmtp codec needs a subcommand: encode, decode") }
        let parsed = try Arguments(Array(arguments.dropFirst()), booleanFlags: [])
        switch sub {
        case "encode":
            try parsed.check(allowed: ["type", "json"])
            guard let type = parsed.value("type") else { throw UsageError("xmtp codec encode needs --type") }
            guard let jsonText = parsed.value("json") else { throw UsageError("xmtp codec encode needs --json") }
            let json: JSONValue
            do { json = try JSONValue.parse(jsonText, maximumDepth: XMTPContent.maximumJSONDepth) } catch { throw UsageError("--json is not valid JSON: \(error)") }
            do {
                writeLine(Digest.hex(try XMTPContent.fromJSON(type: type, json).encoded().encoded()))
            } catch {
                throw UsageError("--json does not describe \(type) content: \(error)")
            }
            return 0
        case "decode":
            try parsed.check(allowed: ["hex"])
            let bytes = try hexArgument(parsed, "hex")
            let content: XMTPEncodedContent
            do { content = try XMTPEncodedContent.decode(bytes) } catch { throw UsageError("--hex is not EncodedContent: \(error)") }
            let json = content.decodedJSON()
            writeLine(json.serialized)
            return json["error"] == nil ? 0 : 1
        default:
            throw UsageError("unknown xmtp codec subcommand '\(sub)' (encode, decode)")
        }
    }

    /// Prints the message ID for a group, key and content.
    static func messageID(_ arguments: [String]) throws -> Int32 {
        let parsed = try Arguments(arguments, booleanFlags: [])
        try parsed.check(allowed: ["group", "key", "content-hex"])
        let group = try hexArgument(parsed, "group")
        guard let key = parsed.value("key") else { throw UsageError("xmtp message-id needs --key") }
        let content = try hexArgument(parsed, "content-hex")
        writeLine(XMTPMessageID.hex(groupID: group, idempotencyKey: key, encodedContent: content))
        return 0
    }

    /// A required hex option's bytes.
    private static func hexArgument(_ parsed: Arguments, _ name: String) throws -> [UInt8] {
        guard let text = parsed.value(name) else { throw UsageError("--\(name) is required") }
        guard let bytes = Hex.decode(text) else { throw UsageError("--\(name) must be hex (an even number of 0-9a-f digits)") }
        return bytes
    }
}
