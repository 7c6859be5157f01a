import SwitchboardCore
import Testing
@testable import XMTPCodec

/// Writes DEFLATE bits (least significant first) and Huffman codes (most significant first), as RFC 1951 packs them.
private struct DeflateBitWriter {
    /// The bytes so far (the last one partly filled).
    var bytes: [UInt8] = []
    /// Bits used in the last byte.
    private var used = 8

    /// Appends one bit.
    mutating func bit(_ value: Int) {
        if used == 8 {
            bytes.append(0)
            used = 0
        }
        bytes[bytes.count - 1] |= UInt8(value & 1) << UInt8(used)
        used += 1
    }

    /// Appends `count` bits of `value`, least significant first (header fields, extra bits).
    mutating func bits(_ value: Int, _ count: Int) {
        for index in 0..<count { bit(value >> index) }
    }

    /// Appends a Huffman code of `length` bits, most significant first.
    mutating func code(_ value: Int, _ length: Int) {
        for index in (0..<length).reversed() { bit(value >> index) }
    }
}

/// A raw DEFLATE stream of one fixed-Huffman block: the literal `a`, then `copies` copies of 258 bytes at distance 1
/// (13 bits each): `1 + 258 × copies` bytes of `a` from about `copies × 1.6` bytes, a decompression bomb.
private func deflateBomb(copies: Int) -> [UInt8] {
    var writer = DeflateBitWriter()
    writer.bits(1, 1)  // BFINAL
    writer.bits(1, 2)  // BTYPE 01: fixed Huffman codes
    writer.code(0x30 + Int(UInt8(ascii: "a")), 8)  // literal 0…143: 8 bits from 0x30
    for _ in 0..<copies {
        writer.code(0xC0 + (285 - 280), 8)  // length 258: symbol 285 (280…287: 8 bits from 0xC0), no extra bits
        writer.code(0, 5)  // distance 1: code 0, no extra bits
    }
    writer.code(0, 7)  // end of block: symbol 256 (256…279: 7 bits from 0)
    return writer.bytes
}

/// A reply to a reply … `replies` deep around the text "hi".
private func nestedReplies(_ replies: Int) -> XMTPEncodedContent {
    var content = XMTPText("hi").encoded()
    for _ in 0..<replies { content = XMTPReply(reference: "ab", content: content).encoded() }
    return content
}

/// Inflate output caps and the nesting limit of `decodedJSON()`.
@Suite struct XMTPCodecLimitsTests {
    @Test("a deflate bomb stops at the output limit instead of growing without end")
    func inflateBomb() throws {
        let small = deflateBomb(copies: 100)
        #expect(try Inflate.zlibOrRaw(small) == Array(repeating: UInt8(ascii: "a"), count: 1 + 258 * 100))
        let limit = 1 << 20
        let bomb = deflateBomb(copies: 5_000)  // 1,290,001 bytes from about 8 KB
        #expect(bomb.count < 9_000)
        #expect(throws: XMTPCodecError.decompressionFailed("output larger than \(limit) bytes")) {
            try Inflate.zlibOrRaw(bomb, maximumOutput: limit)
        }
        // Exactly at the limit is fine; one byte over is not.
        #expect(try Inflate.zlibOrRaw(small, maximumOutput: 1 + 258 * 100).count == 1 + 258 * 100)
        #expect(throws: XMTPCodecError.self) { try Inflate.zlibOrRaw(small, maximumOutput: 258 * 100) }
        #expect(Inflate.maximumOutput == 32 * 1024 * 1024, "the default cap: the largest attachment (25 MiB) and its framing")
    }

    @Test("stored blocks count toward the limit before their bytes are copied")
    func storedBlockLimit() throws {
        var stored: [UInt8] = [0x01, 0x00, 0x04, 0xFF, 0xFB]  // BFINAL, BTYPE 00, LEN 1024, NLEN
        stored += Array(repeating: 0x61, count: 1_024)
        #expect(try Inflate.zlibOrRaw(stored).count == 1_024)
        #expect(throws: XMTPCodecError.decompressionFailed("output larger than 1000 bytes")) {
            try Inflate.zlibOrRaw(stored, maximumOutput: 1_000)
        }
    }

    @Test("replies nested below the limit decode fully; deeper chains end in an error, not a stack overflow")
    func nestedContentDepth() throws {
        let limit = XMTPEncodedContent.maximumNestingDepth
        /// The levels of `decodedJSON()` output followed down `content.content`, and the innermost level.
        func walk(_ json: JSONValue) -> (levels: Int, innermost: JSONValue) {
            var levels = 1
            var current = json
            while let next = current["content"]?["content"], next["type"] != nil {
                current = next
                levels += 1
            }
            return (levels, current)
        }
        let fitting = walk(nestedReplies(limit - 1).decodedJSON())
        #expect(fitting.levels == limit)
        #expect(fitting.innermost["content"] == .string("hi"))
        #expect(fitting.innermost["error"] == nil)

        let tooDeep = walk(nestedReplies(limit).decodedJSON())
        #expect(tooDeep.levels == limit)
        #expect(tooDeep.innermost["content"] == .null)
        #expect(tooDeep.innermost["error"]?.stringValue?.contains("nested content deeper than \(limit) levels") == true)

        // A hostile chain 1,000 deep (about 100 KB) is described down to the limit and no further.
        let hostile = nestedReplies(1_000)
        #expect(walk(hostile.decodedJSON()).levels == limit)
        // What the limit lets through reads back with the JSON depth the codecs accept.
        let text = nestedReplies(limit - 1).decodedJSON().serialized
        #expect(throws: Never.self) { try JSONValue.parse(text, maximumDepth: XMTPContent.maximumJSONDepth) }
    }
}
