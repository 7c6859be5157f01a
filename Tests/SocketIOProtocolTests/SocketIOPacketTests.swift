import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// The Socket.IO v5 text codec against python-socketio 5.18's exact output and the socket.io-protocol spec.
@Suite("Socket.IO packets")
struct SocketIOPacketTests {
    /// Packets and the exact text python-socketio's `Packet.encode()` produces for them.
    static let pythonEncodings: [(SocketIOPacket, String)] = [
        (.connect(auth: [:]), "0{}"),
        (.connect(auth: ["token": "abc"]), #"0{"token":"abc"}"#),
        (.connected(sid: "xYz_1"), #"0{"sid":"xYz_1"}"#),
        (.connected(namespace: "/admin", sid: "xYz_1"), #"0/admin,{"sid":"xYz_1"}"#),
        (.disconnect(), "1"),
        (.disconnect(namespace: "/admin"), "1/admin,"),
        (SocketIOPacket(type: .disconnect, data: ["message": "Connection rejected by server"]),
         #"1{"message":"Connection rejected by server"}"#),
        (SocketIOPacket(type: .connectError, data: "Unable to connect"), #"4"Unable to connect""#),
        (.connectError(message: "unauthorized"), #"4{"message":"unauthorized"}"#),
        (.connectError(namespace: "/chat", message: "Invalid namespace"), #"4/chat,{"message":"Invalid namespace"}"#),
        (.event("typing", [["conversationId": "c1", "typing": true]], ackID: 0),
         #"20["typing",{"conversationId":"c1","typing":true}]"#),
        (.ack(id: 12, [["ok": true]]), #"312[{"ok":true}]"#),
        (.ack(id: 3, namespace: "/admin"), "3/admin,3[]"),
    ]

    @Test("encodes exactly as python-socketio does, and decodes its output back")
    func pythonRoundTrips() throws {
        for (packet, text) in Self.pythonEncodings {
            #expect(packet.encoded == text)
            #expect(try SocketIOPacket.decode(text) == packet, "\(text)")
        }
    }

    @Test("the socket.io-protocol spec examples decode")
    func specExamples() throws {
        let connect = try SocketIOPacket.decode("0")
        #expect(connect.type == .connect && connect.namespace == "/" && connect.data == nil)
        let admin = try SocketIOPacket.decode(#"0/admin,{"token":"123"}"#)
        #expect(admin.namespace == "/admin" && admin.data == ["token": "123"])
        let event = try SocketIOPacket.decode(#"2/admin,12["project:delete",123]"#)
        #expect(event.type == .event && event.namespace == "/admin" && event.ackID == 12)
        #expect(event.eventName == "project:delete")
        #expect(event.arguments == [123])
        let ack = try SocketIOPacket.decode("3/admin,12[]")
        #expect(ack.type == .ack && ack.ackID == 12 && ack.arguments.isEmpty)
        let hello = try SocketIOPacket.decode(#"2["hello",1]"#)
        #expect(hello.ackID == nil && hello.eventName == "hello" && hello.arguments == [1])
        let error = try SocketIOPacket.decode(#"4{"message":"Not authorized","data":{"code":7}}"#)
        #expect(error.errorMessage == "Not authorized")
        #expect(error.data?["data"] == ["code": 7])
        #expect(try SocketIOPacket.decode(#"4"Unable to connect""#).errorMessage == "Unable to connect")
    }

    @Test("the WIRE.md frames: 40 with and without auth, 41, 44, events and acks")
    func wireFrames() throws {
        #expect(SocketIOPacket.connect().frames == [.text("40")])
        #expect(SocketIOPacket.connect(auth: ["token": "t0k"]).frames == [.text(#"40{"token":"t0k"}"#)])
        #expect(SocketIOPacket.connected(sid: "s1").frames == [.text(#"40{"sid":"s1"}"#)])
        #expect(SocketIOPacket.disconnect().frames == [.text("41")])
        #expect(SocketIOPacket.connectError(message: "unauthorized").frames == [.text(#"44{"message":"unauthorized"}"#)])
        #expect(SocketIOPacket.connectError(message: "x", data: ["retry": false]).encoded == #"4{"message":"x","data":{"retry":false}}"#)
        #expect(SocketIOPacket.event("ping:app", ackID: 5).frames == [.text(#"425["ping:app"]"#)])
        #expect(SocketIOPacket.ack(id: 5, [["ok": false, "error": "unknown event"]]).frames
                == [.text(#"435[{"ok":false,"error":"unknown event"}]"#)])
    }

    @Test("python's ASCII-escaped non-ASCII text decodes to the same string")
    func unicodeEscapes() throws {
        let packet = try SocketIOPacket.decode(#"2["message",{"text":"caf\u00e9 \ud83d\udc4d"}]"#)
        #expect(packet.arguments == [["text": "café 👍"]])
        let ours = SocketIOPacket.event("message", [["text": "café 👍"]])
        #expect(ours.encoded == #"2["message",{"text":"café 👍"}]"#)
        #expect(try SocketIOPacket.decode(ours.encoded) == packet)
    }

    @Test("namespaces: query suffix dropped, no comma at the end, explicit '/'")
    func namespaces() throws {
        let query = try SocketIOPacket.decode(#"0/admin?x=1,{"token":"t"}"#)
        #expect(query.namespace == "/admin" && query.data == ["token": "t"])
        let bare = try SocketIOPacket.decode("1/admin")
        #expect(bare.type == .disconnect && bare.namespace == "/admin" && bare.data == nil)
        #expect(try SocketIOPacket.decode(#"2/,["a"]"#).namespace == "/")
        #expect(SocketIOPacket.event("a", namespace: "/").encoded == #"2["a"]"#)
    }

    @Test("binary headers carry <n>- and decode with the count but no attachments")
    func binaryHeaders() throws {
        let header = try SocketIOPacket.decode(#"51-["hello",{"_placeholder":true,"num":0}]"#)
        #expect(header.type == .binaryEvent && header.attachmentCount == 1 && header.attachments.isEmpty)
        let python = try SocketIOPacket.decode(#"52-7["upload",{"_placeholder":true,"num":0},{"more":[{"_placeholder":true,"num":1},1.5]}]"#)
        #expect(python.ackID == 7 && python.attachmentCount == 2 && python.eventName == "upload")
        let ack = try SocketIOPacket.decode(#"61-/admin,13[{"_placeholder":true,"num":0}]"#)
        #expect(ack.type == .binaryAck && ack.namespace == "/admin" && ack.ackID == 13 && ack.attachmentCount == 1)
        #expect(ack.encoded == #"61-/admin,13[{"_placeholder":true,"num":0}]"#)
        let zero = SocketIOPacket(type: .binaryEvent, data: ["a"])
        #expect(zero.encoded == #"50-["a"]"#)
    }

    @Test("numeric event names are accepted (socket.io allows them)")
    func numericEventName() throws {
        #expect(try SocketIOPacket.decode("2[42,true]").eventName == "42")
    }

    @Test("malformed packets throw typed errors")
    func malformed() {
        let cases: [(String, SocketIOProtocolError)] = [
            ("", .emptyPacket),
            ("7", .unknownPacketType("7")),
            ("x[]", .unknownPacketType("x")),
            (#"5["a"]"#, .invalidAttachmentCount("expected <count>- after the type")),
            (#"5x-["a"]"#, .invalidAttachmentCount("expected <count>- after the type")),
            (#"51["a"]"#, .invalidAttachmentCount("expected <count>- after the type")),
            (#"29999999999999999999999["a"]"#, .invalidAckID("9999999999999999999999 does not fit")),
            (#"2"a""#, .invalidPayload("event payload must be a non-empty array")),
            ("2[]", .invalidPayload("event payload must be a non-empty array")),
            ("2", .invalidPayload("event payload must be a non-empty array")),
            ("2[null]", .invalidPayload("event name must be a string")),
            ("3", .invalidPayload("ack payload must be an array")),
            (#"3{"a":1}"#, .invalidPayload("ack payload must be an array")),
            (#"0"token""#, .invalidPayload("connect payload must be an object")),
            ("4", .invalidPayload("connect_error payload must be an object or a string")),
            ("4[1]", .invalidPayload("connect_error payload must be an object or a string")),
        ]
        for (text, expected) in cases {
            #expect(throws: expected, "\(text)") { try SocketIOPacket.decode(text) }
        }
        #expect(throws: SocketIOProtocolError.self) { try SocketIOPacket.decode("51234567-[\"a\"]") }
        for text in ["2{", #"2["a"] trailing"#, "0{'a':1}"] {
            do throws(SocketIOProtocolError) {
                _ = try SocketIOPacket.decode(text)
                Issue.record("\(text) decoded")
            } catch {
                guard case .invalidJSON = error else {
                    Issue.record("\(text): \(error)")
                    continue
                }
            }
        }
    }

    @Test("accessors: arguments of acks, no arguments for other types, descriptions")
    func accessors() {
        #expect(SocketIOPacket.ack(id: 1, [1, 2]).arguments == [1, 2])
        #expect(SocketIOPacket.connected(sid: "s").arguments.isEmpty)
        #expect(SocketIOPacket.connected(sid: "s").eventName == nil)
        #expect(SocketIOPacket(type: .binaryEvent, data: ["a"], attachments: [Data([1])]).description.contains("+1"))
        #expect(SocketIOPacketType.allCases.filter(\.isBinary) == [.binaryEvent, .binaryAck])
    }
}
