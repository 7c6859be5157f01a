/// A small pure-Swift DEFLATE decoder (RFC 1951) with the zlib (RFC 1950) and gzip (RFC 1952) wrappers, for
/// `EncodedContent.compression`. Decompression only: libxmtp never compresses what it sends.
enum Inflate {
    /// The largest output accepted by default (a guard against decompression bombs): output stops growing at the
    /// limit, checked before every literal, copy and stored block, so a bomb costs at most this much memory.
    /// 32 MiB holds the largest attachment the XMTP adapter accepts (25 MiB) with its content's framing.
    static let maximumOutput = 32 * 1024 * 1024

    /// Inflates zlib-wrapped data (checking the Adler-32), or raw deflate when there is no valid zlib header.
    static func zlibOrRaw(_ data: [UInt8], maximumOutput limit: Int = maximumOutput) throws(XMTPCodecError) -> [UInt8] {
        if data.count >= 6, data[0] & 0x0F == 8, data[0] >> 4 <= 7, (UInt16(data[0]) << 8 | UInt16(data[1])) % 31 == 0,
           data[1] & 0x20 == 0 {
            do throws(XMTPCodecError) {
                var reader = BitReader(data, start: 2)
                let output = try inflate(&reader, maximumOutput: limit)
                let end = reader.alignedByteIndex
                guard end + 4 <= data.count else { throw XMTPCodecError.decompressionFailed("zlib stream is missing its Adler-32") }
                let expected = UInt32(data[end]) << 24 | UInt32(data[end + 1]) << 16 | UInt32(data[end + 2]) << 8 | UInt32(data[end + 3])
                guard adler32(output) == expected else { throw XMTPCodecError.decompressionFailed("zlib Adler-32 mismatch") }
                return output
            } catch {
                // Output past the limit is final: a bomb is not inflated a second time as raw deflate.
                guard error != tooLarge(limit) else { throw error }
                // Raw deflate that merely looks like a zlib header: try it as raw before giving up.
                var reader = BitReader(data, start: 0)
                guard let output = try? inflate(&reader, maximumOutput: limit) else { throw error }
                return output
            }
        }
        var reader = BitReader(data, start: 0)
        return try inflate(&reader, maximumOutput: limit)
    }

