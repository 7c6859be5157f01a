import Foundation
import Testing
import SwitchboardCore
import TestSupport
@testable import XMTPCrypto

/// Runs the independent Python implementation (`Fixtures/attachment_crypto.py`, PyPI `cryptography`).
enum PythonFixture {
    /// Runs the fixture with `arguments`; a missing interpreter is a failure, not a skip.
    static func run(_ arguments: [String]) throws -> ProcessResult {
        let python = try TestPython.interpreter(needing: "the PyPI `cryptography` (and `xmtp-bindings`) packages")
        return try ChildProcess.run(python, [TestPython.fixture("attachment_crypto.py")] + arguments)
    }
}

/// A fresh temporary directory for one test.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-crypto-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// Parses one JSON object line.
func jsonObject(_ text: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8))
    return try #require(object as? [String: Any])
}

/// Remote-attachment encryption: libxmtp's scheme, digest-before-decrypt, and interop with Python `cryptography`.
@Suite struct RemoteAttachmentTests {
    @Test func roundTripAndShape() throws {
        let plaintext = Array("an EncodedContent would go here".utf8)
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext)
        #expect(params.secret.byteCount == 32 && params.salt.count == 32 && params.nonce.count == 12)
        #expect(ciphertext.count == plaintext.count + 16 && params.contentLength == ciphertext.count)
        #expect(params.contentDigest == Digest.sha256Hex(ciphertext))
        #expect(try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: params) == plaintext)
        let other = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext)
        #expect(other.ciphertext != ciphertext && other.params.secretHex != params.secretHex && other.params.salt != params.salt)
    }

    @Test func knownAnswerIsHKDFThenAESGCM() throws {
        let secret = SymmetricKey(bytes: [UInt8](0..<32))
        let salt = [UInt8](32..<64), nonce = [UInt8](64..<76)
        let plaintext = Array("hello".utf8)
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext, secret: secret, salt: salt, nonce: nonce)
        let key = try HKDF.sha256(salt: salt, ikm: [UInt8](0..<32), info: [], length: 32)
        #expect(ciphertext == (try AESGCM.seal(plaintext, key: SymmetricKey(bytes: key), nonce: nonce, aad: [])))
        #expect(params.contentDigest == SHA256.hexDigest(ciphertext))
    }

    @Test func digestIsCheckedBeforeDecrypting() throws {
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: Array("x".utf8))
        var tampered = ciphertext
        tampered[0] ^= 1
        // A tampered ciphertext fails on the digest, not on the tag.
        #expect(throws: XMTPCryptoError.digestMismatch(expected: params.contentDigest, actual: SHA256.hexDigest(tampered))) {
            try RemoteAttachmentCrypto.decrypt(ciphertext: tampered, params: params)
        }
        // Even a wrong key is never tried when the digest is wrong: params with a bogus secret still report the digest.
        let bogus = try RemoteAttachmentSecrets(secret: SymmetricKey.random(), salt: params.salt, nonce: params.nonce,
                                                contentDigest: String(repeating: "ab", count: 32), contentLength: params.contentLength)
        #expect(throws: XMTPCryptoError.digestMismatch(expected: bogus.contentDigest, actual: params.contentDigest)) {
            try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: bogus)
        }
        let truncated = Array(ciphertext.dropLast())
        #expect(throws: XMTPCryptoError.self) { try RemoteAttachmentCrypto.decrypt(ciphertext: truncated, params: params) }
    }

    @Test func matchingDigestButWrongSecretFailsAuthentication() throws {
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: Array("x".utf8))
        let wrong = try RemoteAttachmentSecrets(secret: SymmetricKey.random(), salt: params.salt, nonce: params.nonce,
                                                contentDigest: params.contentDigest, contentLength: params.contentLength)
        #expect(throws: XMTPCryptoError.authenticationFailed) { try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: wrong) }
        var salt = params.salt
        salt[0] ^= 1
        let wrongSalt = try RemoteAttachmentSecrets(secret: params.secret, salt: salt, nonce: params.nonce,
                                                    contentDigest: params.contentDigest, contentLength: params.contentLength)
        #expect(throws: XMTPCryptoError.authenticationFailed) { try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: wrongSalt) }
    }

    @Test func paramsValidateLengthsAndHex() throws {
        let digest = String(repeating: "0", count: 64)
        #expect(throws: XMTPCryptoError.invalidSaltLength(expected: 32, actual: 16)) {
            try RemoteAttachmentSecrets(secret: SymmetricKey.random(), salt: [UInt8](repeating: 0, count: 16), nonce: [UInt8](repeating: 0, count: 12),
                                        contentDigest: digest, contentLength: 0)
        }
        #expect(throws: XMTPCryptoError.invalidNonceLength(expected: 12, actual: 8)) {
            try RemoteAttachmentSecrets(secret: SymmetricKey.random(), salt: [UInt8](repeating: 0, count: 32), nonce: [UInt8](repeating: 0, count: 8),
                                        contentDigest: digest, contentLength: 0)
        }
        #expect(throws: XMTPCryptoError.invalidHex(field: "secret")) {
            try RemoteAttachmentSecrets(secretHex: "xyz", saltHex: "", nonceHex: "", contentDigest: digest, contentLength: 0)
        }
        let (_, params) = try RemoteAttachmentCrypto.encrypt(plaintext: [1])
        let parsed = try RemoteAttachmentSecrets(secretHex: params.secretHex.uppercased(), saltHex: params.saltHex, nonceHex: params.nonceHex,
                                                 contentDigest: params.contentDigest.uppercased(), contentLength: params.contentLength)
        #expect(parsed == params)
    }

    @Test func pythonDecryptsWhatSwiftEncrypted() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plaintext = try SecureRandom.bytes(70_001)
        let (ciphertext, params) = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext)
        let cipherPath = dir.appendingPathComponent("c.bin").path, outPath = dir.appendingPathComponent("p.bin").path
        try Data(ciphertext).write(to: URL(fileURLWithPath: cipherPath))
        let json = """
            {"contentDigest":"\(params.contentDigest)","secret":"\(params.secretHex)","salt":"\(params.saltHex)",\
            "nonce":"\(params.nonceHex)","scheme":"https://","contentLength":\(params.contentLength)}
            """
        let result = try PythonFixture.run(["decrypt", "--in", cipherPath, "--params", json, "--out", outPath])
        #expect(result.status == 0, "python decrypt failed: \(result.stderr)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: outPath))) == plaintext)
        #expect(try jsonObject(result.stdout)["contentDigest"] as? String == params.contentDigest)

        // Python also rejects a tampered copy on the digest.
        var tampered = ciphertext
        tampered[tampered.count / 2] ^= 0x40
        try Data(tampered).write(to: URL(fileURLWithPath: cipherPath))
        let rejected = try PythonFixture.run(["decrypt", "--in", cipherPath, "--params", json, "--out", outPath])
        #expect(rejected.status == 3, "expected a digest mismatch from python: \(rejected.stderr)")
    }

    @Test func swiftDecryptsWhatPythonEncrypted() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plaintext = try SecureRandom.bytes(4097)
        let inPath = dir.appendingPathComponent("p.bin").path, cipherPath = dir.appendingPathComponent("c.bin").path
        try Data(plaintext).write(to: URL(fileURLWithPath: inPath))
        let result = try PythonFixture.run(["encrypt", "--in", inPath, "--out", cipherPath])
        #expect(result.status == 0, "python encrypt failed: \(result.stderr)")
        let json = try jsonObject(result.stdout)
        let ciphertext = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cipherPath)))
        let params = try RemoteAttachmentSecrets(
            secretHex: #require(json["secret"] as? String), saltHex: #require(json["salt"] as? String),
            nonceHex: #require(json["nonce"] as? String), contentDigest: #require(json["contentDigest"] as? String),
            contentLength: #require(json["contentLength"] as? Int))
        #expect(params.contentDigest == SHA256.hexDigest(ciphertext))
        #expect(try RemoteAttachmentCrypto.decrypt(ciphertext: ciphertext, params: params) == plaintext)
    }

    @Test func sameInputsGiveIdenticalCiphertextInBoth() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let plaintext = Array("deterministic check".utf8)
        let secret = try SecureRandom.bytes(32), salt = try SecureRandom.bytes(32), nonce = try SecureRandom.bytes(12)
        let swift = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext, secret: SymmetricKey(bytes: secret), salt: salt, nonce: nonce)
        let inPath = dir.appendingPathComponent("p.bin").path, cipherPath = dir.appendingPathComponent("c.bin").path
        try Data(plaintext).write(to: URL(fileURLWithPath: inPath))
        let result = try PythonFixture.run(["encrypt", "--in", inPath, "--out", cipherPath,
                                            "--secret", Digest.hex(secret), "--salt", Digest.hex(salt), "--nonce", Digest.hex(nonce)])
        #expect(result.status == 0, "python encrypt failed: \(result.stderr)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: cipherPath))) == swift.ciphertext)
        #expect(try jsonObject(result.stdout)["contentDigest"] as? String == swift.params.contentDigest)
    }
}

