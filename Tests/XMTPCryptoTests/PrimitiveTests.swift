import Testing
import SwitchboardCore
@testable import XMTPCrypto

/// Hex helper for the tests.
func hx(_ text: String) -> [UInt8] { try! XMTPHex.decode(text) }

/// AES-256-GCM known answers (McGrew & Viega GCM spec test cases 13–16, as in NIST SP 800-38D's examples).
@Suite struct AESGCMTests {
    /// One known-answer vector.
    struct Vector: Sendable, CustomTestStringConvertible {
        let name, key, iv, aad, plaintext, sealed: String
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(name: "TC13 empty", key: String(repeating: "00", count: 32), iv: String(repeating: "00", count: 12), aad: "",
               plaintext: "", sealed: "530f8afbc74536b9a963b4f1c4cb738b"),
        Vector(name: "TC14 one zero block", key: String(repeating: "00", count: 32), iv: String(repeating: "00", count: 12), aad: "",
               plaintext: "00000000000000000000000000000000",
               sealed: "cea7403d4d606b6e074ec5d3baf39d18d0d1c8a799996bf0265b98b5d48ab919"),
        Vector(name: "TC15 four blocks", key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
               iv: "cafebabefacedbaddecaf888", aad: "",
               plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
               sealed: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015adb094dac5d93471bdec1a502270e3cc6c"),
        Vector(name: "TC16 with AAD", key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
               iv: "cafebabefacedbaddecaf888", aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
               plaintext: "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
               sealed: "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f66276fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    @Test(arguments: vectors)
    func knownAnswers(_ v: Vector) throws {
        let key = SymmetricKey(bytes: hx(v.key))
        let sealed = try AESGCM.seal(hx(v.plaintext), key: key, nonce: hx(v.iv), aad: hx(v.aad))
        #expect(Digest.hex(sealed) == v.sealed)
        #expect(try AESGCM.open(hx(v.sealed), key: key, nonce: hx(v.iv), aad: hx(v.aad)) == hx(v.plaintext))
    }

    @Test func tamperingAnyByteFails() throws {
        let v = Self.vectors[3]
        let key = SymmetricKey(bytes: hx(v.key))
        let sealed = hx(v.sealed)
        for index in [0, 30, sealed.count - 17, sealed.count - 16, sealed.count - 1] {
            var bad = sealed
            bad[index] ^= 0x01
            #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(bad, key: key, nonce: hx(v.iv), aad: hx(v.aad)) }
        }
        #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(sealed, key: key, nonce: hx(v.iv), aad: []) }
        var nonce = hx(v.iv)
        nonce[0] ^= 0x80
        #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(sealed, key: key, nonce: nonce, aad: hx(v.aad)) }
    }

    @Test func truncationFails() throws {
        let v = Self.vectors[2]
        let key = SymmetricKey(bytes: hx(v.key))
        let sealed = hx(v.sealed)
        #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(Array(sealed.dropLast()), key: key, nonce: hx(v.iv)) }
        #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(Array(sealed.dropFirst()), key: key, nonce: hx(v.iv)) }
        #expect(throws: XMTPCryptoError.truncatedCiphertext(length: 15)) { try AESGCM.open(Array(sealed.prefix(15)), key: key, nonce: hx(v.iv)) }
        #expect(throws: XMTPCryptoError.truncatedCiphertext(length: 0)) { try AESGCM.open([], key: key, nonce: hx(v.iv)) }
    }

    @Test func wrongKeyAndBadSizes() throws {
        let v = Self.vectors[2]
        let wrong = try SymmetricKey.random()
        #expect(throws: XMTPCryptoError.authenticationFailed) { try AESGCM.open(hx(v.sealed), key: wrong, nonce: hx(v.iv)) }
        #expect(throws: XMTPCryptoError.invalidKeyLength(expected: 32, actual: 16)) {
            try AESGCM.seal([1], key: SymmetricKey(bytes: [UInt8](repeating: 0, count: 16)), nonce: hx(v.iv))
        }
        #expect(throws: XMTPCryptoError.invalidNonceLength(expected: 12, actual: 16)) {
            try AESGCM.seal([1], key: wrong, nonce: [UInt8](repeating: 0, count: 16))
        }
    }

    @Test func largeRoundTrip() throws {
        let key = try SymmetricKey.random()
        let nonce = try SecureRandom.bytes(12)
        let plaintext = try SecureRandom.bytes(1_000_003)
        let sealed = try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: [9, 9])
        #expect(sealed.count == plaintext.count + 16)
        #expect(try AESGCM.open(sealed, key: key, nonce: nonce, aad: [9, 9]) == plaintext)
    }
}

/// HKDF-SHA256, SHA-256, random bytes and key hygiene.
@Suite struct PrimitiveTests {
    @Test func hkdfRFC5869TestCase1() throws {
        let okm = try HKDF.sha256(salt: hx("000102030405060708090a0b0c"), ikm: [UInt8](repeating: 0x0b, count: 22),
                                  info: hx("f0f1f2f3f4f5f6f7f8f9"), length: 42)
        #expect(Digest.hex(okm) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
    }

