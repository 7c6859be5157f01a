import Foundation
import SwitchboardCore

/// A Socket.IO argument that may contain bytes: JSON with `.binary(Data)` leaves anywhere in the tree.
///
/// `JSONValue` has no bytes case, so binary arguments are built and read through this type; on the wire the
/// bytes become `{"_placeholder":true,"num":n}` objects plus attachment frames (see `SocketIOBinary`).
public indirect enum SocketIOValue: Sendable, Equatable {
    /// A JSON value without binary inside.
    case json(JSONValue)
    /// Bytes (an attachment on the wire).
    case binary(Data)
    /// An array whose elements may hold binary.
    case array([SocketIOValue])
    /// An object whose members (in order) may hold binary.
    case object([(key: String, value: SocketIOValue)])

    /// Structural equality; binary-free trees compare by their JSON.
    public static func == (lhs: SocketIOValue, rhs: SocketIOValue) -> Bool {
        switch (lhs, rhs) {
        case let (.binary(a), .binary(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default:
            if let a = lhs.jsonValue, let b = rhs.jsonValue { return a == b }
            return false
        }
    }

    /// The value as plain JSON when it holds no binary, nil otherwise.
    public var jsonValue: JSONValue? {
        switch self {
        case .json(let value): return value
        case .binary: return nil
        case .array(let elements):
            var out: [JSONValue] = []
            for element in elements {
                guard let json = element.jsonValue else { return nil }
                out.append(json)
            }
            return .array(out)
        case .object(let members):
            var out: [(key: String, value: JSONValue)] = []
            for member in members {
                guard let json = member.value.jsonValue else { return nil }
                out.append((key: member.key, value: json))
            }
            return .object(out)
        }
    }

    /// The bytes if this is a binary leaf.
    public var dataValue: Data? {
        if case .binary(let data) = self { return data }
        return nil
    }

    /// Whether any binary leaf is inside.
    public var containsBinary: Bool {
        switch self {
        case .json: return false
        case .binary: return true
        case .array(let elements): return elements.contains { $0.containsBinary }
        case .object(let members): return members.contains { $0.value.containsBinary }
        }
    }
}

/// Splitting binary out of Socket.IO arguments and putting it back (`_placeholder` objects).
public enum SocketIOBinary {
    /// The placeholder object for attachment `index`: `{"_placeholder":true,"num":index}`.
    public static func placeholder(_ index: Int) -> JSONValue {
        ["_placeholder": true, "num": .int(Int64(index))]
    }

    /// The attachment index if `value` is a placeholder object (`_placeholder` true and an integer `num`).
    public static func placeholderIndex(_ value: JSONValue) -> Int? {
        guard value["_placeholder"]?.boolValue == true, let num = value["num"]?.intValue else { return nil }
        return Int(exactly: num)
    }

    /// Replaces every binary leaf, depth first in document order, with a placeholder numbered from 0;
    /// returns the JSON and the attachments in placeholder order.
    public static func deconstruct(_ value: SocketIOValue) -> (json: JSONValue, attachments: [Data]) {
        var attachments: [Data] = []
        let json = deconstruct(value, into: &attachments)
        return (json, attachments)
    }

    private static func deconstruct(_ value: SocketIOValue, into attachments: inout [Data]) -> JSONValue {
        switch value {
        case .json(let json): return json
        case .binary(let data):
            attachments.append(data)
            return placeholder(attachments.count - 1)
        case .array(let elements): return .array(elements.map { deconstruct($0, into: &attachments) })
        case .object(let members):
            return .object(members.map { (key: $0.key, value: deconstruct($0.value, into: &attachments)) })
        }
    }

    /// Rebuilds the tree, replacing each placeholder with its attachment; a `num` outside the attachments throws.
    public static func reconstruct(_ json: JSONValue, attachments: [Data]) throws(SocketIOProtocolError) -> SocketIOValue {
        switch json {
        case .array(let elements):
            var out: [SocketIOValue] = []
            for element in elements { out.append(try reconstruct(element, attachments: attachments)) }
            return out.contains { $0.containsBinary } ? .array(out) : .json(json)
        case .object(let members):
            if json["_placeholder"]?.boolValue == true {
                guard let index = placeholderIndex(json), attachments.indices.contains(index) else {
                    throw .invalidPlaceholder("num \(json["num"]?.serialized ?? "missing") with \(attachments.count) attachment(s)")
                }
                return .binary(attachments[index])
            }
            var out: [(key: String, value: SocketIOValue)] = []
            for member in members {
                out.append((key: member.key, value: try reconstruct(member.value, attachments: attachments)))
            }
            return out.contains { $0.value.containsBinary } ? .object(out) : .json(json)
        default:
            return .json(json)
        }
    }

    /// Checks that every placeholder in `json` refers to one of `count` attachments.
    public static func validatePlaceholders(_ json: JSONValue, count: Int) throws(SocketIOProtocolError) {
        switch json {
        case .array(let elements):
            for element in elements { try validatePlaceholders(element, count: count) }
        case .object(let members):
            if json["_placeholder"]?.boolValue == true {
                guard let index = placeholderIndex(json), index >= 0, index < count else {
                    throw .invalidPlaceholder("num \(json["num"]?.serialized ?? "missing") with \(count) attachment(s)")
                }
                return
            }
            for member in members { try validatePlaceholders(member.value, count: count) }
        default:
            return
        }
    }
}

/// Reassembles binary packets: a `5`/`6` header, then its N binary frames, yield one complete packet.
///
/// The complete packet keeps the placeholders in `data` and carries the bytes in `attachments` (placeholder
/// `num` = index); `SocketIOPacket.resolvedArguments()` gives the tree with `Data` leaves.
public struct SocketIOBinaryAssembler: Sendable {
    /// The packet whose attachments are being collected, if any.
    public private(set) var pending: SocketIOPacket?

    /// An idle assembler.
    public init() {}

    /// Whether binary frames are expected next.
    public var isAwaitingAttachments: Bool { pending != nil }

    /// Starts with a decoded packet: returns it at once when it needs no attachments, nil while they are due.
    /// Throws `expectedAttachment` if a previous packet is still incomplete.
    public mutating func begin(_ packet: SocketIOPacket) throws(SocketIOProtocolError) -> SocketIOPacket? {
        guard pending == nil else { throw .expectedAttachment }
        guard packet.type.isBinary, packet.attachmentCount > packet.attachments.count else {
            if packet.type.isBinary, let data = packet.data {
                try SocketIOBinary.validatePlaceholders(data, count: packet.attachments.count)
            }
            return packet
        }
        pending = packet
        return nil
    }

    /// Adds the next binary frame: returns the complete packet after the last one, nil before.
    /// Throws `unexpectedAttachment` when no packet is pending, `invalidPlaceholder` when the JSON refers to
    /// a missing attachment.
    public mutating func add(_ attachment: Data) throws(SocketIOProtocolError) -> SocketIOPacket? {
        guard var packet = pending else { throw .unexpectedAttachment }
        packet.attachments.append(attachment)
        guard packet.attachments.count == packet.attachmentCount else {
            pending = packet
            return nil
        }
        pending = nil
        if let data = packet.data { try SocketIOBinary.validatePlaceholders(data, count: packet.attachmentCount) }
        return packet
    }

    /// Drops any partial packet (on disconnect).
    public mutating func reset() { pending = nil }
}
