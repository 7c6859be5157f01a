import Foundation
import SwitchboardCore

/// A 16-byte group ID; its lowercase hex is the storage key.
public struct XMTPNodeGroupID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The raw bytes (always 16).
    public let bytes: [UInt8]

    /// Wraps 16 bytes; nil for any other length.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Parses the 32-character hex form.
    public init?(hex: String) {
        guard hex.utf8.count == 32, let bytes = NodeHex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// Lowercase hex, the storage key.
    public var hex: String { Digest.hex(bytes) }
    /// Base64, as on the wire.
    public var base64: String { Base64.encode(bytes) }
    /// The hex form.
    public var description: String { hex }

    /// Orders by hex.
    public static func < (lhs: XMTPNodeGroupID, rhs: XMTPNodeGroupID) -> Bool { lhs.hex < rhs.hex }
}

/// One message as a sender submits it (`GroupMessageInput.V1`).
public struct XMTPNodeMessageInput: Sendable, Hashable {
    /// The group the envelope names.
    public var groupID: XMTPNodeGroupID
    /// The envelope bytes (`XMTPGroupEnvelope`).
    public var data: [UInt8]
    /// The sender's HMAC, stored and echoed opaquely.
    public var senderHMAC: [UInt8]
    /// Whether receivers should be pushed.
    public var shouldPush: Bool

    /// A message input from its parts.
    public init(groupID: XMTPNodeGroupID, data: [UInt8], senderHMAC: [UInt8], shouldPush: Bool) {
        self.groupID = groupID
        self.data = data
        self.senderHMAC = senderHMAC
        self.shouldPush = shouldPush
    }
}

/// A stored message (`GroupMessage.V1`): the input plus its sequence ID and server time.
public struct XMTPNodeStoredMessage: Sendable, Hashable {
    /// The node-wide increasing sequence ID (the cursor).
    public var id: UInt64
    /// Server time of receipt, nanoseconds since 1970.
    public var createdNs: UInt64
    /// The group.
    public var groupID: XMTPNodeGroupID
    /// The envelope bytes.
    public var data: [UInt8]
    /// The sender's HMAC.
    public var senderHMAC: [UInt8]
    /// Whether receivers should be pushed.
    public var shouldPush: Bool

    /// A stored message from its parts.
    public init(id: UInt64, createdNs: UInt64, groupID: XMTPNodeGroupID, data: [UInt8], senderHMAC: [UInt8], shouldPush: Bool) {
        self.id = id
        self.createdNs = createdNs
        self.groupID = groupID
        self.data = data
        self.senderHMAC = senderHMAC
        self.shouldPush = shouldPush
    }

    /// `{"v1":{"id":..,"created_ns":..,"group_id":..,"data":..,"sender_hmac":..,"should_push":..}}`.
    var json: JSONValue {
        .object([("v1", .object([
            ("id", .string(String(id))),
            ("created_ns", .string(String(createdNs))),
            ("group_id", .string(groupID.base64)),
            ("data", .string(Base64.encode(data))),
            ("sender_hmac", .string(Base64.encode(senderHMAC))),
            ("should_push", .bool(shouldPush)),
        ]))])
    }

    /// Appends `json`'s compact text to `out` without building the value (every member is ASCII that needs no
    /// escaping: decimal numbers and base64); `groupBase64` is the group ID's base64 when the caller has it.
    func appendJSON(to out: inout [UInt8], groupBase64: [UInt8]? = nil) {
        out.append(contentsOf: #"{"v1":{"id":""#.utf8)
        out.append(contentsOf: String(id).utf8)
        out.append(contentsOf: #"","created_ns":""#.utf8)
        out.append(contentsOf: String(createdNs).utf8)
        out.append(contentsOf: #"","group_id":""#.utf8)
        if let groupBase64 { out.append(contentsOf: groupBase64) } else { Base64.append(groupID.bytes, to: &out) }
        out.append(contentsOf: #"","data":""#.utf8)
        Base64.append(data, to: &out)
        out.append(contentsOf: #"","sender_hmac":""#.utf8)
        Base64.append(senderHMAC, to: &out)
        out.append(contentsOf: (shouldPush ? #"","should_push":true}}"# : #"","should_push":false}}"#).utf8)
    }

    /// One line of a subscription: `{"result":<json>}` and a newline.
    var streamLine: Data {
        var line = Array(#"{"result":"#.utf8)
        appendJSON(to: &line)
        line.append(contentsOf: "}\n".utf8)
        return Data(line)
    }
}

/// Hex helpers for IDs and digests.
enum NodeHex {
    /// Decodes hex (either case); nil when malformed or of odd length.
    static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: digit - 0x30
        case 0x41...0x46: digit - 0x41 + 10
        case 0x61...0x66: digit - 0x61 + 10
        default: nil
        }
    }

    /// Whether `text` is a 64-character hex SHA-256 digest.
    static func isDigest(_ text: String) -> Bool { text.utf8.count == 64 && decode(text) != nil }
}

/// The node's clock: nanoseconds since 1970 (`CLOCK_REALTIME`).
enum NodeClock {
    /// Now, in nanoseconds since 1970.
    static func nowNs() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}
