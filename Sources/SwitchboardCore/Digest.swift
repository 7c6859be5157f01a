import Foundation

/// SHA-256 and SHA-1 in pure Swift, so the core needs no crypto library.
public enum Digest {
    /// The SHA-256 digest of `data`.
    public static func sha256(_ data: some Collection<UInt8>) -> [UInt8] {
        var hasher = SHA256Hasher()
        if data.withContiguousStorageIfAvailable({ hasher.update(UnsafeRawBufferPointer($0)) }) == nil {
            hasher.update(Array(data))
        }
        return hasher.finalize()
    }

    /// The lowercase hex SHA-256 digest of `data`.
    public static func sha256Hex(_ data: some Collection<UInt8>) -> String { hex(sha256(data)) }

    /// The SHA-1 digest of `data` (used only for UUIDv5, as RFC 9562 requires).
    public static func sha1(_ data: some Collection<UInt8>) -> [UInt8] {
        // Padded to whole 64-byte blocks: 0x80, zeros, the bit length big-endian in the last 8 bytes.
        let length = data.count
        let blocks = (length + 8) / 64 + 1
        var message = [UInt8](repeating: 0, count: blocks * 64)
        message.withUnsafeMutableBufferPointer { buffer in
            _ = buffer.initialize(fromContentsOf: data)
            buffer[length] = 0x80
            let bitLength = UInt64(length) * 8
            for index in 0..<8 { buffer[buffer.count - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> (8 * index)) }
        }
        var (h0, h1, h2, h3, h4): (UInt32, UInt32, UInt32, UInt32, UInt32) =
            (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            message.withUnsafeBufferPointer { bytes in
                for chunk in stride(from: 0, to: bytes.count, by: 64) {
                    for i in 0..<16 {
                        let j = chunk + i * 4
                        w[i] = UInt32(bytes[j]) << 24 | UInt32(bytes[j + 1]) << 16 | UInt32(bytes[j + 2]) << 8
                            | UInt32(bytes[j + 3])
                    }
                    for i in 16..<80 { w[i] = (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]).rotatedLeft(1) }
                    var (a, b, c, d, e) = (h0, h1, h2, h3, h4)
                    for i in 0..<80 {
                        let f: UInt32, k: UInt32
                        if i < 20 {
                            (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                        } else if i < 40 {
                            (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                        } else if i < 60 {
                            (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                        } else {
                            (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                        }
                        let temp = a.rotatedLeft(5) &+ f &+ e &+ k &+ w[i]
                        (e, d, c, b, a) = (d, c, b.rotatedLeft(30), a, temp)
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d; h4 &+= e
                }
            }
        }
        var digest = [UInt8]()
        digest.reserveCapacity(20)
        for word in [h0, h1, h2, h3, h4] {
            digest.append(UInt8(truncatingIfNeeded: word >> 24))
            digest.append(UInt8(truncatingIfNeeded: word >> 16))
            digest.append(UInt8(truncatingIfNeeded: word >> 8))
            digest.append(UInt8(truncatingIfNeeded: word))
        }
        return digest
    }

    /// Lowercase hex of `bytes`.
    public static func hex(_ bytes: some Collection<UInt8>) -> String {
        // Contiguous bytes (arrays, data, digests) are read through a buffer pointer, not the generic collection.
        if let text = bytes.withContiguousStorageIfAvailable({ hex(buffer: $0) }) { return text }
        return Array(bytes).withUnsafeBufferPointer { hex(buffer: $0) }
    }

    /// Lowercase hex of the bytes of `buffer`.
    private static func hex(buffer: UnsafeBufferPointer<UInt8>) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: buffer.count * 2) { text in
            var out = 0
            for byte in buffer {
                text[out] = digits.utf8Start[Int(byte >> 4)]
                text[out + 1] = digits.utf8Start[Int(byte & 0x0F)]
                out += 2
            }
            return out
        }
    }
}

/// An incremental SHA-256 hasher (FIPS 180-4), for streaming large attachments.
public struct SHA256Hasher: Sendable {
    private var h0: UInt32 = 0x6A09_E667, h1: UInt32 = 0xBB67_AE85, h2: UInt32 = 0x3C6E_F372, h3: UInt32 = 0xA54F_F53A
    private var h4: UInt32 = 0x510E_527F, h5: UInt32 = 0x9B05_688C, h6: UInt32 = 0x1F83_D9AB, h7: UInt32 = 0x5BE0_CD19
    /// Bytes of an unfinished block (fewer than 64).
    private var buffer: [UInt8] = []
    private var totalBytes: UInt64 = 0

    private static let k: [UInt32] = [
        0x428A_2F98, 0x7137_4491, 0xB5C0_FBCF, 0xE9B5_DBA5, 0x3956_C25B, 0x59F1_11F1, 0x923F_82A4, 0xAB1C_5ED5,
        0xD807_AA98, 0x1283_5B01, 0x2431_85BE, 0x550C_7DC3, 0x72BE_5D74, 0x80DE_B1FE, 0x9BDC_06A7, 0xC19B_F174,
        0xE49B_69C1, 0xEFBE_4786, 0x0FC1_9DC6, 0x240C_A1CC, 0x2DE9_2C6F, 0x4A74_84AA, 0x5CB0_A9DC, 0x76F9_88DA,
        0x983E_5152, 0xA831_C66D, 0xB003_27C8, 0xBF59_7FC7, 0xC6E0_0BF3, 0xD5A7_9147, 0x06CA_6351, 0x1429_2967,
        0x27B7_0A85, 0x2E1B_2138, 0x4D2C_6DFC, 0x5338_0D13, 0x650A_7354, 0x766A_0ABB, 0x81C2_C92E, 0x9272_2C85,
        0xA2BF_E8A1, 0xA81A_664B, 0xC24B_8B70, 0xC76C_51A3, 0xD192_E819, 0xD699_0624, 0xF40E_3585, 0x106A_A070,
        0x19A4_C116, 0x1E37_6C08, 0x2748_774C, 0x34B0_BCB5, 0x391C_0CB3, 0x4ED8_AA4A, 0x5B9C_CA4F, 0x682E_6FF3,
        0x748F_82EE, 0x78A5_636F, 0x84C8_7814, 0x8CC7_0208, 0x90BE_FFFA, 0xA450_6CEB, 0xBEF9_A3F7, 0xC671_78F2,
    ]

    /// A hasher with the initial state.
    public init() {}

    /// Feeds more bytes.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Feeds the bytes of `data`.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Feeds the bytes in `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        totalBytes += UInt64(bytes.count)
        var index = 0
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, bytes.count)
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[0..<take]))
            index = take
            guard buffer.count == 64 else { return }
            buffer.withUnsafeBytes { compress($0.baseAddress!, blocks: 1) }
            buffer.removeAll(keepingCapacity: true)
        }
        let whole = (bytes.count - index) / 64
        if whole > 0 {
            compress(base + index, blocks: whole)
            index += whole * 64
        }
        if index < bytes.count { buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index...])) }
    }

    /// Finishes and returns the 32-byte digest.
    public mutating func finalize() -> [UInt8] {
        let bitLength = totalBytes &* 8
        // The unfinished block, 0x80, zeros, the bit length big-endian: one or two blocks.
        let blocks = buffer.count < 56 ? 1 : 2
        withUnsafeTemporaryAllocation(byteCount: 128, alignment: 8) { tail in
            tail.initializeMemory(as: UInt8.self, repeating: 0)
            buffer.withUnsafeBytes { tail.copyMemory(from: $0) }
            tail[buffer.count] = 0x80
            let end = blocks * 64
            for index in 0..<8 { tail[end - 1 - index] = UInt8(truncatingIfNeeded: bitLength >> UInt64(8 * index)) }
            compress(UnsafeRawPointer(tail.baseAddress!), blocks: blocks)
        }
        buffer.removeAll()
        let words = [h0, h1, h2, h3, h4, h5, h6, h7]
        return [UInt8](unsafeUninitializedCapacity: 32) { digest, count in
            for (index, word) in words.enumerated() {
                digest[index * 4] = UInt8(truncatingIfNeeded: word >> 24)
                digest[index * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
                digest[index * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
                digest[index * 4 + 3] = UInt8(truncatingIfNeeded: word)
            }
            count = 32
        }
    }

    /// Runs the compression function over `blocks` 64-byte blocks at `input`.
    private mutating func compress(_ input: UnsafeRawPointer, blocks: Int) {
        Self.k.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                for block in 0..<blocks {
                    let bytes = input + block * 64
                    for i in 0..<16 {
                        w[i] = UInt32(bigEndian: bytes.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self))
                    }
                    for i in 16..<64 {
                        let x = w[i - 15], y = w[i - 2]
                        let s0 = x.rotatedRight(7) ^ x.rotatedRight(18) ^ (x >> 3)
                        let s1 = y.rotatedRight(17) ^ y.rotatedRight(19) ^ (y >> 10)
                        w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
                    }
                    var (a, b, c, d, e, f, g, h) = (h0, h1, h2, h3, h4, h5, h6, h7)
                    for i in 0..<64 {
                        let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
                        let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ s0 &+ maj)
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                    h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
            }
        }
    }
}

