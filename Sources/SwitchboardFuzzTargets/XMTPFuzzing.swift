import SwitchboardCore
import XMTPCodec

/// The XMTP codec: `EncodedContent` and libxmtp's content types, the group envelope framing, the protobuf wire
/// primitives under them, and the DEFLATE decoder behind `EncodedContent.compression`.
enum XMTPFuzzing {
    /// Protobuf bytes read as every message the codec knows; whatever decodes must encode and decode to the same value.
    static func runContent(_ bytes: [UInt8]) throws {
        let name = "xmtp-content"
        if let content = try? XMTPEncodedContent.decode(bytes) {
            let encoded = content.encoded()
            let again = try? XMTPEncodedContent.decode(encoded)
            try expect(again == content, name, "EncodedContent \(content) came back as \(String(describing: again))")
            try expect(again?.encoded() == encoded, name, "EncodedContent \(content) has two encodings")
            _ = content.decodedJSON()
            _ = try? content.decompressed()
            if let decoded = try? XMTPContent.decode(content) {
                _ = decoded.fallback
                let reencoded = decoded.encoded()
                let redecoded: XMTPContent
                do {
                    redecoded = try XMTPContent.decode(reencoded)
                } catch {
                    throw FuzzFailure(target: name, message: "\(decoded) encodes as \(reencoded), which does not decode: \(error)")
                }
                try expect(redecoded == decoded, name, "\(decoded) came back as \(redecoded)")
            }
        }
        if let envelope = try? XMTPGroupEnvelope.decode(bytes) {
            let again = try? XMTPGroupEnvelope.decode(envelope.encoded())
            try expect(again == envelope, name, "group envelope \(envelope) came back as \(String(describing: again))")
        }
        if let sealed = try? XMTPSealedMessage.decode(bytes) {
            let again = try? XMTPSealedMessage.decode(sealed.encoded())
            try expect(again == sealed, name, "sealed message \(sealed) came back as \(String(describing: again))")
        }
        if let info = try? XMTPRemoteAttachment.decodeInfo(bytes) {
            let again = try? XMTPRemoteAttachment.decodeInfo(info.infoEncoded())
            try expect(again == info, name, "remote attachment info \(info) came back as \(String(describing: again))")
        }
        if let typeID = try? XMTPContentTypeID.decode(bytes) {
            let again = try? XMTPContentTypeID.decode(typeID.encoded())
            try expect(again == typeID, name, "content type \(typeID) came back as \(String(describing: again))")
        }
        let text = String(decoding: bytes, as: UTF8.self)
        if let typeID = XMTPContentTypeID(parsing: text) {
            let again = XMTPContentTypeID(parsing: typeID.description)
            try expect(again == typeID, name, "content type text \(typeID) came back as \(String(describing: again))")
        }
    }

    /// The wire reader over arbitrary bytes, nested length-delimited values read as messages too (a few levels);
    /// messages of varint and length-delimited fields are written again by the writer and must read the same.
    static func runProtobufWire(_ bytes: [UInt8]) throws {
        _ = try walk(bytes, depth: 0)
    }

    /// One field as read: number and value (fixed-width values are skipped, so they carry no value).
    private enum Field: Equatable {
        case varint(Int, UInt64)
        case bytes(Int, [UInt8])
        case fixed(Int)
    }

    private static func walk(_ bytes: [UInt8], depth: Int) throws -> [Field]? {
        let name = "protobuf-wire"
        var reader = ProtobufReader(bytes)
        var fields: [Field] = []
        do {
            while let (field, type) = try reader.nextField() {
                switch type {
                case .varint: fields.append(.varint(field, try reader.varint()))
                case .lengthDelimited:
                    let value = try reader.lengthDelimited()
                    _ = String(validating: value, as: UTF8.self)
                    if depth < 4 { _ = try walk(value, depth: depth + 1) }
                    fields.append(.bytes(field, value))
                default:
                    try reader.skip(type)
                    fields.append(.fixed(field))
                }
            }
        } catch {
            return nil
        }
        try expect(reader.isAtEnd, name, "the reader stopped before the end without an error")
        guard !fields.contains(where: { if case .fixed = $0 { true } else { false } }) else { return fields }
        var writer = ProtobufWriter()
        for field in fields {
            switch field {
            case .varint(let number, let value): writer.uint64(number, value, always: true)
            case .bytes(let number, let value): writer.bytes(number, value, always: true)
            case .fixed: break
            }
        }
        var reread = ProtobufReader(writer.bytes)
        var again: [Field] = []
        do {
            while let (field, type) = try reread.nextField() {
                switch type {
                case .varint: again.append(.varint(field, try reread.varint()))
                case .lengthDelimited: again.append(.bytes(field, try reread.lengthDelimited()))
                default: throw ProtobufError("the writer wrote a fixed-width field")
                }
            }
        } catch {
            throw FuzzFailure(target: name, message: "the writer's bytes \(writer.bytes) do not read back: \(error)")
        }
        try expect(again == fields, name, "fields \(fields) read back as \(again)")
        return fields
    }

    /// The input inflated as zlib-or-raw DEFLATE and as gzip; then the input itself, wrapped in stored blocks in
    /// each framing, must inflate back to exactly the input.
    static func runInflate(_ bytes: [UInt8]) throws {
        let name = "inflate"
        for compression in [XMTPCompression.deflate, .gzip] {
            _ = try? XMTPEncodedContent(type: nil, content: bytes, compression: compression).decompressed()
        }
        let stored = storedBlocks(bytes)
        let zlibHeader: [UInt8] = [0x78, 0x01]
        let gzipHeader: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
        let zlib: [UInt8] = zlibHeader + stored + bigEndian(adler32(bytes))
        var gzip: [UInt8] = gzipHeader + stored
        gzip += littleEndian(crc32(bytes)) + littleEndian(UInt32(truncatingIfNeeded: bytes.count))
        for (framing, compression, data) in [("raw", XMTPCompression.deflate, stored), ("zlib", .deflate, zlib), ("gzip", .gzip, gzip)] {
            let inflated: [UInt8]
            do {
                inflated = try XMTPEncodedContent(type: nil, content: data, compression: compression).decompressed().content
            } catch {
                throw FuzzFailure(target: name, message: "\(framing) stored blocks of \(bytes.count) bytes do not inflate: \(error)")
            }
            try expect(inflated == bytes, name, "\(framing) stored blocks of \(bytes) inflate to \(inflated)")
        }
    }

    /// `bytes` as DEFLATE stored blocks (RFC 1951 §3.2.4), at most 65,535 bytes each, the last one final.
    private static func storedBlocks(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var start = 0
        repeat {
            let end = min(bytes.count, start + 65_535)
            let count = UInt16(end - start)
            out.append(end == bytes.count ? 1 : 0)
            out += [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8)]
            out += bytes[start..<end]
            start = end
        } while start < bytes.count
        return out
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    private static func littleEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
}