/// `switchboard xmtp attachment encrypt|decrypt`, checked against Python `cryptography` and libxmtp's own attachment decoder.
@Suite struct AttachmentCommandTests {
    @Test func encryptThenPythonAndLibxmtpDecode() throws {
        let executable = try SwitchboardExecutable.locate().path
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try SecureRandom.bytes(20_000)
        let inPath = dir.appendingPathComponent("photo.png").path, cipherPath = dir.appendingPathComponent("c.bin").path
        try Data(file).write(to: URL(fileURLWithPath: inPath))
        let encrypted = try ChildProcess.run(executable, ["xmtp", "attachment", "encrypt", "--in", inPath, "--filename", "cat photo.png",
                                                    "--mime", "image/png", "--out", cipherPath])
        #expect(encrypted.status == 0, "encrypt failed: \(encrypted.stderr)")
        let params = try jsonObject(encrypted.stdout)
        let ciphertext = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cipherPath)))
        #expect(params["contentDigest"] as? String == SHA256.hexDigest(ciphertext))
        #expect(params["contentLength"] as? Int == ciphertext.count)
        #expect(params["scheme"] as? String == "https://" && params["filename"] as? String == "cat photo.png")
        #expect((params["secret"] as? String)?.count == 64 && (params["salt"] as? String)?.count == 64 && (params["nonce"] as? String)?.count == 24)

        let plainPath = dir.appendingPathComponent("encoded.bin").path
        let python = try PythonFixture.run(["decrypt", "--in", cipherPath, "--params", encrypted.stdout, "--out", plainPath,
                                            "--decode-attachment"])
        #expect(python.status == 0, "python decrypt / libxmtp decode failed: \(python.stderr)")
        let decoded = try jsonObject(python.stdout)
        #expect(decoded["filename"] as? String == "cat photo.png")
        #expect(decoded["mimeType"] as? String == "image/png")
        #expect(decoded["contentHex"] as? String == Digest.hex(file))

        // And back through our own decrypt, params from a file.
        let paramsPath = dir.appendingPathComponent("params.json").path
        try Data(encrypted.stdout.utf8).write(to: URL(fileURLWithPath: paramsPath))
        let outPath = dir.appendingPathComponent("out.png").path
        let decrypted = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath, "--params", paramsPath, "--out", outPath])
        #expect(decrypted.status == 0, "decrypt failed: \(decrypted.stderr)")
        #expect(try [UInt8](Data(contentsOf: URL(fileURLWithPath: outPath))) == file)
        let summary = try jsonObject(decrypted.stdout)
        #expect(summary["filename"] as? String == "cat photo.png" && summary["mimeType"] as? String == "image/png")
        #expect(summary["length"] as? Int == file.count)
    }

    @Test func failuresAndUsageErrors() throws {
        let executable = try SwitchboardExecutable.locate().path
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let inPath = dir.appendingPathComponent("a.txt").path, cipherPath = dir.appendingPathComponent("c.bin").path
        let outPath = dir.appendingPathComponent("out").path
        try Data("hello".utf8).write(to: URL(fileURLWithPath: inPath))
        let encrypted = try ChildProcess.run(executable, ["xmtp", "attachment", "encrypt", "--in", inPath, "--out", cipherPath])
        #expect(encrypted.status == 0, "encrypt failed: \(encrypted.stderr)")
        let params = encrypted.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: cipherPath)))

        var tampered = original
        tampered[3] ^= 1
        try Data(tampered).write(to: URL(fileURLWithPath: cipherPath))
        let mismatch = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath, "--params", params, "--out", outPath])
        #expect(mismatch.status == 1 && mismatch.stderr.contains("content digest mismatch"), "\(mismatch)")
        #expect(!FileManager.default.fileExists(atPath: outPath))

        // Digest recomputed to match the tampered bytes: the GCM tag catches it.
        var object = try jsonObject(params)
        object["contentDigest"] = SHA256.hexDigest(tampered)
        let forged = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let unauthenticated = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath, "--params", forged, "--out", outPath])
        #expect(unauthenticated.status == 1 && unauthenticated.stderr.contains("authentication failed"), "\(unauthenticated)")

        try Data(original.prefix(10)).write(to: URL(fileURLWithPath: cipherPath))
        object["contentDigest"] = SHA256.hexDigest(Array(original.prefix(10)))
        let shortParams = String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        let truncated = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath, "--params", shortParams, "--out", outPath])
        #expect(truncated.status == 1 && truncated.stderr.contains("truncated"), "\(truncated)")

        let badParams = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath, "--params", "{\"secret\":1}", "--out", outPath])
        #expect(badParams.status == 1 && badParams.stderr.contains("bad params"), "\(badParams)")

        let usage = try ChildProcess.run(executable, ["xmtp", "attachment", "decrypt", "--in", cipherPath])
        #expect(usage.status == 2, "\(usage)")
        let unknown = try ChildProcess.run(executable, ["xmtp", "attachment", "shred"])
        #expect(unknown.status == 2, "\(unknown)")
        #expect(!mismatch.stderr.contains(try #require(object["secret"] as? String)))
    }
}
