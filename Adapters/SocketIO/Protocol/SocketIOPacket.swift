import Foundation
import SwitchboardCore

/// The Socket.IO v5 packet types (the first character of a packet).
public enum SocketIOPacketType: Int, Sendable, Hashable, CaseIterable {
    /// `0`: connect to a namespace (client, with optional auth object) / connected (server, `{"sid"}`).
    case connect = 0
    /// `1`: leave a namespace (either side).
    case disconnect = 1
    /// `2`: an event `["name", args…]`, optionally with an ack id.
    case event = 2
    /// `3`: the answer to an event that carried an ack id: `[args…]`.
    case ack = 3
    /// `4`: the server refused a namespace connect: `{"message",["data"]}` (or a bare string from old servers).
    case connectError = 4
    /// `5`: an event with binary attachments.
    case binaryEvent = 5
    /// `6`: an ack with binary attachments.
    case binaryAck = 6

    /// Whether packets of this type carry `<n>-` and binary attachments.
    public var isBinary: Bool { self == .binaryEvent || self == .binaryAck }
}

/// One Socket.IO v5 packet: `<type>[<attachments>-][<nsp>,][<id>][<json>]`.
///
/// Binary packets hold their JSON with `{"_placeholder":true,"num":n}` objects in `data` and the bytes in
/// `attachments` (index `n`); `resolvedArguments()` rebuilds the tree with real `Data` leaves.
public struct SocketIOPacket: Sendable, Hashable {
    /// The packet type.
    public var type: SocketIOPacketType
    /// The namespace, `/` by default (omitted on the wire when `/`).
    public var namespace: String
    /// The ack id of an event that wants an answer, or of the ack answering it.
    public var ackID: Int?
    /// The JSON payload, nil when absent.
    public var data: JSONValue?
    /// How many binary attachments follow (binary types only; written as `<n>-`).
    public var attachmentCount: Int
    /// The attachments once received (decoding yields `[]`; `SocketIOBinaryAssembler` fills them).
    public var attachments: [Data]

    /// A packet; `attachmentCount` defaults to the number of `attachments`.
    public init(type: SocketIOPacketType, namespace: String = "/", ackID: Int? = nil, data: JSONValue? = nil,
                attachmentCount: Int? = nil, attachments: [Data] = []) {
        self.type = type
        self.namespace = namespace
        self.ackID = ackID
        self.data = data
        self.attachmentCount = attachmentCount ?? attachments.count
        self.attachments = attachments
    }

    // MARK: Convenience constructors

    /// `40[{auth}]` (client): ask to join `namespace`, with an optional auth object.
    public static func connect(namespace: String = "/", auth: JSONValue? = nil) -> SocketIOPacket {
        SocketIOPacket(type: .connect, namespace: namespace, data: auth)
    }

    /// `40{"sid":…}` (server): the namespace connect was accepted.
    public static func connected(namespace: String = "/", sid: String) -> SocketIOPacket {
        SocketIOPacket(type: .connect, namespace: namespace, data: ["sid": .string(sid)])
    }

    /// `44{"message":…[,"data":…]}` (server): the namespace connect was refused.
    public static func connectError(namespace: String = "/", message: String, data: JSONValue? = nil) -> SocketIOPacket {
        var members: [(key: String, value: JSONValue)] = [(key: "message", value: .string(message))]
        if let data { members.append((key: "data", value: data)) }
        return SocketIOPacket(type: .connectError, namespace: namespace, data: .object(members))
    }

    /// `41` (either side): leave `namespace`.
    public static func disconnect(namespace: String = "/") -> SocketIOPacket {
        SocketIOPacket(type: .disconnect, namespace: namespace)
    }

    /// `42[<id>]["name",args…]`: an event without binary.
    public static func event(_ name: String, _ arguments: [JSONValue] = [], namespace: String = "/",
                             ackID: Int? = nil) -> SocketIOPacket {
        SocketIOPacket(type: .event, namespace: namespace, ackID: ackID, data: .array([.string(name)] + arguments))
    }

    /// An event whose arguments may hold binary: `45<n>-…` when they do, a plain `42…` otherwise.
    public static func event(_ name: String, binaryArguments: [SocketIOValue], namespace: String = "/",
                             ackID: Int? = nil) -> SocketIOPacket {
        let (json, attachments) = SocketIOBinary.deconstruct(.array([.json(.string(name))] + binaryArguments))
        return SocketIOPacket(type: attachments.isEmpty ? .event : .binaryEvent, namespace: namespace, ackID: ackID,
                              data: json, attachments: attachments)
    }

    /// `43<id>[args…]`: the answer to an event that carried ack id `id`.
    public static func ack(id: Int, _ arguments: [JSONValue] = [], namespace: String = "/") -> SocketIOPacket {
        SocketIOPacket(type: .ack, namespace: namespace, ackID: id, data: .array(arguments))
    }

    /// An ack whose arguments may hold binary: `46<n>-…` when they do, a plain `43…` otherwise.
    public static func ack(id: Int, binaryArguments: [SocketIOValue], namespace: String = "/") -> SocketIOPacket {
        let (json, attachments) = SocketIOBinary.deconstruct(.array(binaryArguments))
        return SocketIOPacket(type: attachments.isEmpty ? .ack : .binaryAck, namespace: namespace, ackID: id,
                              data: json, attachments: attachments)
    }

    // MARK: Accessors

    /// The event name of an event packet (a number as its text, as socket.io allows).
    public var eventName: String? {
        guard type == .event || type == .binaryEvent, let first = data?.arrayValue?.first else { return nil }
        if case .number(let text) = first { return text }
        return first.stringValue
    }

