import SwitchboardCore

/// Everything a receiver needs to check and decrypt a remote attachment (libxmtp's `EncryptedAttachment` minus the payload).
public struct RemoteAttachmentSecrets: Sendable, Equatable, CustomStringConvertible {
    /// The 32-byte secret (HKDF input keying material); travels in the `secret` parameter as hex.
    public let secret: SymmetricKey
    /// The 32-byte HKDF salt.
    public let salt: [UInt8]
    /// The 12-byte AES-GCM nonce.
    public let nonce: [UInt8]
    /// Lowercase hex SHA-256 of the ciphertext (ciphertext ‖ tag), checked before decrypting.
    public let contentDigest: String
    /// The ciphertext length in bytes (ciphertext ‖ tag), as libxmtp reports it.
    public let contentLength: Int

    /// Parameters from raw values; lengths are validated (secret and salt 32 bytes, nonce 12).
    public init(secret: SymmetricKey, salt: [UInt8], nonce: [UInt8], contentDigest: String, contentLength: Int) throws(XMTPCryptoError) {
        guard secret.byteCount == RemoteAttachmentCrypto.secretSize else {
            throw .invalidKeyLength(expected: RemoteAttachmentCrypto.secretSize, actual: secret.byteCount)
        }
        guard salt.count == RemoteAttachmentCrypto.saltSize else {
            throw .invalidSaltLength(expected: RemoteAttachmentCrypto.saltSize, actual: salt.count)
        }
        guard nonce.count == AESGCM.nonceSize else { throw .invalidNonceLength(expected: AESGCM.nonceSize, actual: nonce.count) }
        self.secret = secret
        self.salt = salt
        self.nonce = nonce
        self.contentDigest = contentDigest.lowercased()
        self.contentLength = contentLength
    }

    /// Parameters from their hex forms, as carried in `remoteStaticAttachment:1.0` parameters.
    public init(secretHex: String, saltHex: String, nonceHex: String, contentDigest: String, contentLength: Int) throws(XMTPCryptoError) {
        var secretBytes = try XMTPHex.decode(secretHex, field: "secret")
        defer { SymmetricKey.wipe(&secretBytes) }
        try self.init(secret: SymmetricKey(bytes: secretBytes), salt: XMTPHex.decode(saltHex, field: "salt"),
                      nonce: XMTPHex.decode(nonceHex, field: "nonce"), contentDigest: contentDigest, contentLength: contentLength)
    }

    /// The secret as lowercase hex (deliberate export, for the message parameters).
    public var secretHex: String { var bytes = secret.exportBytes(); defer { SymmetricKey.wipe(&bytes) }; return Digest.hex(bytes) }
    /// The salt as lowercase hex.
    public var saltHex: String { Digest.hex(salt) }
    /// The nonce as lowercase hex.
    public var nonceHex: String { Digest.hex(nonce) }

    /// Shows the digest and length only; the secret is redacted.
    public var description: String {
        "RemoteAttachmentSecrets(contentDigest: \(contentDigest), contentLength: \(contentLength), secret: redacted)"
    }
}

/// Remote-attachment encryption as libxmtp does it (`xmtp_content_types::remote_attachment` / `encryption`):
/// key = HKDF-SHA256(salt, ikm = secret, info = empty, 32 bytes); AES-256-GCM, no AAD, ciphertext ‖ tag;
/// `contentDigest` = hex(sha256(ciphertext ‖ tag)).
public enum RemoteAttachmentCrypto {
    /// Secret size in bytes.
    public static let secretSize = 32
    /// HKDF salt size in bytes.
    public static let saltSize = 32

    /// Encrypts `plaintext` (the caller passes the `attachment:1.0` EncodedContent bytes) with a fresh secret, salt and nonce.
    public static func encrypt(plaintext: [UInt8]) throws(XMTPCryptoError) -> (ciphertext: [UInt8], params: RemoteAttachmentSecrets) {
        let secret = try SymmetricKey.random(byteCount: secretSize)
        let salt = try SecureRandom.bytes(saltSize)
        let nonce = try SecureRandom.bytes(AESGCM.nonceSize)
        return try encrypt(plaintext: plaintext, secret: secret, salt: salt, nonce: nonce)
    }

