import SwitchboardCore
import Foundation
import Testing
import XMTPCodec

/// Runs `Fixtures/xmtp_codec.py` (libxmtp's codecs through PyPI `xmtp-bindings`) with the interpreter named by
/// `SWITCHBOARD_PYTHON`.
enum LibXMTPFixture {
    /// Why the fixture could not run.
    struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        let description: String
    }

    /// The fixture script next to this file.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/xmtp_codec.py")

    /// Sends `cases` to the fixture and returns one result object per case; fails clearly when Python is missing.
    static func run(_ cases: [XMTPJSON]) throws -> [XMTPJSON] {
        guard let python = ProcessInfo.processInfo.environment["SWITCHBOARD_PYTHON"], !python.isEmpty else {
            throw Failure(description: """
                SWITCHBOARD_PYTHON is not set: the libxmtp interop tests need a Python with the PyPI `xmtp-bindings` \
                package, e.g. SWITCHBOARD_PYTHON=/work/main/.venv/bin/python swift test --filter XMTPCodec
                """)
        }
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure(description: "SWITCHBOARD_PYTHON=\(python) is not an executable file")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        input.fileHandleForWriting.write(Data(XMTPJSON.object([("cases", .array(cases))]).serialized().utf8))
        try input.fileHandleForWriting.close()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "xmtp_codec.py exited with \(process.terminationStatus): \(String(decoding: stderr, as: UTF8.self))")
        }
        let parsed = try XMTPJSON.parse(String(decoding: stdout, as: UTF8.self))
        guard case .array(let results)? = parsed["results"], results.count == cases.count else {
            throw Failure(description: "xmtp_codec.py answered unexpectedly: \(String(decoding: stdout, as: UTF8.self))")
        }
        return results
    }

    /// Runs one case.
    static func one(_ testCase: XMTPJSON) throws -> XMTPJSON { try run([testCase])[0] }

    /// libxmtp's encoding of `arg` with `fn` (e.g. `encode_reaction`), as bytes.
    static func encode(_ fn: String, _ arg: XMTPJSON) throws -> [UInt8] {
        let result = try one(.object([("op", .string("encode")), ("fn", .string(fn)), ("arg", arg)]))
        guard case .string(let hex)? = result["hex"], let bytes = Hex.decode(hex) else {
            throw Failure(description: "libxmtp \(fn) failed: \(result.serialized())")
        }
        return bytes
    }

    /// libxmtp's decoding of `bytes` with `fn` (e.g. `decode_reaction`): the value tree, or the error text.
    static func decode(_ fn: String, _ bytes: [UInt8]) throws -> Result<XMTPJSON, Failure> {
        let result = try one(.object([("op", .string("decode")), ("fn", .string(fn)), ("hex", .string(hex(bytes)))]))
        if let value = result["value"] { return .success(value) }
        if case .string(let message)? = result["error"] { return .failure(Failure(description: message)) }
        throw Failure(description: "unexpected fixture answer \(result.serialized())")
    }

    /// libxmtp's decoding that must succeed.
    static func decoded(_ fn: String, _ bytes: [UInt8]) throws -> XMTPJSON { try decode(fn, bytes).get() }

    /// Bytes compressed by Python's zlib (`zlib`, `gzip` or `raw` deflate).
    static func compress(_ bytes: [UInt8], format: String) throws -> [UInt8] {
        let result = try one(.object([("op", .string("compress")), ("format", .string(format)), ("hex", .string(hex(bytes)))]))
        guard case .string(let text)? = result["hex"], let compressed = Hex.decode(text) else {
            throw Failure(description: "compress failed: \(result.serialized())")
        }
        return compressed
    }
}

/// Lowercase hex.
func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// Tree builders matching the fixture's conventions.
enum Tree {
    /// `{"$bytes": hex}`.
    static func bytes(_ value: [UInt8]) -> XMTPJSON { .object([("$bytes", .string(hex(value)))]) }
    /// `{"$enum": type, "name": name}`.
    static func enumCase(_ type: String, _ name: String) -> XMTPJSON { .object([("$enum", .string(type)), ("name", .string(name))]) }
    /// `{"$class": name, fields…}`.
    static func object(_ name: String, _ fields: [(String, XMTPJSON)]) -> XMTPJSON { .object([("$class", .string(name))] + fields) }
    /// A string or null.
    static func string(_ value: String?) -> XMTPJSON { value.map { .string($0) } ?? .null }

    /// `FfiEncodedContent` for `content`.
    static func encodedContent(_ content: XMTPEncodedContent) -> XMTPJSON {
        object("FfiEncodedContent", [
            ("type_id", content.type.map { type in
                object("FfiContentTypeId", [("authority_id", .string(type.authorityID)), ("type_id", .string(type.typeID)),
                                            ("version_major", .number(Double(type.versionMajor))),
                                            ("version_minor", .number(Double(type.versionMinor)))])
            } ?? .null),
            ("parameters", .object(content.parameters.keys.sorted().map { ($0, .string(content.parameters[$0]!)) })),
            ("fallback", string(content.fallback)),
            ("compression", content.compression.map { .number(Double($0.rawValue)) } ?? .null),
            ("content", bytes(content.content)),
        ])
    }

    /// `FfiRemoteAttachment` for `value`.
    static func remote(_ value: XMTPRemoteAttachment) -> XMTPJSON {
        object("FfiRemoteAttachment", [
            ("url", .string(value.url)), ("content_digest", .string(value.contentDigest)), ("secret", bytes(value.secret)),
            ("salt", bytes(value.salt)), ("nonce", bytes(value.nonce)), ("scheme", .string(value.scheme)),
            ("content_length", value.contentLength.map { .number(Double($0)) } ?? .null), ("filename", string(value.filename)),
        ])
    }
}

/// Comparison of fixture trees with objects regardless of key order (dictionaries from Python come in any order).
func sameTree(_ a: XMTPJSON, _ b: XMTPJSON) -> Bool {
    switch (a, b) {
    case let (.object(x), .object(y)):
        let left = Dictionary(x, uniquingKeysWith: { $1 }), right = Dictionary(y, uniquingKeysWith: { $1 })
        return left.count == right.count && left.allSatisfy { key, value in right[key].map { sameTree(value, $0) } ?? false }
    case let (.array(x), .array(y)): return x.count == y.count && zip(x, y).allSatisfy(sameTree)
    default: return a == b
    }
}
