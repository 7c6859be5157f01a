/// Protocol Buffers wire format: the few primitives the XMTP-like codecs need, written and read by hand.
public enum ProtobufWireType: UInt8, Sendable {
    /// int32, int64, uint32, uint64, bool, enum.
    case varint = 0
    /// fixed64, double.
    case fixed64 = 1
    /// string, bytes, embedded messages, packed repeated fields.
    case lengthDelimited = 2
    /// fixed32, float.
    case fixed32 = 5
}

/// Why protobuf bytes could not be read.
public struct ProtobufError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, with the byte offset.
    public let message: String
    /// An error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

/// Appends fields in the order written (callers write them in field-number order, as protoc does).
public struct ProtobufWriter: Sendable {
    /// The bytes so far.
    public private(set) var bytes: [UInt8] = []

    /// An empty writer.
    public init() {}

    /// Appends a base-128 varint.
    public mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends a field key.
    public mutating func key(_ field: Int, _ type: ProtobufWireType) {
        varint(UInt64(field) << 3 | UInt64(type.rawValue))
    }

    /// A varint field (skipped when zero unless `always`).
    public mutating func uint64(_ field: Int, _ value: UInt64, always: Bool = false) {
        guard value != 0 || always else { return }
        key(field, .varint)
        varint(value)
    }

    /// A bool field (skipped when false unless `always`).
    public mutating func bool(_ field: Int, _ value: Bool, always: Bool = false) {
        uint64(field, value ? 1 : 0, always: always)
    }

    /// A bytes field (skipped when empty unless `always`).
    public mutating func bytes(_ field: Int, _ value: some Collection<UInt8>, always: Bool = false) {
        guard !value.isEmpty || always else { return }
        key(field, .lengthDelimited)
        varint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A string field (skipped when empty unless `always`).
    public mutating func string(_ field: Int, _ value: String, always: Bool = false) {
        bytes(field, Array(value.utf8), always: always)
    }

    /// An embedded message field (always written, even when empty).
    public mutating func message(_ field: Int, _ value: [UInt8]) {
        bytes(field, value, always: true)
    }
}

/// Reads fields one by one; unknown fields are skipped by the caller with `skip`.
public struct ProtobufReader: Sendable {
    private let bytes: [UInt8]
    private var index = 0

    /// A reader over `bytes`.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was read.
    public var isAtEnd: Bool { index >= bytes.count }

    /// Reads a varint (at most 10 bytes).
    public mutating func varint() throws(ProtobufError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < bytes.count else { throw ProtobufError("truncated varint at offset \(index)") }
            let byte = bytes[index]
            index += 1
            guard shift < 64 else { throw ProtobufError("varint longer than 10 bytes at offset \(index)") }
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 { return result }
            shift += 7
        }
    }

    /// The next field's number and wire type, or nil at the end.
    public mutating func nextField() throws(ProtobufError) -> (field: Int, type: ProtobufWireType)? {
        guard !isAtEnd else { return nil }
        let key = try varint()
        guard let type = ProtobufWireType(rawValue: UInt8(key & 7)) else {
            throw ProtobufError("unsupported wire type \(key & 7) at offset \(index)")
        }
        let field = Int(key >> 3)
        guard field > 0, field <= 536_870_911 else { throw ProtobufError("invalid field number \(field) at offset \(index)") }
        return (field, type)
    }

    /// Reads a length-delimited value.
    public mutating func lengthDelimited() throws(ProtobufError) -> [UInt8] {
        let length = try varint()
        guard length <= UInt64(bytes.count - index) else {
            throw ProtobufError("length \(length) runs past the end at offset \(index)")
        }
        let value = Array(bytes[index..<index + Int(length)])
        index += Int(length)
        return value
    }

    /// Reads a UTF-8 string value.
    public mutating func string() throws(ProtobufError) -> String {
        let raw = try lengthDelimited()
        guard let text = String(validating: raw, as: UTF8.self) else { throw ProtobufError("invalid UTF-8 in a string field") }
        return text
    }

    /// Skips a value of `type`.
    public mutating func skip(_ type: ProtobufWireType) throws(ProtobufError) {
        switch type {
        case .varint: _ = try varint()
        case .lengthDelimited: _ = try lengthDelimited()
        case .fixed64:
            guard index + 8 <= bytes.count else { throw ProtobufError("truncated fixed64 at offset \(index)") }
            index += 8
        case .fixed32:
            guard index + 4 <= bytes.count else { throw ProtobufError("truncated fixed32 at offset \(index)") }
            index += 4
        }
    }

    /// Checks the wire type of a known field.
    public func expect(_ actual: ProtobufWireType, _ expected: ProtobufWireType, field: Int) throws(ProtobufError) {
        guard actual == expected else { throw ProtobufError("field \(field) has wire type \(actual.rawValue), expected \(expected.rawValue)") }
    }
}
