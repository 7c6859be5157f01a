import Foundation
import SwitchboardCore

/// What the server should do about one complete packet from a client.
public enum SocketIOServerDecision: Sendable, Hashable {
    /// The client asks to join `namespace` with this auth object (nil for a bare `40`). Authenticate, then answer
    /// with `SocketIOServerConnection.accept(namespace:sid:)` or `reject(namespace:message:data:)`.
    case connect(namespace: String, auth: JSONValue?)
    /// An event on a connected namespace; answer `ackID` (if any) with `ack(id:_:namespace:)`.
    case event(SocketIOEvent)
    /// The answer to an event the server emitted with ack id `id`.
    case ack(namespace: String, id: Int, arguments: [JSONValue], attachments: [Data])
    /// The client left a connected namespace (it is no longer connected).
    case disconnect(namespace: String)
    /// A well-formed packet with nothing to do (e.g. an event on a namespace the client has not joined).
    case ignored(String)
}

/// The Socket.IO side of one server connection: turns client packets into `SocketIOServerDecision`s (reassembling
/// binary ones) and makes the answer frames, keeping track of which namespaces the client has joined.
///
/// Feed it the `deliverText`/`deliverBinary` outputs of `EngineIOServerSession`. A thrown
/// `SocketIOProtocolError` means the client spoke malformed Socket.IO, sent a binary packet on a namespace it has
/// not joined, or exceeded the attachment limits: close the connection.
public struct SocketIOServerConnection: Sendable {
    /// Joined namespaces and the Socket.IO sid handed out for each.
    public private(set) var connectedNamespaces: [String: String] = [:]
    /// The most attachments one binary packet may announce.
    public let maxAttachments: Int
    /// The most attachment bytes one binary packet may carry in total.
    public let maxAttachmentBytes: Int
    private var assembler = SocketIOBinaryAssembler()
    private var pendingAttachmentBytes = 0

    /// A connection with no namespace joined; binary packets are limited to `maxAttachments` attachments of
    /// `maxAttachmentBytes` bytes in total (pass the session's `maxPayload`).
    public init(maxAttachments: Int = 10, maxAttachmentBytes: Int = 1_000_000) {
        self.maxAttachments = maxAttachments
        self.maxAttachmentBytes = maxAttachmentBytes
    }

    /// Whether the client has joined `namespace`.
    public func isConnected(_ namespace: String) -> Bool { connectedNamespaces[namespace] != nil }

    /// Handles a text message: a decision, or nil while binary attachments are still due.
    public mutating func receiveText(_ text: String) throws(SocketIOProtocolError) -> SocketIOServerDecision? {
        if assembler.isAwaitingAttachments { throw .expectedAttachment }
        let packet = try SocketIOPacket.decode(text)
        if packet.type.isBinary {
            // Refuse before buffering anything: binary packets only count on a joined namespace.
            guard isConnected(packet.namespace) else { throw .notConnected(packet.namespace) }
            guard packet.attachmentCount <= maxAttachments else {
                throw .limitExceeded("\(packet.attachmentCount) attachments exceed \(maxAttachments)")
            }
            pendingAttachmentBytes = 0
        }
        guard let complete = try assembler.begin(packet) else { return nil }
        return decide(complete)
    }

    /// Handles a binary message (an attachment): the decision after the last one, nil before.
    public mutating func receiveBinary(_ data: Data) throws(SocketIOProtocolError) -> SocketIOServerDecision? {
        guard assembler.isAwaitingAttachments else { throw .unexpectedAttachment }
        pendingAttachmentBytes += data.count
        guard pendingAttachmentBytes <= maxAttachmentBytes else {
            assembler.reset()
            throw .limitExceeded("attachments exceed \(maxAttachmentBytes) bytes")
        }
        guard let complete = try assembler.add(data) else { return nil }
        return decide(complete)
    }

    /// Handles one delivery output of `EngineIOServerSession` (other outputs give nil).
    public mutating func receive(_ output: EngineIOServerSession.Output) throws(SocketIOProtocolError) -> SocketIOServerDecision? {
        switch output {
        case .deliverText(let text): return try receiveText(text)
        case .deliverBinary(let data): return try receiveBinary(data)
        default: return nil
        }
    }

    /// Accepts a connect: marks `namespace` joined under `sid` and returns `40[<nsp>,]{"sid":…}`.
    public mutating func accept(namespace: String, sid: String) -> [EngineIOFrame] {
        connectedNamespaces[namespace] = sid
        return SocketIOPacket.connected(namespace: namespace, sid: sid).frames
    }

    /// Refuses a connect: returns `44[<nsp>,]{"message":…[,"data":…]}` (e.g. "unauthorized", "Invalid namespace").
    public func reject(namespace: String, message: String, data: JSONValue? = nil) -> [EngineIOFrame] {
        SocketIOPacket.connectError(namespace: namespace, message: message, data: data).frames
    }

    /// An event to the client (`42…`, or `45…` plus attachments when binary); `[]` if `namespace` is not joined.
    public func emit(_ name: String, _ arguments: [JSONValue] = [], namespace: String = "/",
                     ackID: Int? = nil) -> [EngineIOFrame] {
        guard isConnected(namespace) else { return [] }
        return SocketIOPacket.event(name, arguments, namespace: namespace, ackID: ackID).frames
    }

    /// The answer to the client's event with ack id `id`: `43<id>[…]`.
    public func ack(id: Int, _ arguments: [JSONValue] = [], namespace: String = "/") -> [EngineIOFrame] {
        SocketIOPacket.ack(id: id, arguments, namespace: namespace).frames
    }

    /// Disconnects the client from `namespace`: returns `41[<nsp>,]` and forgets the namespace.
    public mutating func disconnect(namespace: String = "/") -> [EngineIOFrame] {
        guard connectedNamespaces.removeValue(forKey: namespace) != nil else { return [] }
        return SocketIOPacket.disconnect(namespace: namespace).frames
    }

    /// Forgets everything (the Engine.IO session closed).
    public mutating func reset() {
        connectedNamespaces = [:]
        assembler.reset()
        pendingAttachmentBytes = 0
    }

    private mutating func decide(_ packet: SocketIOPacket) -> SocketIOServerDecision {
        let namespace = packet.namespace
        switch packet.type {
        case .connect:
            return .connect(namespace: namespace, auth: packet.data)
        case .disconnect:
            guard connectedNamespaces.removeValue(forKey: namespace) != nil else {
                return .ignored("disconnect from namespace \(namespace) which is not connected")
            }
            return .disconnect(namespace: namespace)
        case .event, .binaryEvent:
            guard isConnected(namespace), let event = SocketIOEvent(packet: packet) else {
                return .ignored("event on namespace \(namespace) which is not connected")
            }
            return .event(event)
        case .ack, .binaryAck:
            guard isConnected(namespace), let id = packet.ackID else {
                return .ignored("ack on namespace \(namespace) which is not connected, or without an id")
            }
            return .ack(namespace: namespace, id: id, arguments: packet.arguments, attachments: packet.attachments)
        case .connectError:
            return .ignored("connect_error from a client")
        }
    }
}