    /// The arguments: an event's array after the name, an ack's whole array, otherwise `[]`.
    public var arguments: [JSONValue] {
        guard let elements = data?.arrayValue else { return [] }
        switch type {
        case .event, .binaryEvent: return Array(elements.dropFirst())
        case .ack, .binaryAck: return elements
        default: return []
        }
    }

    /// The arguments with binary placeholders replaced by their attachments.
    public func resolvedArguments() throws(SocketIOProtocolError) -> [SocketIOValue] {
        try arguments.map { (argument) throws(SocketIOProtocolError) -> SocketIOValue in
            try SocketIOBinary.reconstruct(argument, attachments: attachments)
        }
    }

    /// A connect_error's message: the `message` member, or the payload itself when it is a bare string.
    public var errorMessage: String? {
        guard let data else { return nil }
        return data.stringValue ?? data["message"]?.stringValue
    }

    // MARK: Codec

    /// The Socket.IO text, without the Engine.IO `4` prefix.
    public var encoded: String {
        var out = String(type.rawValue)
        if type.isBinary { out += "\(attachmentCount)-" }
        if namespace != "/" && !namespace.isEmpty { out += namespace + "," }
        if let ackID { out += String(ackID) }
        if let data { data.write(to: &out) }
        return out
    }

    /// The Engine.IO frames carrying this packet: `4<text>`, then one binary frame per attachment.
    public var frames: [EngineIOFrame] {
        [EngineIOPacket.message(encoded).encoded] + attachments.map { EngineIOFrame.binary($0) }
    }

    /// The largest attachment count `decode` accepts.
    public static let maximumAttachmentCount = 1_000

    /// Decodes Socket.IO text (the part after the Engine.IO `4`), checking the payload shape for the type.
    ///
    /// Accepts everything python-socketio and socket.io emit: the namespace is optional (`/` when absent) and
    /// any `?query` suffix on it is dropped; `40`, `40{}`, `40{"token":…}`, `41`, `41{…}` (python's refusal in
    /// always-connect mode), `44"text"` (old servers) and `44{"message":…}` all decode.
    public static func decode(_ text: String) throws(SocketIOProtocolError) -> SocketIOPacket {
        let scalars = Array(text.unicodeScalars)
        guard let first = scalars.first else { throw .emptyPacket }
        guard isASCIIDigit(first), let type = SocketIOPacketType(rawValue: Int(first.value) - 48) else {
            throw .unknownPacketType(String(first))
        }
        var index = 1
        var attachmentCount = 0
        if type.isBinary {
            var digits = ""
            while index < scalars.count, isASCIIDigit(scalars[index]) {
                digits.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard !digits.isEmpty, index < scalars.count, scalars[index] == "-" else {
                throw .invalidAttachmentCount("expected <count>- after the type")
            }
            guard digits.count <= 6, let count = Int(digits), count <= maximumAttachmentCount else {
                throw .invalidAttachmentCount("\(digits) exceeds \(maximumAttachmentCount)")
            }
            attachmentCount = count
            index += 1
        }
        var namespace = "/"
        if index < scalars.count, scalars[index] == "/" {
            var end = index
            while end < scalars.count, scalars[end] != "," { end += 1 }
            var name = String(String.UnicodeScalarView(scalars[index..<end]))
            if let query = name.firstIndex(of: "?") { name = String(name[..<query]) }
            namespace = name
            index = end < scalars.count ? end + 1 : end
        }
        var ackID: Int?
        if index < scalars.count, isASCIIDigit(scalars[index]) {
            var digits = ""
            while index < scalars.count, isASCIIDigit(scalars[index]) {
                digits.unicodeScalars.append(scalars[index])
                index += 1
            }
            guard let id = Int(digits) else { throw .invalidAckID("\(digits.prefix(30)) does not fit") }
            ackID = id
        }
        var data: JSONValue?
        if index < scalars.count {
            let payload = String(String.UnicodeScalarView(scalars[index...]))
            do throws(JSONParseError) {
                data = try JSONValue.parse(payload)
            } catch {
                throw .invalidJSON(error.message)
            }
        }
        if type == .disconnect && ackID != nil { throw .invalidPayload("a disconnect carries no ack id") }
        try validate(type: type, data: data)
        return SocketIOPacket(type: type, namespace: namespace, ackID: ackID, data: data,
                              attachmentCount: attachmentCount)
    }

    private static func isASCIIDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

    private static func validate(type: SocketIOPacketType, data: JSONValue?) throws(SocketIOProtocolError) {
        switch type {
        case .connect:
            if let data, data.members == nil { throw .invalidPayload("connect payload must be an object") }
        case .disconnect:
            // Nothing, or python-socketio's refusal object; a bare number would read back as an ack id.
            if let data, data.members == nil { throw .invalidPayload("disconnect payload must be an object") }
        case .event, .binaryEvent:
            guard let elements = data?.arrayValue, let first = elements.first else {
                throw .invalidPayload("event payload must be a non-empty array")
            }
            switch first {
            case .string, .number: break
            default: throw .invalidPayload("event name must be a string")
            }
        case .ack, .binaryAck:
            guard data?.arrayValue != nil else { throw .invalidPayload("ack payload must be an array") }
        case .connectError:
            switch data {
            case .string?, .object?: break
            default: throw .invalidPayload("connect_error payload must be an object or a string")
            }
        }
    }
}

extension SocketIOPacket: CustomStringConvertible {
    /// The encoded text, with the attachment count when binary.
    public var description: String {
        attachments.isEmpty ? encoded : "\(encoded) +\(attachments.count) attachment(s)"
    }
}
