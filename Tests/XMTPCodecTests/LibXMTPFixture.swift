import SwitchboardCore
import Foundation
import Testing
import TestSupport
import XMTPCodec

/// Runs `Fixtures/xmtp_codec.py` (libxmtp's codecs through PyPI `xmtp-bindings`) with the interpreter named by
/// `SWITCHBOARD_PYTHON`.
enum LibXMTPFixture {
    /// Why the fixture could not run.
    struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        let description: String
    }

    /// Sends `cases` to the fixture and returns one result object per case; fails clearly when Python is missing.
    static func run(_ cases: [JSONValue]) throws -> [JSONValue] {
        let python = try TestPython.interpreter(needing: "the PyPI `xmtp-bindings` package")
        let result = try ChildProcess.run(python, [TestPython.fixture("xmtp_codec.py")],
                                          input: Data(JSONValue.object([("cases", .array(cases))]).serialized.utf8))
        guard result.status == 0 else {
            throw Failure(description: "xmtp_codec.py exited with \(result.status): \(result.stderr)")
        }
        let stdout = result.stdout
        let parsed = try JSONValue.parse(stdout)
        guard case .array(let results)? = parsed["results"], results.count == cases.count else {
            throw Failure(description: "xmtp_codec.py answered unexpectedly: \(stdout)")
        }
        return results
    }

    /// Runs one case.
    static func one(_ testCase: JSONValue) throws -> JSONValue { try run([testCase])[0] }

    /// libxmtp's encoding of `arg` with `fn` (e.g. `encode_reaction`), as bytes.
    static func encode(_ fn: String, _ arg: JSONValue) throws -> [UInt8] {
        let result = try one(.object([("op", .string("encode")), ("fn", .string(fn)), ("arg", arg)]))
        guard case .string(let hex)? = result["hex"], let bytes = Hex.decode(hex) else {
            throw Failure(description: "libxmtp \(fn) failed: \(result.serialized)")
        }
        return bytes
    }

    /// libxmtp's decoding of `bytes` with `fn` (e.g. `decode_reaction`): the value tree, or the error text.
    static func decode(_ fn: String, _ bytes: [UInt8]) throws -> Result<JSONValue, Failure> {
        let result = try one(.object([("op", .string("decode")), ("fn", .string(fn)), ("hex", .string(hex(bytes)))]))
        if let value = result["value"] { return .success(value) }
        if case .string(let message)? = result["error"] { return .failure(Failure(description: message)) }
        throw Failure(description: "unexpected fixture answer \(result.serialized)")
    }

    /// libxmtp's decoding that must succeed.
    static func decoded(_ fn: String, _ bytes: [UInt8]) throws -> JSONValue { try decode(fn, bytes).get() }

    /// Bytes compressed by Python's zlib (`zlib`, `gzip` or `raw` deflate).
    static func compress(_ bytes: [UInt8], format: String) throws -> [UInt8] {
        let result = try one(.object([("op", .string("compress")), ("format", .string(format)), ("hex", .string(hex(bytes)))]))
        guard case .string(let text)? = result["hex"], let compressed = Hex.decode(text) else {
            throw Failure(description: "compress failed: \(result.serialized)")
        }
        return compressed
    }
}

/// Lowercase hex.
func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Tree builders matching the fixture's conventions.
enum Tree {
    /// `{"$bytes": hex}`.
    static func bytes(_ value: [UInt8]) -> JSONValue { .object([("$bytes", .string(hex(value)))]) }
    /// `{"$enum": type, "name": name}`.
    static func enumCase(_ type: String, _ name: String) -> JSONValue { .object([("$enum", .string(type)), ("name", .string(name))]) }
    /// `{"$class": name, fields…}`.
    static func object(_ name: String, _ fields: [(key: String, value: JSONValue)]) -> JSONValue { .object([("$class", .string(name))] + fields) }
    /// A string or null.
    static func string(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }

    /// `FfiEncodedContent` for `content`.
    static func encodedContent(_ content: XMTPEncodedContent) -> JSONValue {
        object("FfiEncodedContent", [
            ("type_id", content.type.map { type in
                object("FfiContentTypeId", [("authority_id", .string(type.authorityID)), ("type_id", .string(type.typeID)),
                                            ("version_major", .int(Int64(type.versionMajor))),
                                            ("version_minor", .int(Int64(type.versionMinor)))])
            } ?? .null),
            ("parameters", .object(content.parameters.keys.sorted().map { ($0, .string(content.parameters[$0]!)) })),
            ("fallback", string(content.fallback)),
            ("compression", content.compression.map { .int(Int64($0.rawValue)) } ?? .null),
            ("content", bytes(content.content)),
        ])
    }

    /// `FfiRemoteAttachment` for `value`.
    static func remote(_ value: XMTPRemoteAttachment) -> JSONValue {
        object("FfiRemoteAttachment", [
            ("url", .string(value.url)), ("content_digest", .string(value.contentDigest)), ("secret", bytes(value.secret)),
            ("salt", bytes(value.salt)), ("nonce", bytes(value.nonce)), ("scheme", .string(value.scheme)),
            ("content_length", value.contentLength.map { .int(Int64($0)) } ?? .null), ("filename", string(value.filename)),
        ])
    }
}
