import SwitchboardCore

/// HMAC (RFC 2104) built on SwitchboardCore's pure-Swift SHA-256.
public enum HMAC {
    /// The SHA-256 block size in bytes.
    private static let blockSize = 64

    /// The HMAC-SHA-256 of `message` under `key` (32 bytes).
    public static func sha256(key: some Collection<UInt8>, message: some Collection<UInt8>) -> [UInt8] {
        var keyBlock = Array(key)
        if keyBlock.count > blockSize { keyBlock = Digest.sha256(keyBlock) }
        keyBlock += [UInt8](repeating: 0, count: blockSize - keyBlock.count)
        var inner = SHA256Hasher()
        inner.update(keyBlock.map { $0 ^ 0x36 })
        inner.update(Array(message))
        let innerDigest = inner.finalize()
        var outer = SHA256Hasher()
        outer.update(keyBlock.map { $0 ^ 0x5C })
        outer.update(innerDigest)
        return outer.finalize()
    }

    /// Compares two byte strings in time independent of where they differ (length is not secret).
    public static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in 0..<lhs.count { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }
}
