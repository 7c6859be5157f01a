import COpenSSL
import SwitchboardCore

/// Cryptographically secure random bytes from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// `count` random bytes from `RAND_bytes`; throws `randomUnavailable` if the generator fails.
    public static func bytes(_ count: Int) throws(XMTPCryptoError) -> [UInt8] {
        guard count >= 0, count <= Int(Int32.max) else { throw .invalidLength("random byte count \(count)") }
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        let status = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        guard status == 1 else { throw .randomUnavailable }
        return bytes
    }
}

/// SHA-256 through OpenSSL's EVP digest (fast on large attachments).
public enum SHA256 {
    /// The 32-byte SHA-256 digest of `data`.
    public static func hash(_ data: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let status = data.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
            }
        }
        // EVP_Digest with a built-in digest cannot fail short of memory exhaustion; fall back to the pure-Swift one.
        guard status == 1, length == 32 else { return Digest.sha256(data) }
        return Array(digest.prefix(32))
    }

    /// The lowercase hex SHA-256 digest of `data`.
    public static func hexDigest(_ data: [UInt8]) -> String { Digest.hex(hash(data)) }
}

/// HKDF with SHA-256 (RFC 5869) through OpenSSL's `EVP_KDF` "HKDF".
public enum HKDF {
    /// `length` bytes of output keying material from `ikm`, `salt` (may be empty) and `info` (may be empty).
    public static func sha256(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) throws(XMTPCryptoError) -> [UInt8] {
        guard length > 0, length <= 255 * 32 else { throw .invalidLength("HKDF-SHA256 output of \(length) bytes (1...8160)") }
        var output = [UInt8](repeating: 0, count: length)
        let status = salt.withUnsafeBufferPointer { salt in
            ikm.withUnsafeBufferPointer { ikm in
                info.withUnsafeBufferPointer { info in
                    output.withUnsafeMutableBufferPointer { out in
                        copenssl_hkdf_sha256(salt.baseAddress, salt.count, ikm.baseAddress, ikm.count,
                                             info.baseAddress, info.count, out.baseAddress, out.count)
                    }
                }
            }
        }
        guard status == 1 else {
            SymmetricKey.wipe(&output)
            throw .openSSL("HKDF-SHA256 derivation")
        }
        return output
    }

    /// A `length`-byte key derived from the secret `ikm` with `salt` and `info`; intermediate copies are wiped.
    public static func deriveKey(secret ikm: SymmetricKey, salt: [UInt8], info: [UInt8] = [], length: Int = 32) throws(XMTPCryptoError) -> SymmetricKey {
        var ikmBytes = ikm.exportBytes()
        defer { SymmetricKey.wipe(&ikmBytes) }
        var okm = try sha256(salt: salt, ikm: ikmBytes, info: info, length: length)
        defer { SymmetricKey.wipe(&okm) }
        return SymmetricKey(bytes: okm)
    }
}

/// AES-256-GCM through OpenSSL's EVP interface: 12-byte nonce, 16-byte tag appended to the ciphertext, optional AAD.
public enum AESGCM {
    /// AES-256 key size in bytes.
    public static let keySize = 32
    /// Nonce (IV) size in bytes.
    public static let nonceSize = 12
    /// Authentication tag size in bytes.
    public static let tagSize = 16

