/// Why a crypto operation of the XMTP-like adapter failed; descriptions never contain key material.
public enum XMTPCryptoError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The system CSPRNG (`RAND_bytes`) could not produce bytes.
    case randomUnavailable
    /// A key had the wrong length (AES-256 keys are 32 bytes).
    case invalidKeyLength(expected: Int, actual: Int)
    /// A nonce had the wrong length (AES-GCM nonces here are 12 bytes).
    case invalidNonceLength(expected: Int, actual: Int)
    /// An HKDF salt had the wrong length (remote attachments use 32 bytes).
    case invalidSaltLength(expected: Int, actual: Int)
    /// The sealed bytes are shorter than the 16-byte tag, so they cannot be a GCM ciphertext.
    case truncatedCiphertext(length: Int)
    /// The GCM tag did not verify: the ciphertext, tag, nonce or AAD was altered, or the key is wrong.
    case authenticationFailed
    /// The SHA-256 of the downloaded ciphertext differs from the `contentDigest` parameter (checked before decrypting).
    case digestMismatch(expected: String, actual: String)
    /// A parameter was not valid lowercase/uppercase hex.
    case invalidHex(field: String)
    /// An OpenSSL call failed for a reason other than authentication (named by the failing step).
    case openSSL(String)
    /// A requested output length is out of range (e.g. HKDF-SHA256 yields at most 8160 bytes).
    case invalidLength(String)

    /// A readable explanation, without secrets.
    public var description: String {
        switch self {
        case .randomUnavailable: "the system random generator (RAND_bytes) failed"
        case let .invalidKeyLength(expected, actual): "invalid key length: expected \(expected) bytes, got \(actual)"
        case let .invalidNonceLength(expected, actual): "invalid nonce length: expected \(expected) bytes, got \(actual)"
        case let .invalidSaltLength(expected, actual): "invalid salt length: expected \(expected) bytes, got \(actual)"
        case let .truncatedCiphertext(length):
            "truncated ciphertext: \(length) bytes is shorter than the \(AESGCM.tagSize)-byte authentication tag"
        case .authenticationFailed:
            "authentication failed: the ciphertext was tampered with or truncated, or the key, nonce or AAD is wrong"
        case let .digestMismatch(expected, actual): "content digest mismatch: expected \(expected), got \(actual)"
        case let .invalidHex(field): "invalid hex in \(field)"
        case let .openSSL(step): "OpenSSL failure: \(step)"
        case let .invalidLength(what): "invalid length: \(what)"
        }
    }
}
