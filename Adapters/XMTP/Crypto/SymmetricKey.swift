import COpenSSL

/// Heap storage for secret bytes that is wiped with `OPENSSL_cleanse` when the last reference goes away.
final class SecretStorage: @unchecked Sendable {
    // Safety: written only in `init` and wiped only in `deinit`; read-only in between.
    private let buffer: UnsafeMutableRawBufferPointer

    /// Copies `bytes` into fresh storage.
    init(copying bytes: some Collection<UInt8>) {
        buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        _ = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<bytes.count]).initializeMemory(as: UInt8.self, from: bytes)
        count = bytes.count
    }

    /// The number of secret bytes.
    let count: Int

    /// Calls `body` with the secret bytes (do not let the pointer escape).
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
    }

    deinit {
        OPENSSL_cleanse(buffer.baseAddress, buffer.count)
        buffer.deallocate()
    }
}

/// A secret symmetric key or seed; its bytes are wiped on release and never appear in `description`.
public struct SymmetricKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    private let storage: SecretStorage

    /// A key holding a copy of `bytes` (the caller should wipe its own copy where practical).
    public init(bytes: some Collection<UInt8>) { storage = SecretStorage(copying: bytes) }

    /// A fresh random key of `byteCount` bytes from the CSPRNG.
    public static func random(byteCount: Int = 32) throws(XMTPCryptoError) -> SymmetricKey {
        var bytes = try SecureRandom.bytes(byteCount)
        defer { SymmetricKey.wipe(&bytes) }
        return SymmetricKey(bytes: bytes)
    }

    /// The key length in bytes.
    public var byteCount: Int { storage.count }

    /// Calls `body` with the key bytes without copying them (do not let the pointer escape).
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try storage.withUnsafeBytes(body)
    }

    /// A copy of the key bytes, for deliberately exporting the secret (e.g. into remote-attachment parameters).
    public func exportBytes() -> [UInt8] { withUnsafeBytes { Array($0) } }

    /// Redacted: shows only the length.
    public var description: String { "SymmetricKey(\(byteCount) bytes, redacted)" }

    /// Redacted: shows only the length.
    public var debugDescription: String { description }
}

extension SymmetricKey: Equatable {
    /// Constant-time comparison of two keys (`CRYPTO_memcmp`).
    public static func == (lhs: SymmetricKey, rhs: SymmetricKey) -> Bool {
        guard lhs.byteCount == rhs.byteCount else { return false }
        return lhs.withUnsafeBytes { a in
            rhs.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }
}

extension SymmetricKey {
    /// Overwrites `bytes` with zeros through `OPENSSL_cleanse` (which the optimiser cannot drop).
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }
}