    /// Encrypts `plaintext` and returns ciphertext ‖ tag.
    public static func seal(_ plaintext: [UInt8], key: SymmetricKey, nonce: [UInt8], aad: [UInt8] = []) throws(XMTPCryptoError) -> [UInt8] {
        try check(key: key, nonce: nonce)
        var output = [UInt8](repeating: 0, count: plaintext.count + tagSize)
        guard plaintext.count <= Int(Int32.max) - tagSize, aad.count <= Int(Int32.max) else { throw .invalidLength("AES-GCM input over 2 GiB") }
        let result = withContext { ctx -> StepResult in
            key.withUnsafeBytes { keyBytes in
                nonce.withUnsafeBufferPointer { iv in
                    aad.withUnsafeBufferPointer { aad in
                        plaintext.withUnsafeBufferPointer { input in
                            output.withUnsafeMutableBufferPointer { out in
                                let keyPointer = keyBytes.bindMemory(to: UInt8.self).baseAddress
                                guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1 else { return .failure("EncryptInit") }
                                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceSize), nil) == 1 else { return .failure("set IV length") }
                                guard EVP_EncryptInit_ex(ctx, nil, nil, keyPointer, iv.baseAddress) == 1 else { return .failure("set key and IV") }
                                var written: Int32 = 0
                                if aad.count > 0 {
                                    guard EVP_EncryptUpdate(ctx, nil, &written, aad.baseAddress, Int32(aad.count)) == 1 else { return .failure("AAD") }
                                }
                                var offset = 0
                                if input.count > 0 {
                                    guard EVP_EncryptUpdate(ctx, out.baseAddress, &written, input.baseAddress, Int32(input.count)) == 1 else { return .failure("EncryptUpdate") }
                                    offset = Int(written)
                                }
                                guard EVP_EncryptFinal_ex(ctx, out.baseAddress! + offset, &written) == 1 else { return .failure("EncryptFinal") }
                                offset += Int(written)
                                guard offset == input.count else { return .failure("unexpected output length") }
                                guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, Int32(tagSize), out.baseAddress! + offset) == 1 else { return .failure("get tag") }
                                return .ok
                            }
                        }
                    }
                }
            }
        }
        guard case let .failure(step) = result else { return output }
        SymmetricKey.wipe(&output)
        throw .openSSL("AES-256-GCM seal: \(step)")
    }

    /// Verifies the tag at the end of `sealed` and returns the plaintext; throws `truncatedCiphertext` or `authenticationFailed`.
    public static func open(_ sealed: [UInt8], key: SymmetricKey, nonce: [UInt8], aad: [UInt8] = []) throws(XMTPCryptoError) -> [UInt8] {
        try check(key: key, nonce: nonce)
        guard sealed.count >= tagSize else { throw .truncatedCiphertext(length: sealed.count) }
        guard sealed.count <= Int(Int32.max), aad.count <= Int(Int32.max) else { throw .invalidLength("AES-GCM input over 2 GiB") }
        let bodyCount = sealed.count - tagSize
        var output = [UInt8](repeating: 0, count: max(bodyCount, 1))
        var tag = Array(sealed[bodyCount...])
        let result = withContext { ctx -> StepResult in
            key.withUnsafeBytes { keyBytes in
                nonce.withUnsafeBufferPointer { iv in
                    aad.withUnsafeBufferPointer { aad in
                        sealed.withUnsafeBufferPointer { input in
                            tag.withUnsafeMutableBufferPointer { tag in
                                output.withUnsafeMutableBufferPointer { out in
                                    let keyPointer = keyBytes.bindMemory(to: UInt8.self).baseAddress
                                    guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil) == 1 else { return .failure("DecryptInit") }
                                    guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceSize), nil) == 1 else { return .failure("set IV length") }
                                    guard EVP_DecryptInit_ex(ctx, nil, nil, keyPointer, iv.baseAddress) == 1 else { return .failure("set key and IV") }
                                    var written: Int32 = 0
                                    if aad.count > 0 {
                                        guard EVP_DecryptUpdate(ctx, nil, &written, aad.baseAddress, Int32(aad.count)) == 1 else { return .failure("AAD") }
                                    }
                                    var offset = 0
                                    if bodyCount > 0 {
                                        guard EVP_DecryptUpdate(ctx, out.baseAddress, &written, input.baseAddress, Int32(bodyCount)) == 1 else { return .failure("DecryptUpdate") }
                                        offset = Int(written)
                                    }
                                    guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, Int32(tagSize), tag.baseAddress) == 1 else { return .failure("set tag") }
                                    guard EVP_DecryptFinal_ex(ctx, out.baseAddress! + offset, &written) == 1 else { return .unauthenticated }
                                    return .ok
                                }
                            }
                        }
                    }
                }
            }
        }
        switch result {
        case .ok:
            if bodyCount == 0 { return [] }
            return output
        case .unauthenticated:
            SymmetricKey.wipe(&output)
            throw .authenticationFailed
        case let .failure(step):
            SymmetricKey.wipe(&output)
            throw .openSSL("AES-256-GCM open: \(step)")
        }
    }

    /// The outcome of a sequence of EVP calls.
    private enum StepResult { case ok, unauthenticated, failure(String) }

    /// Validates sizes before touching OpenSSL.
    private static func check(key: SymmetricKey, nonce: [UInt8]) throws(XMTPCryptoError) {
        guard key.byteCount == keySize else { throw .invalidKeyLength(expected: keySize, actual: key.byteCount) }
        guard nonce.count == nonceSize else { throw .invalidNonceLength(expected: nonceSize, actual: nonce.count) }
        guard nonce.count <= Int(Int32.max) else { throw .invalidLength("nonce") }
    }

    /// Runs `body` with a fresh cipher context, freed (and cleansed by OpenSSL) afterwards.
    private static func withContext(_ body: (OpaquePointer) -> StepResult) -> StepResult {
        guard let ctx = EVP_CIPHER_CTX_new() else { return .failure("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        return body(ctx)
    }
}
