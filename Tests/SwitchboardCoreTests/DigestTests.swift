import Foundation
import SwitchboardCore
import TestSupport
import Testing

/// An input and its expected lowercase hex digest.
struct HashVector: Sendable, CustomTestStringConvertible {
    let label: String
    let input: [UInt8]
    let hex: String

    init(_ label: String, _ input: [UInt8], _ hex: String) {
        self.label = label
        self.input = input
        self.hex = hex
    }

    init(_ text: String, _ hex: String) {
        self.init(text.count > 24 ? String(text.prefix(21)) + "..." : "\"\(text)\"", Array(text.utf8), hex)
    }

    var testDescription: String { label }
}

private let abc448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
private let millionA = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
/// 0, 1, ... 255 four times (1024 bytes).
private let ramp = (0..<1024).map { UInt8(truncatingIfNeeded: $0) }

@Suite("Digest")
struct DigestTests {
    // MARK: SHA-256

    @Test("SHA-256 matches the FIPS 180-4 vectors", arguments: [
        HashVector("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        HashVector("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        HashVector(abc448, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
        HashVector("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
                   "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"),
        HashVector("one million \"a\"", millionA, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
        HashVector("0...255 x4", ramp, "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9"),
    ])
    func sha256Vectors(_ vector: HashVector) {
        let digest = Digest.sha256(vector.input)
        #expect(digest.count == 32)
        #expect(Digest.hex(digest) == vector.hex)
        #expect(Digest.sha256Hex(vector.input) == vector.hex)
    }

    /// Lengths around the padding boundaries (55 fits the length in one block, 56 needs a second).
    @Test("SHA-256 pads correctly at block boundaries", arguments: [
        (55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"),
        (56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"),
        (63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"),
        (64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"),
        (65, "9537c5fdf120482f7d58d25e9ed583f52c02b4e304ea814db1633ad565aed7e9"),
        (119, "000b48d4edf0fa7bee3c6236ecd2785baa5db4eeb8bb54341b029e0d9fa5fb0c"),
        (120, "13f05a0b594787f5ecd315edc96141bd3243203d1b7d4f0836f37308b276ba98"),
        (127, "70156a14adbabf98cff3a71c7084b417abf057a8efd27329ca36b7202c87d81f"),
        (128, "24da1b81d0b16df6428eee73c69fcb2a93c76bc6df706f0c6670fe6bfe800464"),
    ])
    func sha256Padding(length: Int, hex: String) {
        let input = [UInt8](repeating: UInt8(ascii: "x"), count: length)
        #expect(Digest.sha256Hex(input) == hex)
    }

    @Test("SHA-256 accepts any byte collection (Data, UTF8View, slices)")
    func sha256Collections() {
        let expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(Digest.sha256Hex(Data("abc".utf8)) == expected)
        #expect(Digest.sha256Hex("abc".utf8) == expected)
        #expect(Digest.sha256Hex(Array("xxabcxx".utf8)[2..<5]) == expected)
    }

    // MARK: Incremental hasher

    /// Chunk-size patterns, repeated cyclically until the input is consumed.
    @Test("SHA256Hasher fed in uneven chunks equals the one-shot digest", arguments: [
        [1], [63], [64], [65], [1000], [1, 63, 64, 65, 1000], [63, 1], [65, 63], [0, 7, 0, 128, 3], [4096],
    ])
    func incrementalChunks(pattern: [Int]) {
        var generator = SeededGenerator(seed: 42)
        let input = (0..<3001).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        var hasher = SHA256Hasher()
        var offset = 0
        var step = 0
        while offset < input.count {
            let size = min(pattern[step % pattern.count], input.count - offset)
            hasher.update(Array(input[offset..<offset + size]))
            offset += size
            step += 1
        }
        #expect(hasher.finalize() == Digest.sha256(input))
    }

    @Test("SHA256Hasher matches a known vector when fed byte by byte and in 1000-byte chunks")
    func incrementalKnownVector() {
        var byteByByte = SHA256Hasher()
        for byte in ramp { byteByByte.update([byte]) }
        #expect(Digest.hex(byteByByte.finalize()) == "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9")

        var chunked = SHA256Hasher()
        for start in stride(from: 0, to: millionA.count, by: 1000) {
            chunked.update(Data(millionA[start..<start + 1000]))
        }
        #expect(Digest.hex(chunked.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test("SHA256Hasher reads raw buffers and Data slices that do not start at index 0")
    func incrementalRawBuffers() {
        let expected = "785b0751fc2c53dc14a4ce3d800e69ef9ce1009eb327ccf458afe09c242c26c9"
        var raw = SHA256Hasher()
        ramp.withUnsafeBytes { bytes in
            raw.update(UnsafeRawBufferPointer(rebasing: bytes[0..<100]))
            raw.update(UnsafeRawBufferPointer(rebasing: bytes[100..<1024]))
        }
        #expect(Digest.hex(raw.finalize()) == expected)
        let padded = Data([0xFF, 0xFF, 0xFF] + ramp)
        var slice = SHA256Hasher()
        slice.update(padded[3...])
        #expect(Digest.hex(slice.finalize()) == expected)
        #expect(Digest.sha256Hex(padded[3...]) == expected)
    }

    @Test("SHA256Hasher with no input, or only empty updates, gives the empty digest")
    func incrementalEmpty() {
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        var untouched = SHA256Hasher()
        #expect(Digest.hex(untouched.finalize()) == empty)
        var fedNothing = SHA256Hasher()
        fedNothing.update([])
        fedNothing.update(Data())
        #expect(Digest.hex(fedNothing.finalize()) == empty)
    }

    // MARK: SHA-1

    @Test("SHA-1 matches the FIPS 180 vectors", arguments: [
        HashVector("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        HashVector("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        HashVector(abc448, "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        HashVector("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
        HashVector("one million \"a\"", millionA, "34aa973cd4c4daa4f61eeb2bdbad27316534016f"),
        // Around the padding boundaries (55 bytes fit one block, 56 need two): values from Python's hashlib.
        HashVector("55 × a", Array(repeating: UInt8(ascii: "a"), count: 55), "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        HashVector("63 × a", Array(repeating: UInt8(ascii: "a"), count: 63), "03f09f5b158a7a8cdad920bddc29b81c18a551f5"),
        HashVector("64 × a", Array(repeating: UInt8(ascii: "a"), count: 64), "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
        HashVector("119 × a", Array(repeating: UInt8(ascii: "a"), count: 119), "ee971065aaa017e0632a8ca6c77bb3bf8b1dfc56"),
        HashVector("120 × a", Array(repeating: UInt8(ascii: "a"), count: 120), "f34c1488385346a55709ba056ddd08280dd4c6d6"),
    ])
    func sha1Vectors(_ vector: HashVector) {
        let digest = Digest.sha1(vector.input)
        #expect(digest.count == 20)
        #expect(Digest.hex(digest) == vector.hex)
    }

    // MARK: Hex

    @Test("hex is lowercase, two digits per byte, in order", arguments: [
        ([], ""),
        ([0x00], "00"),
        ([0x0F], "0f"),
        ([0xA5], "a5"),
        ([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF], "00017f80feff"),
        ([0xDE, 0xAD, 0xBE, 0xEF], "deadbeef"),
    ] as [([UInt8], String)])
    func hex(bytes: [UInt8], expected: String) {
        #expect(Digest.hex(bytes) == expected)
        // Contiguous or not, from index 0 or not: the same text.
        #expect(Digest.hex(Data(bytes)) == expected)
        #expect(Digest.hex(bytes.lazy.map { $0 }) == expected)
        #expect(Digest.hex(([0x99] + bytes)[1...]) == expected)
        #expect(Digest.hex(Data([0x99] + bytes).dropFirst()) == expected)
    }

    @Test("hex of every byte value round-trips through parsing")
    func hexAllBytes() {
        let bytes = (0...255).map { UInt8($0) }
        let text = Digest.hex(bytes)
        #expect(text.count == 512)
        #expect(text == text.lowercased())
        let parsed = stride(from: 0, to: text.count, by: 2).map { offset -> UInt8? in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)
        }
        #expect(parsed == bytes.map { Optional($0) })
    }
}