    /// Inflates a gzip member (checking CRC-32 and length).
    static func gzip(_ data: [UInt8], maximumOutput limit: Int = maximumOutput) throws(XMTPCodecError) -> [UInt8] {
        guard data.count >= 18, data[0] == 0x1F, data[1] == 0x8B, data[2] == 8 else {
            throw .decompressionFailed("not a gzip stream")
        }
        let flags = data[3]
        var index = 10
        if flags & 0x04 != 0 {
            guard index + 2 <= data.count else { throw .decompressionFailed("truncated gzip header") }
            index += 2 + (Int(data[index]) | Int(data[index + 1]) << 8)
        }
        for bit: UInt8 in [0x08, 0x10] where flags & bit != 0 {
            while index < data.count, data[index] != 0 { index += 1 }
            index += 1
        }
        if flags & 0x02 != 0 { index += 2 }
        guard index < data.count else { throw .decompressionFailed("truncated gzip header") }
        var reader = BitReader(data, start: index)
        let output = try inflate(&reader, maximumOutput: limit)
        let end = reader.alignedByteIndex
        guard end + 8 <= data.count else { throw .decompressionFailed("gzip stream is missing its trailer") }
        let crc = (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[end + $1]) << (8 * UInt32($1)) }
        let size = (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[end + 4 + $1]) << (8 * UInt32($1)) }
        guard crc32(output) == crc, UInt32(truncatingIfNeeded: output.count) == size else {
            throw .decompressionFailed("gzip CRC-32 or length mismatch")
        }
        return output
    }

    /// Reads bits least-significant first, as DEFLATE packs them.
    struct BitReader {
        /// The input.
        let data: [UInt8]
        /// The next byte to load.
        var index: Int
        /// Loaded bits not yet consumed.
        var buffer: UInt64 = 0
        /// How many bits `buffer` holds.
        var count = 0

        /// A reader starting at byte `start`.
        init(_ data: [UInt8], start: Int) {
            self.data = data
            self.index = start
        }

        /// The next `n` bits (n ≤ 32) as a number.
        mutating func bits(_ n: Int) throws(XMTPCodecError) -> Int {
            while count < n {
                guard index < data.count else { throw .decompressionFailed("unexpected end of deflate data") }
                buffer |= UInt64(data[index]) << UInt64(count)
                index += 1
                count += 8
            }
            let value = Int(buffer & ((1 << UInt64(n)) - 1))
            buffer >>= UInt64(n)
            count -= n
            return value
        }

        /// Drops bits up to the next byte boundary.
        mutating func alignToByte() {
            let drop = count % 8
            buffer >>= UInt64(drop)
            count -= drop
        }

        /// The index of the first byte not consumed once aligned to a byte.
        var alignedByteIndex: Int { index - count / 8 }
    }

    /// A canonical Huffman code: symbol counts per length and the symbols in code order.
    struct Huffman {
        /// How many codes have each length 0…15.
        var counts = [Int](repeating: 0, count: 16)
        /// Symbols sorted by code.
        var symbols: [Int] = []

        /// A code from per-symbol code lengths; throws when over-subscribed.
        init(lengths: [Int]) throws(XMTPCodecError) {
            for length in lengths { counts[length] += 1 }
            counts[0] = 0
            var left = 1
            for length in 1..<16 {
                left = left << 1 - counts[length]
                guard left >= 0 else { throw .decompressionFailed("over-subscribed Huffman code") }
            }
            var offsets = [Int](repeating: 0, count: 16)
            for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
            symbols = [Int](repeating: 0, count: lengths.count)
            for (symbol, length) in lengths.enumerated() where length != 0 {
                symbols[offsets[length]] = symbol
                offsets[length] += 1
            }
        }

        /// Decodes one symbol.
        func decode(_ reader: inout BitReader) throws(XMTPCodecError) -> Int {
            var code = 0, first = 0, index = 0
            for length in 1..<16 {
                code |= try reader.bits(1)
                let count = counts[length]
                if code - count < first { return symbols[index + (code - first)] }
                index += count
                first += count
                first <<= 1
                code <<= 1
            }
            throw .decompressionFailed("invalid Huffman code")
        }
    }

    /// Base lengths of length symbols 257…285.
    private static let lengthBase = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
    /// Extra bits of length symbols 257…285.
    private static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    /// Base distances of distance symbols 0…29.
    private static let distanceBase = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                                       2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    /// Extra bits of distance symbols 0…29.
    private static let distanceExtra = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13]

    /// The error for output that would pass `limit` bytes.
    private static func tooLarge(_ limit: Int) -> XMTPCodecError { .decompressionFailed("output larger than \(limit) bytes") }

    /// Inflates raw DEFLATE blocks until the final one, refusing output beyond `limit` bytes.
    static func inflate(_ reader: inout BitReader, maximumOutput limit: Int = maximumOutput) throws(XMTPCodecError) -> [UInt8] {
        var output: [UInt8] = []
        var final = false
        while !final {
            final = try reader.bits(1) == 1
            switch try reader.bits(2) {
            case 0:
                reader.alignToByte()
                let length = try reader.bits(16)
                let complement = try reader.bits(16)
                guard length == ~complement & 0xFFFF else { throw .decompressionFailed("stored block length mismatch") }
                guard output.count + length <= limit else { throw tooLarge(limit) }
                for _ in 0..<length { output.append(UInt8(try reader.bits(8))) }
            case 1:
                let literal = try Huffman(lengths: Array(repeating: 8, count: 144) + Array(repeating: 9, count: 112)
                                          + Array(repeating: 7, count: 24) + Array(repeating: 8, count: 8))
                let distance = try Huffman(lengths: Array(repeating: 5, count: 30))
                try inflateBlock(&reader, literal: literal, distance: distance, into: &output, limit: limit)
            case 2:
                let (literal, distance) = try dynamicCodes(&reader)
                try inflateBlock(&reader, literal: literal, distance: distance, into: &output, limit: limit)
            default:
                throw .decompressionFailed("invalid block type 3")
            }
        }
        return output
    }

    /// Reads the code-length tables of a dynamic block.
    private static func dynamicCodes(_ reader: inout BitReader) throws(XMTPCodecError) -> (Huffman, Huffman) {
        let literalCount = try reader.bits(5) + 257
        let distanceCount = try reader.bits(5) + 1
        let codeLengthCount = try reader.bits(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw .decompressionFailed("too many codes") }
        let order = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]
        var codeLengths = [Int](repeating: 0, count: 19)
        for i in 0..<codeLengthCount { codeLengths[order[i]] = try reader.bits(3) }
        let codeLengthCode = try Huffman(lengths: codeLengths)
        var lengths: [Int] = []
        while lengths.count < literalCount + distanceCount {
            let symbol = try codeLengthCode.decode(&reader)
            switch symbol {
            case 0..<16: lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else { throw .decompressionFailed("repeat with no previous length") }
                lengths += Array(repeating: previous, count: 3 + (try reader.bits(2)))
            case 17: lengths += Array(repeating: 0, count: 3 + (try reader.bits(3)))
            default: lengths += Array(repeating: 0, count: 11 + (try reader.bits(7)))
            }
        }
        guard lengths.count == literalCount + distanceCount else { throw .decompressionFailed("code lengths overrun") }
        guard lengths[256] != 0 else { throw .decompressionFailed("no end-of-block code") }
        return (try Huffman(lengths: Array(lengths[0..<literalCount])), try Huffman(lengths: Array(lengths[literalCount...])))
    }

    /// Decodes literal/length and distance symbols until end of block, keeping `output` within `limit` bytes.
    private static func inflateBlock(_ reader: inout BitReader, literal: Huffman, distance: Huffman,
                                     into output: inout [UInt8], limit: Int) throws(XMTPCodecError) {
        while true {
            let symbol = try literal.decode(&reader)
            if symbol < 256 {
                guard output.count < limit else { throw tooLarge(limit) }
                output.append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < lengthBase.count else { throw .decompressionFailed("invalid length symbol") }
                let length = lengthBase[index] + (try reader.bits(lengthExtra[index]))
                let distanceSymbol = try distance.decode(&reader)
                guard distanceSymbol < distanceBase.count else { throw .decompressionFailed("invalid distance symbol") }
                let back = distanceBase[distanceSymbol] + (try reader.bits(distanceExtra[distanceSymbol]))
                guard back <= output.count else { throw .decompressionFailed("distance too far back") }
                guard output.count + length <= limit else { throw tooLarge(limit) }
                let start = output.count - back
                for i in 0..<length { output.append(output[start + i]) }
            }
        }
    }

    /// The Adler-32 checksum (RFC 1950).
    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return b << 16 | a
    }

    /// The CRC-32 checksum (IEEE, reflected, as gzip uses).
    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
