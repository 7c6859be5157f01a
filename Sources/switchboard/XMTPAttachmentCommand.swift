import Foundation
import SwitchboardCore
import XMTPCodec
import XMTPCrypto

/// `switchboard xmtp attachment encrypt|decrypt`: remote-attachment encryption exactly as libxmtp does it.
enum XMTPAttachmentCommand {
    /// The subcommand's help text.
    static let usage = """
    switchboard xmtp attachment — remote-attachment crypto as libxmtp does it

    USAGE
      switchboard xmtp attachment encrypt --in FILE [--filename NAME] [--mime TYPE] --out CIPHERTEXT
      switchboard xmtp attachment decrypt --in CIPHERTEXT --params JSON|FILE --out FILE

    encrypt   Wraps FILE in the EncodedContent of xmtp.org/attachment:1.0 (parameters filename and
              mimeType, fallback text, content = the file bytes), encrypts it with a fresh 32-byte secret,
              32-byte salt and 12-byte nonce (key = HKDF-SHA256(salt, secret, empty info); AES-256-GCM,
              no AAD, ciphertext ‖ tag), writes the ciphertext to CIPHERTEXT and prints the parameters
              as one JSON line: contentDigest (hex sha256 of the ciphertext), secret, salt, nonce (hex),
              scheme ("https://"), contentLength (ciphertext bytes), filename.
        --in FILE           the file to attach
        --filename NAME     the attachment's filename (default: FILE's last path component)
        --mime TYPE         its MIME type (default: application/octet-stream)
        --out CIPHERTEXT    where to write the encrypted bytes (what gets uploaded)

    decrypt   Checks the ciphertext's SHA-256 against contentDigest BEFORE decrypting, decrypts,
              decodes the attachment EncodedContent and writes the file bytes to FILE; prints
              {"filename","mimeType","length"} as one JSON line.
        --in CIPHERTEXT     the downloaded encrypted bytes
        --params P          the parameters printed by encrypt: inline JSON (starting with '{') or a file
        --out FILE          where to write the decrypted file

    The printed parameters contain the secret: treat them like a key.
    Exit status: 0 on success; 1 on a digest mismatch, tampered or truncated ciphertext, wrong key,
    bad parameters or an unreadable file; 2 on a usage error.
    """

    /// Dispatches `encrypt`, `decrypt` and `help`.
    static func run(_ arguments: [String]) throws -> Int32 {
        guard let sub = arguments.first else { throw UsageError("xmtp attachment needs a subcommand: encrypt, decrypt") }
        let rest = Array(arguments.dropFirst())
        switch sub {
        case "encrypt": return try encrypt(rest)
        case "decrypt": return try decrypt(rest)
        case "help", "--help", "-h":
            writeLine(usage)
            return 0
        default: throw UsageError("unknown xmtp attachment subcommand '\(sub)' (encrypt, decrypt)")
        }
    }

    /// `encrypt --in F [--filename N] [--mime M] --out C`.
    private static func encrypt(_ arguments: [String]) throws -> Int32 {
        let args = try Arguments(arguments, booleanFlags: [])
        try args.check(allowed: ["in", "filename", "mime", "out"])
        guard let input = args.value("in") else { throw UsageError("encrypt needs --in FILE") }
        guard let output = args.value("out") else { throw UsageError("encrypt needs --out CIPHERTEXT") }
        let filename = args.value("filename") ?? URL(fileURLWithPath: input).lastPathComponent
        let mimeType = args.value("mime") ?? "application/octet-stream"

        let fileBytes = try readFile(input)
        var plaintext = AttachmentContent.encode(filename: filename, mimeType: mimeType, content: fileBytes)
        defer { SymmetricKey.wipe(&plaintext) }
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext)
        try writeFile(output, ciphertext)