    /// Encrypts with caller-chosen values (for tests and known-answer checks; never reuse a secret/salt/nonce triple).
    public static func encrypt(plaintext: [UInt8], secret: SymmetricKey, salt: [UInt8], nonce: [UInt8]) throws(XMTPCryptoError) -> (ciphertext: [UInt8], params: RemoteAttachmentSecrets) {
        guard secret.byteCount == secretSize else { throw .invalidKeyLength(expected: secretSize, actual: secret.byteCount) }
        guard salt.count == saltSize else { throw .invalidSaltLength(expected: saltSize, actual: salt.count) }
        let key = try HKDF.deriveKey(secret: secret, salt: salt, info: [], length: AESGCM.keySize)
        let ciphertext = try AESGCM.seal(plaintext, key: key, nonce: nonce)
        let params = try RemoteAttachmentSecrets(secret: secret, salt: salt, nonce: nonce,
                                                 contentDigest: SHA256.hexDigest(ciphertext), contentLength: ciphertext.count)
        return (ciphertext, params)
    }

    /// Checks the digest first (`digestMismatch`), then derives the key and opens (`authenticationFailed`, `truncatedCiphertext`).
    public static func decrypt(ciphertext: [UInt8], params: RemoteAttachmentSecrets) throws(XMTPCryptoError) -> [UInt8] {
        let actual = SHA256.hexDigest(ciphertext)
        guard actual == params.contentDigest else { throw .digestMismatch(expected: params.contentDigest, actual: actual) }
        let key = try HKDF.deriveKey(secret: params.secret, salt: params.salt, info: [], length: AESGCM.keySize)
        return try AESGCM.open(ciphertext, key: key, nonce: params.nonce)
    }
}

/// Seals group envelope payloads with the per-group 32-byte secret: AES-256-GCM, a fresh random nonce per message, AAD = group id.
public struct GroupCipher: Sendable, CustomStringConvertible {
    private let key: SymmetricKey

    /// A cipher over the 32-byte group secret (used directly as the AES-256 key).
    public init(secret: [UInt8]) throws(XMTPCryptoError) {
        try self.init(key: SymmetricKey(bytes: secret))
    }

    /// A cipher over an existing 32-byte key.
    public init(key: SymmetricKey) throws(XMTPCryptoError) {
        guard key.byteCount == AESGCM.keySize else { throw .invalidKeyLength(expected: AESGCM.keySize, actual: key.byteCount) }
        self.key = key
    }

    /// Encrypts `plaintext` under a new random 12-byte nonce; the ciphertext carries the 16-byte tag at its end.
    public func seal(_ plaintext: [UInt8], aad: [UInt8]) throws(XMTPCryptoError) -> (nonce: [UInt8], ciphertext: [UInt8]) {
        let nonce = try SecureRandom.bytes(AESGCM.nonceSize)
        return (nonce, try AESGCM.seal(plaintext, key: key, nonce: nonce, aad: aad))
    }

    /// Verifies and decrypts; throws `authenticationFailed` when the bytes, nonce, AAD or key do not match.
    public func open(nonce: [UInt8], ciphertext: [UInt8], aad: [UInt8]) throws(XMTPCryptoError) -> [UInt8] {
        try AESGCM.open(ciphertext, key: key, nonce: nonce, aad: aad)
    }

    /// Redacted.
    public var description: String { "GroupCipher(key: redacted)" }
}

/// Hex decoding for parameters with a typed error (the decoding itself is `Hex.decode` in SwitchboardCore).
public enum XMTPHex {
    /// The bytes of an even-length hex string (either case); `field` names it in the `invalidHex` error.
    public static func decode(_ text: String, field: String = "hex") throws(XMTPCryptoError) -> [UInt8] {
        guard let bytes = Hex.decode(text) else { throw .invalidHex(field: field) }
        return bytes
    }
}