    @Test func hkdfRFC5869TestCase3EmptySaltAndInfo() throws {
        let okm = try HKDF.sha256(salt: [], ikm: [UInt8](repeating: 0x0b, count: 22), info: [], length: 42)
        #expect(Digest.hex(okm) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func hkdfRejectsBadLengths() {
        #expect(throws: XMTPCryptoError.self) { try HKDF.sha256(salt: [], ikm: [1], info: [], length: 0) }
        #expect(throws: XMTPCryptoError.self) { try HKDF.sha256(salt: [], ikm: [1], info: [], length: 8161) }
    }

    @Test func sha256MatchesCore() {
        #expect(SHA256.hexDigest(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexDigest([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let data = [UInt8](repeating: 0x61, count: 1000)
        #expect(SHA256.hash(data) == Digest.sha256(data))
    }

    @Test func randomBytesDiffer() throws {
        let a = try SecureRandom.bytes(32), b = try SecureRandom.bytes(32)
        #expect(a.count == 32 && a != b)
        #expect(try SecureRandom.bytes(0).isEmpty)
    }

    @Test func keysDoNotRevealThemselves() throws {
        let key = SymmetricKey(bytes: [UInt8](repeating: 0xAB, count: 32))
        #expect(!key.description.lowercased().contains("abab"))
        #expect(!String(reflecting: key).lowercased().contains("abab"))
        #expect(!"\(key)".contains("171"))
        let params = try RemoteAttachmentSecrets(secret: key, salt: [UInt8](repeating: 1, count: 32), nonce: [UInt8](repeating: 2, count: 12),
                                                 contentDigest: String(repeating: "0", count: 64), contentLength: 1)
        #expect(!params.description.lowercased().contains("abab"))
        #expect(!String(describing: try GroupCipher(key: key)).lowercased().contains("abab"))
        #expect(key == SymmetricKey(bytes: [UInt8](repeating: 0xAB, count: 32)))
        #expect(key != SymmetricKey(bytes: [UInt8](repeating: 0xAC, count: 32)))
    }

    @Test func wipeZeroes() {
        var bytes: [UInt8] = [1, 2, 3]
        SymmetricKey.wipe(&bytes)
        #expect(bytes == [0, 0, 0])
    }

    @Test func hexDecoding() throws {
        #expect(try XMTPHex.decode("00ffA0") == [0, 255, 160])
        #expect(throws: XMTPCryptoError.invalidHex(field: "salt")) { try XMTPHex.decode("abc", field: "salt") }
        #expect(throws: XMTPCryptoError.invalidHex(field: "hex")) { try XMTPHex.decode("zz") }
    }
}

/// The per-group payload cipher.
@Suite struct GroupCipherTests {
    @Test func sealOpenWithGroupIDAsAAD() throws {
        let cipher = try GroupCipher(secret: SecureRandom.bytes(32))
        let groupID = try SecureRandom.bytes(16)
        let plaintext = Array("payload".utf8)
        let (nonce, ciphertext) = try cipher.seal(plaintext, aad: groupID)
        #expect(nonce.count == 12 && ciphertext.count == plaintext.count + 16)
        #expect(try cipher.open(nonce: nonce, ciphertext: ciphertext, aad: groupID) == plaintext)
        let again = try cipher.seal(plaintext, aad: groupID)
        #expect(again.nonce != nonce && again.ciphertext != ciphertext)
        var otherGroup = groupID
        otherGroup[15] ^= 1
        #expect(throws: XMTPCryptoError.authenticationFailed) { try cipher.open(nonce: nonce, ciphertext: ciphertext, aad: otherGroup) }
        var tampered = ciphertext
        tampered[0] ^= 1
        #expect(throws: XMTPCryptoError.authenticationFailed) { try cipher.open(nonce: nonce, ciphertext: tampered, aad: groupID) }
        let stranger = try GroupCipher(secret: SecureRandom.bytes(32))
        #expect(throws: XMTPCryptoError.authenticationFailed) { try stranger.open(nonce: nonce, ciphertext: ciphertext, aad: groupID) }
    }

    @Test func rejectsShortSecret() {
        #expect(throws: XMTPCryptoError.invalidKeyLength(expected: 32, actual: 16)) { try GroupCipher(secret: [UInt8](repeating: 0, count: 16)) }
    }

    @Test func knownAnswerEqualsPlainAESGCM() throws {
        // GroupCipher uses the secret directly as the AES-256 key: check against TC16 through open.
        let cipher = try GroupCipher(secret: hx("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"))
        let plaintext = try cipher.open(nonce: hx("cafebabefacedbaddecaf888"),
                                        ciphertext: hx(AESGCMTests.vectors[3].sealed), aad: hx("feedfacedeadbeeffeedfacedeadbeefabaddad2"))
        #expect(Digest.hex(plaintext) == AESGCMTests.vectors[3].plaintext)
    }
}