        let json: [String: Any] = [
            "contentDigest": params.contentDigest,
            "secret": params.secretHex,
            "salt": params.saltHex,
            "nonce": params.nonceHex,
            "scheme": "https://",
            "contentLength": params.contentLength,
            "filename": filename,
        ]
        let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys, .withoutEscapingSlashes])
        writeLine(String(decoding: data, as: UTF8.self))
        return 0
    }

    /// `decrypt --in C --params P --out F`.
    private static func decrypt(_ arguments: [String]) throws -> Int32 {
        let args = try Arguments(arguments, booleanFlags: [])
        try args.check(allowed: ["in", "params", "out"])
        guard let input = args.value("in") else { throw UsageError("decrypt needs --in CIPHERTEXT") }
        guard let paramsArgument = args.value("params") else { throw UsageError("decrypt needs --params JSON|FILE") }
        guard let output = args.value("out") else { throw UsageError("decrypt needs --out FILE") }

        let params = try parseParams(paramsArgument)
        let ciphertext = try readFile(input)
        var plaintext = try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: params)
        defer { SymmetricKey.wipe(&plaintext) }
        let attachment = try AttachmentContent.decode(plaintext)
        try writeFile(output, attachment.content)

        var summary: [String: Any] = ["mimeType": attachment.mimeType, "length": attachment.content.count]
        if let filename = attachment.filename { summary["filename"] = filename }
        let data = try JSONSerialization.data(withJSONObject: summary, options: [.sortedKeys, .withoutEscapingSlashes])
        writeLine(String(decoding: data, as: UTF8.self))
        return 0
    }

    /// Reads the remote-attachment parameters from inline JSON or a JSON file.
    private static func parseParams(_ argument: String) throws -> RemoteAttachmentSecrets {
        let trimmed = argument.trimmingCharacters(in: .whitespacesAndNewlines)
        let raw: [UInt8] = trimmed.hasPrefix("{") ? Array(trimmed.utf8) : try readFile(argument)
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(raw))
        } catch {
            throw AttachmentCommandError("bad params: not valid JSON")
        }
        guard let json = object as? [String: Any] else { throw AttachmentCommandError("bad params: expected a JSON object") }
        func field(_ name: String) throws -> String {
            guard let value = json[name] as? String, !value.isEmpty else {
                throw AttachmentCommandError("bad params: missing or non-string \"\(name)\"")
            }
            return value
        }
        let digest = try field("contentDigest")
        guard digest.utf8.count == 64, Hex.decode(digest) != nil else {
            throw AttachmentCommandError("bad params: \"contentDigest\" must be 64 hex digits")
        }
        var contentLength = -1
        switch json["contentLength"] {
        case nil, is NSNull: break
        case let number as NSNumber: contentLength = number.intValue
        case let text as String:
            guard let value = Int(text) else { throw AttachmentCommandError("bad params: \"contentLength\" is not an integer") }
            contentLength = value
        default: throw AttachmentCommandError("bad params: \"contentLength\" is not an integer")
        }
        do {
            return try RemoteAttachmentSecrets(secretHex: field("secret"), saltHex: field("salt"), nonceHex: field("nonce"),
                                               contentDigest: digest, contentLength: contentLength)
        } catch let error as XMTPCryptoError {
            throw AttachmentCommandError("bad params: \(error)")
        }
    }

    /// The bytes of the file at `path`, with a clear error.
    private static func readFile(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw AttachmentCommandError("cannot read \(path)") }
        return [UInt8](data)
    }

    /// Writes `bytes` to `path` atomically, with a clear error.
    private static func writeFile(_ path: String, _ bytes: [UInt8]) throws {
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw AttachmentCommandError("cannot write \(path): \(error.localizedDescription)")
        }
    }
}

/// A failure of `xmtp attachment` other than a crypto error (bad params, unreadable files, undecodable content).
private struct AttachmentCommandError: Error, CustomStringConvertible {
    /// What went wrong.
    let description: String
    /// An error saying `description`.
    init(_ description: String) { self.description = description }
}