/// Name-based UUIDs (RFC 9562 version 5, SHA-1).
public enum UUIDv5 {
    /// The namespace Switchboard derives foreign message IDs in.
    public static let switchboardNamespace = UUID(uuidString: "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11")!

    /// The lowercase UUIDv5 text of `name` in `namespace`.
    public static func make(namespace: UUID, name: String) -> String {
        let ns = namespace.uuid
        var input: [UInt8] = [ns.0, ns.1, ns.2, ns.3, ns.4, ns.5, ns.6, ns.7,
                              ns.8, ns.9, ns.10, ns.11, ns.12, ns.13, ns.14, ns.15]
        input.append(contentsOf: name.utf8)
        var bytes = Digest.sha1(input)
        bytes[6] = (bytes[6] & 0x0F) | 0x50
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        // 8-4-4-4-12 lowercase hex of the first 16 bytes.
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 36) { text in
            var out = 0
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[out] = UInt8(ascii: "-")
                    out += 1
                }
                text[out] = digits.utf8Start[Int(bytes[index] >> 4)]
                text[out + 1] = digits.utf8Start[Int(bytes[index] & 0x0F)]
                out += 2
            }
            return out
        }
    }
}

extension UInt32 {
    fileprivate func rotatedLeft(_ n: UInt32) -> UInt32 { (self << n) | (self >> (32 - n)) }
    fileprivate func rotatedRight(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}

/// Hex text to bytes (either case accepted); `Digest.hex` goes the other way.
public enum Hex {
    /// The bytes of an even-length hex string, or nil when it has an odd length or a non-hex character.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// The value of one hex digit (either case), or nil.
    @inline(__always)
    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
