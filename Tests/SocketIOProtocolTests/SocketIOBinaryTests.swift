import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// Binary arguments: placeholders, deconstruction, reassembly.
@Suite("Socket.IO binary")
struct SocketIOBinaryTests {
    private let upload: [SocketIOValue] = [
        .binary(Data([1, 2, 3])),
        .object([(key: "more", value: .array([.binary(Data([0xFF])), .json(1.5)]))]),
    ]

    @Test("deconstruct numbers binary leaves depth first, exactly as python-socketio")
    func deconstruct() {
        let packet = SocketIOPacket.event("upload", binaryArguments: upload, ackID: 7)
        #expect(packet.type == .binaryEvent)
        #expect(packet.encoded == #"52-7["upload",{"_placeholder":true,"num":0},{"more":[{"_placeholder":true,"num":1},1.5]}]"#)
        #expect(packet.attachments == [Data([1, 2, 3]), Data([0xFF])])
        #expect(packet.frames == [.text(#"452-7["upload",{"_placeholder":true,"num":0},{"more":[{"_placeholder":true,"num":1},1.5]}]"#),
                                  .binary(Data([1, 2, 3])), .binary(Data([0xFF]))])
        let (json, attachments) = SocketIOBinary.deconstruct(.binary(Data([9])))
        #expect(json == ["_placeholder": true, "num": 0])
        #expect(attachments == [Data([9])])
    }

    @Test("arguments without binary make plain text packets")
    func noBinary() {
        #expect(SocketIOPacket.event("a", binaryArguments: [.json(1)]).encoded == #"2["a",1]"#)
        #expect(SocketIOPacket.ack(id: 2, binaryArguments: [.json("x")]).encoded == #"32["x"]"#)
        let binaryAck = SocketIOPacket.ack(id: 13, binaryArguments: [.binary(Data([0]))], namespace: "/admin")
        #expect(binaryAck.encoded == #"61-/admin,13[{"_placeholder":true,"num":0}]"#)
    }

    @Test("the assembler takes the header then N binary frames and yields the packet; arguments resolve")
    func assemble() throws {
        var assembler = SocketIOBinaryAssembler()
        let header = try SocketIOPacket.decode(#"52-7["upload",{"_placeholder":true,"num":0},{"more":[{"_placeholder":true,"num":1},1.5]}]"#)
        #expect(try assembler.begin(header) == nil)
        #expect(assembler.isAwaitingAttachments)
        #expect(try assembler.add(Data([1, 2, 3])) == nil)
        let packet = try #require(try assembler.add(Data([0xFF])))
        #expect(!assembler.isAwaitingAttachments)
        #expect(packet.attachments == [Data([1, 2, 3]), Data([0xFF])])
        #expect(try packet.resolvedArguments() == upload)
        let event = try #require(SocketIOEvent(packet: packet))
        #expect(event.name == "upload" && event.ackID == 7)
        #expect(try event.resolvedArguments() == upload)
        #expect(packet == SocketIOPacket.event("upload", binaryArguments: upload, ackID: 7))
    }

    @Test("text packets and zero-attachment binary packets pass straight through")
    func passThrough() throws {
        var assembler = SocketIOBinaryAssembler()
        let text = SocketIOPacket.event("a")
        #expect(try assembler.begin(text) == text)
        let zero = try SocketIOPacket.decode(#"50-["a"]"#)
        #expect(try assembler.begin(zero) == zero)
        #expect(throws: SocketIOProtocolError.invalidPlaceholder("num 0 with 0 attachment(s)")) {
            try assembler.begin(SocketIOPacket.decode(#"50-["a",{"_placeholder":true,"num":0}]"#))
        }
    }

    @Test("unexpected attachments, a new header mid-assembly and dangling placeholders are errors")
    func errors() throws {
        var assembler = SocketIOBinaryAssembler()
        #expect(throws: SocketIOProtocolError.unexpectedAttachment) { try assembler.add(Data([1])) }
        _ = try assembler.begin(SocketIOPacket.decode(#"51-["a",{"_placeholder":true,"num":3}]"#))
        #expect(throws: SocketIOProtocolError.expectedAttachment) { try assembler.begin(SocketIOPacket.event("b")) }
        #expect(throws: SocketIOProtocolError.invalidPlaceholder("num 3 with 1 attachment(s)")) {
            try assembler.add(Data([1]))
        }
        #expect(!assembler.isAwaitingAttachments)
        _ = try assembler.begin(SocketIOPacket.decode(#"51-["a",{"_placeholder":true,"num":0}]"#))
        assembler.reset()
        #expect(throws: SocketIOProtocolError.unexpectedAttachment) { try assembler.add(Data([1])) }
        #expect(throws: SocketIOProtocolError.invalidPlaceholder("num -1 with 1 attachment(s)")) {
            try SocketIOBinary.reconstruct(["_placeholder": true, "num": -1], attachments: [Data()])
        }
    }

    @Test("reconstruct keeps binary-free subtrees as JSON and objects that only look similar untouched")
    func reconstruct() throws {
        let json: JSONValue = ["a", ["_placeholder": false, "num": 0], ["x": ["_placeholder": true, "num": 0]]]
        let value = try SocketIOBinary.reconstruct(json, attachments: [Data([7])])
        guard case .array(let elements) = value else {
            Issue.record("expected an array")
            return
        }
        #expect(elements[0] == .json("a"))
        #expect(elements[1] == .json(["_placeholder": false, "num": 0]))
        #expect(elements[2] == .object([(key: "x", value: .binary(Data([7])))]))
        #expect(value.containsBinary)
        #expect(value.jsonValue == nil)
        #expect(SocketIOValue.array([.json(1), .object([(key: "k", value: .json("v"))])]).jsonValue == [1, ["k": "v"]])
        #expect(elements[2].dataValue == nil)
        #expect(SocketIOValue.binary(Data([1])).dataValue == Data([1]))
    }
}