/// The EncodedContent of `xmtp.org/attachment:1.0` as libxmtp's AttachmentCodec writes it
/// (the full codec lives in XMTPCodec; this private copy keeps the command self-contained).
private enum AttachmentContent {
    /// A decoded attachment.
    struct Decoded {
        /// The `filename` parameter, if present.
        var filename: String?
        /// The `mimeType` parameter ("" if absent, like libxmtp's get_param_or_default).
        var mimeType: String
        /// The file bytes.
        var content: [UInt8]
    }

    /// EncodedContent { type = xmtp.org/attachment:1.0, parameters (sorted by key), fallback, content }.
    static func encode(filename: String?, mimeType: String, content: [UInt8]) -> [UInt8] {
        var type = ProtobufWriter()
        type.string(1, "xmtp.org")
        type.string(2, "attachment")
        type.uint64(3, 1)
        type.uint64(4, 0)
        var parameters = ["mimeType": mimeType]
        if let filename { parameters["filename"] = filename }
        var writer = ProtobufWriter()
        writer.message(1, type.bytes)
        for (key, value) in parameters.sorted(by: { $0.key < $1.key }) {
            var entry = ProtobufWriter()
            entry.string(1, key)
            entry.string(2, value)
            writer.message(2, entry.bytes)
        }
        writer.string(3, "Can't display \(filename ?? "this content"). This app doesn't support attachments.")
        writer.bytes(4, content)
        return writer.bytes
    }

    /// Decodes the EncodedContent, checking that it is an uncompressed `xmtp.org/attachment:1.x`.
    static func decode(_ bytes: [UInt8]) throws -> Decoded {
        do {
            var reader = ProtobufReader(bytes)
            var typeID: (authority: String, type: String, major: UInt64) = ("", "", 0)
            var parameters: [String: String] = [:]
            var content: [UInt8] = []
            var compressed = false
            while let (field, wireType) = try reader.nextField() {
                switch field {
                case 1:
                    try reader.expect(wireType, .lengthDelimited, field: 1)
                    var inner = ProtobufReader(try reader.lengthDelimited())
                    while let (f, t) = try inner.nextField() {
                        switch f {
                        case 1: try inner.expect(t, .lengthDelimited, field: 1); typeID.authority = try inner.string()
                        case 2: try inner.expect(t, .lengthDelimited, field: 2); typeID.type = try inner.string()
                        case 3: try inner.expect(t, .varint, field: 3); typeID.major = try inner.varint()
                        default: try inner.skip(t)
                        }
                    }
                case 2:
                    try reader.expect(wireType, .lengthDelimited, field: 2)
                    var inner = ProtobufReader(try reader.lengthDelimited())
                    var key = "", value = ""
                    while let (f, t) = try inner.nextField() {
                        switch f {
                        case 1: try inner.expect(t, .lengthDelimited, field: 1); key = try inner.string()
                        case 2: try inner.expect(t, .lengthDelimited, field: 2); value = try inner.string()
                        default: try inner.skip(t)
                        }
                    }
                    parameters[key] = value
                case 4:
                    try reader.expect(wireType, .lengthDelimited, field: 4)
                    content = try reader.lengthDelimited()
                case 5:
                    try reader.expect(wireType, .varint, field: 5)
                    compressed = true
                    _ = try reader.varint()
                default:
                    try reader.skip(wireType)
                }
            }
            guard typeID.authority == "xmtp.org", typeID.type == "attachment", typeID.major == 1 else {
                throw AttachmentCommandError("decrypted content is \(typeID.authority)/\(typeID.type):\(typeID.major), not xmtp.org/attachment:1")
            }
            guard !compressed else { throw AttachmentCommandError("compressed attachment content is not supported") }
            return Decoded(filename: parameters["filename"], mimeType: parameters["mimeType"] ?? "", content: content)
        } catch let error as ProtobufError {
            throw AttachmentCommandError("decrypted content is not a valid EncodedContent: \(error)")
        }
    }
}
