import Foundation
import SocketIOProtocol
import SwitchboardCore

/// Engine.IO v4 and Socket.IO v5 packets, as both the client and the server read them.
enum SocketIOFuzzing {
    /// One Engine.IO frame: the first byte picks text (even) or binary (odd), the rest is the frame.
    static func runEngineIOPacket(_ bytes: [UInt8]) throws {
        let name = "engineio-packet"
        guard let kind = bytes.first else { return }
        let body = Array(bytes.dropFirst())
        let frame: EngineIOFrame = kind & 1 == 0 ? .text(String(decoding: body, as: UTF8.self)) : .binary(Data(body))
        _ = frame.byteCount
        guard let packet = try? EngineIOPacket.decode(frame) else { return }
        let again: EngineIOPacket
        do {
            again = try EngineIOPacket.decode(packet.encoded)
        } catch {
            throw FuzzFailure(target: name, message: "\(packet) encoded as \(packet.encoded) does not decode: \(error)")
        }
        try expect(again == packet, name, "\(packet) came back as \(again)")
        if case .open(let handshake) = packet {
            let decoded = try? EngineIOHandshake.decode(handshake.json)
            try expect(decoded == handshake, name, "handshake \(handshake) came back as \(String(describing: decoded))")
        }
    }

    /// One Socket.IO packet's text, then its attachments: the text ends at the first 0x00 byte, and each further
    /// 0x00 starts another attachment. Decoded packets must round-trip; complete ones must resolve their binary
    /// arguments, and splitting those out again must give the same arguments back.
    static func runSocketIOPacket(_ bytes: [UInt8]) throws {
        let name = "socketio-packet"
        let pieces = split(bytes, at: 0)
        let text = String(decoding: pieces[0], as: UTF8.self)
        guard let packet = try? SocketIOPacket.decode(text) else { return }
        _ = packet.description
        let encoded = packet.encoded
        let again: SocketIOPacket
        do {
            again = try SocketIOPacket.decode(encoded)
        } catch {
            throw FuzzFailure(target: name, message: "\(text) decoded as \(fields(packet)), but its encoding \(encoded) does not: \(error)")
        }
        try expect(again == packet, name, "\(text) decoded as \(fields(packet)), its encoding \(encoded) as \(fields(again))")

        var assembler = SocketIOBinaryAssembler()
        var complete: SocketIOPacket?
        do {
            complete = try assembler.begin(packet)
            for attachment in pieces.dropFirst() where complete == nil {
                complete = try assembler.add(Data(attachment))
            }
        } catch {
            return
        }
        guard let complete else {
            try expect(assembler.isAwaitingAttachments, name, "an incomplete packet that the assembler does not wait for")
            return
        }
        _ = complete.eventName
        _ = complete.errorMessage
        _ = SocketIOEvent(packet: complete)
        guard let resolved = try? complete.resolvedArguments() else { return }
        let (json, attachments) = SocketIOBinary.deconstruct(.array(resolved))
        let rebuilt: SocketIOValue
        do {
            rebuilt = try SocketIOBinary.reconstruct(json, attachments: attachments)
        } catch {
            throw FuzzFailure(target: name, message: "deconstructed \(json) does not reconstruct: \(error)")
        }
        try expect(rebuilt == .array(resolved), name, "binary arguments \(resolved) came back as \(rebuilt)")
        for frame in complete.frames { _ = frame.byteCount }
    }

    /// Every field of a packet, for messages (its `description` is its encoding, which hides the difference).
    private static func fields(_ packet: SocketIOPacket) -> String {
        "type \(packet.type), namespace \(packet.namespace), ack id \(String(describing: packet.ackID)), "
            + "data \(packet.data?.serialized ?? "none"), \(packet.attachmentCount) attachment(s)"
    }
}
