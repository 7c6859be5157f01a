import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// The limits the Socket.IO decoder keeps against hostile packets: JSON depth (`JSONValue.maximumDepth`),
/// attachment count (`SocketIOPacket.maximumAttachmentCount`) and ack ids that do not fit an `Int`.
/// (Packets are the Socket.IO text after Engine.IO's `4`.)
@Suite("Socket.IO packet limits")
struct SocketIOLimitsTests {
    /// `depth` nested arrays.
    private func nested(_ depth: Int) -> String {
        String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
    }

    @Test("a disconnect carries nothing or a refusal object: a number or an ack id would read back differently")
    func disconnectPayload() throws {
        // Found by fuzzing: `1` + tabs + `221` decoded as a disconnect with data 221, was encoded as `1221`, and that
        // read back as ack id 221.
        for text in ["1\t\t221", "1221", "1/chat,5", "1\"bye\""] {
            #expect(throws: SocketIOProtocolError.self, "\(text)") { try SocketIOPacket.decode(text) }
        }
        for text in ["1", "1/chat,", #"1{"message":"refused"}"#] {
            let packet = try SocketIOPacket.decode(text)
            #expect(packet.type == .disconnect)
            #expect(try SocketIOPacket.decode(packet.encoded) == packet)
        }
    }

    @Test("an event nested 10,000 deep is invalid JSON, not a stack overflow")
    func deepEvent() throws {
        for text in [#"2["e","# + nested(10_000) + "]", #"3/chat,7"# + nested(10_000), "0" + String(repeating: #"{"a":"#, count: 10_000)] {
            let error = #expect(throws: SocketIOProtocolError.self) { try SocketIOPacket.decode(text) }
            #expect(error.map { if case .invalidJSON = $0 { true } else { false } } == true, "\(String(describing: error))")
        }
        // As deep as JSON allows is still an event.
        let deepest = #"2["e","# + nested(JSONValue.maximumDepth - 1) + "]"
        #expect(try SocketIOPacket.decode(deepest).eventName == "e")
    }

    @Test("attachment counts above the limit and ack ids of 100,000 digits are refused")
    func countsAndIDs() {
        let count = SocketIOPacket.maximumAttachmentCount + 1
        #expect(throws: SocketIOProtocolError.invalidAttachmentCount("\(count) exceeds \(SocketIOPacket.maximumAttachmentCount)")) {
            try SocketIOPacket.decode("5\(count)-[\"e\"]")
        }
        let hugeCount = #expect(throws: SocketIOProtocolError.self) {
            try SocketIOPacket.decode("5" + String(repeating: "9", count: 100_000) + "-[\"e\"]")
        }
        #expect(hugeCount.map { if case .invalidAttachmentCount = $0 { true } else { false } } == true)
        let hugeID = #expect(throws: SocketIOProtocolError.self) {
            try SocketIOPacket.decode("2" + String(repeating: "7", count: 100_000) + "[\"e\"]")
        }
        #expect(hugeID.map { if case .invalidAckID = $0 { true } else { false } } == true)
    }

    @Test("a placeholder deep inside a binary event is checked without trouble")
    func deepPlaceholder() throws {
        let depth = JSONValue.maximumDepth - 3
        let text = "51-[\"e\"," + String(repeating: "[", count: depth) + #"{"_placeholder":true,"num":0}"#
            + String(repeating: "]", count: depth) + "]"
        var assembler = SocketIOBinaryAssembler()
        #expect(try assembler.begin(try SocketIOPacket.decode(text)) == nil)
        let packet = try #require(try assembler.add(Data([1, 2, 3])))
        #expect(packet.attachments == [Data([1, 2, 3])])
    }
}
