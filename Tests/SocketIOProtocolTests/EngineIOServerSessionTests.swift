import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// The server session: open packet, ping schedule, pong timeout, payload limit, decoding.
@Suite("Engine.IO server session")
struct EngineIOServerSessionTests {
    private func started(_ configuration: EngineIOServerSession.Configuration = .init()) -> EngineIOServerSession {
        var session = EngineIOServerSession(sid: "sid1", configuration: configuration)
        _ = session.start(at: Fixture.at(0))
        return session
    }

    @Test("start sends the WIRE.md open packet and schedules the first ping")
    func openPacket() {
        var session = EngineIOServerSession(sid: "sid1")
        #expect(session.nextDeadline == nil)
        #expect(session.start(at: Fixture.at(0))
                == [.send(.text(#"0{"sid":"sid1","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#))])
        #expect(session.start(at: Fixture.at(1)).isEmpty)
        #expect(session.nextDeadline == Fixture.at(25))
        let custom = EngineIOServerSession(sid: "s", configuration: .init(pingInterval: .milliseconds(300),
                                                                           pingTimeout: .milliseconds(200), maxPayload: 10))
        #expect(custom.openFrame == .text(#"0{"sid":"s","upgrades":[],"pingInterval":300,"pingTimeout":200,"maxPayload":10}"#))
    }

    @Test("pings every pingInterval after the open packet or the last pong")
    func pingSchedule() {
        var session = started()
        #expect(session.handle(.tick(at: Fixture.at(24))).isEmpty)
        #expect(session.handle(.tick(at: Fixture.at(25))) == [.send(.text("2"))])
        #expect(session.nextDeadline == Fixture.at(45))
        #expect(session.handle(.tick(at: Fixture.at(30))).isEmpty)
        #expect(session.handle(.frameReceived(.text("3"), at: Fixture.at(26))).isEmpty)
        #expect(session.nextDeadline == Fixture.at(51))
        #expect(session.handle(.tick(at: Fixture.at(50))).isEmpty)
        #expect(session.handle(.tick(at: Fixture.at(51))) == [.send(.text("2"))])
        #expect(session.handle(.frameReceived(.text("3"), at: Fixture.at(52))).isEmpty)
        #expect(session.handle(.frameReceived(.text("3"), at: Fixture.at(53))).isEmpty)
        #expect(session.nextDeadline == Fixture.at(77))
    }

    @Test("no pong within pingTimeout: the peer is dead")
    func pongTimeout() {
        var session = started()
        _ = session.handle(.tick(at: Fixture.at(25)))
        #expect(session.handle(.tick(at: Fixture.at(44.9))).isEmpty)
        #expect(session.handle(.tick(at: Fixture.at(45))) == [.closeTransport, .closed(.pingTimeout)])
        #expect(session.isClosed && session.nextDeadline == nil)
        #expect(session.handle(.tick(at: Fixture.at(90))).isEmpty)
        #expect(session.frame(forMessage: "x") == nil)
    }

    @Test("messages and binary frames are delivered; client pings are answered; noop/upgrade ignored")
    func delivery() {
        var session = started()
        #expect(session.handle(.frameReceived(.text(#"40{"token":"t"}"#), at: Fixture.at(1))) == [.deliverText(#"0{"token":"t"}"#)])
        #expect(session.handle(.frameReceived(.binary(Data([1])), at: Fixture.at(1))) == [.deliverBinary(Data([1]))])
        #expect(session.handle(.frameReceived(.text("2probe"), at: Fixture.at(1))) == [.send(.text("3probe"))])
        #expect(session.handle(.frameReceived(.text("6"), at: Fixture.at(1))).isEmpty)
        #expect(session.handle(.frameReceived(.text("5"), at: Fixture.at(1))).isEmpty)
        #expect(session.frame(forMessage: #"2["message",{}]"#) == .text(#"42["message",{}]"#))
        #expect(session.frames(for: .event("typing", [["typing": true]])) == [.text(#"42["typing",{"typing":true}]"#)])
    }

    @Test("oversized frames are refused by closing; exactly maxPayload is fine")
    func payloadLimit() {
        var session = started(.init(maxPayload: 8))
        #expect(session.handle(.frameReceived(.text("41234567"), at: Fixture.at(1))) == [.deliverText("1234567")])
        #expect(session.handle(.frameReceived(.text("412345678"), at: Fixture.at(1)))
                == [.closeTransport, .closed(.payloadTooLarge(size: 9, limit: 8))])
        var binary = started(.init(maxPayload: 2))
        #expect(binary.handle(.frameReceived(.binary(Data(count: 3)), at: Fixture.at(1)))
                == [.closeTransport, .closed(.payloadTooLarge(size: 3, limit: 2))])
    }

    @Test("client close, transport close, server close and protocol errors end the session once")
    func closes() {
        var session = started()
        #expect(session.handle(.frameReceived(.text("1"), at: Fixture.at(1))) == [.closeTransport, .closed(.peerClosed)])
        #expect(session.handle(.transportClosed(reason: "eof")).isEmpty)
        session = started()
        #expect(session.handle(.transportClosed(reason: "eof")) == [.closed(.transportClosed("eof"))])
        session = started()
        #expect(session.handle(.closeRequested) == [.send(.text("1")), .closeTransport, .closed(.requested)])
        session = started()
        #expect(session.handle(.frameReceived(.text(""), at: Fixture.at(1)))
                == [.closeTransport, .closed(.protocolError("empty Engine.IO packet"))])
        session = started()
        #expect(session.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
                == [.closeTransport, .closed(.protocolError("the client sent an open packet"))])
    }
}

/// The server-side Socket.IO decisions and answer frames.
@Suite("Socket.IO server connection")
struct SocketIOServerConnectionTests {
    @Test("connect requests carry the namespace and auth; accept and reject make the WIRE.md frames")
    func connect() throws {
        var connection = SocketIOServerConnection()
        #expect(try connection.receiveText(#"0{"token":"abc"}"#) == .connect(namespace: "/", auth: ["token": "abc"]))
        #expect(try connection.receiveText("0") == .connect(namespace: "/", auth: nil))
        #expect(try connection.receiveText(#"0/admin,{"token":"x"}"#) == .connect(namespace: "/admin", auth: ["token": "x"]))
        #expect(connection.reject(namespace: "/admin", message: "Invalid namespace")
                == [.text(#"44/admin,{"message":"Invalid namespace"}"#)])
        #expect(connection.reject(namespace: "/", message: "unauthorized") == [.text(#"44{"message":"unauthorized"}"#)])
        #expect(!connection.isConnected("/"))
        #expect(connection.accept(namespace: "/", sid: "s1") == [.text(#"40{"sid":"s1"}"#)])
        #expect(connection.isConnected("/") && connection.connectedNamespaces == ["/": "s1"])
    }

    @Test("events and acks on a connected namespace become decisions; others are ignored")
    func events() throws {
        var connection = SocketIOServerConnection()
        #expect(try connection.receiveText(#"2["typing",{}]"#) == .ignored("event on namespace / which is not connected"))
        #expect(connection.emit("message") == [])
        _ = connection.accept(namespace: "/", sid: "s1")
        #expect(try connection.receiveText(#"23["typing",{"conversationId":"c1","typing":true}]"#)
                == .event(SocketIOEvent(name: "typing", arguments: [["conversationId": "c1", "typing": true]], ackID: 3)))
        #expect(connection.ack(id: 3, [["ok": true]]) == [.text(#"433[{"ok":true}]"#)])
        #expect(try connection.receiveText(#"39["pong"]"#) == .ack(namespace: "/", id: 9, arguments: ["pong"], attachments: []))
        #expect(connection.emit("message", [["id": "1"]]) == [.text(#"42["message",{"id":"1"}]"#)])
        #expect(try connection.receiveText(#"4{"message":"x"}"#) == .ignored("connect_error from a client"))
    }

    @Test("binary events are assembled across frames; stray attachments are errors")
    func binary() throws {
        var connection = SocketIOServerConnection()
        _ = connection.accept(namespace: "/", sid: "s1")
        #expect(try connection.receive(.deliverText(#"52-1["upload",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]"#)) == nil)
        #expect(try connection.receive(.deliverBinary(Data([1]))) == nil)
        let decision = try connection.receive(.deliverBinary(Data([2])))
        guard case .event(let event)? = decision else {
            Issue.record("expected an event, got \(String(describing: decision))")
            return
        }
        #expect(event.name == "upload" && event.ackID == 1 && event.attachments == [Data([1]), Data([2])])
        #expect(try event.resolvedArguments() == [.binary(Data([1])), .binary(Data([2]))])
        #expect(throws: SocketIOProtocolError.unexpectedAttachment) { try connection.receiveBinary(Data([3])) }
        #expect(try connection.receive(.closeTransport) == nil)
        _ = try connection.receiveText(#"51-["x",{"_placeholder":true,"num":0}]"#)
        #expect(throws: SocketIOProtocolError.expectedAttachment) { try connection.receiveText(#"2["y"]"#) }
        #expect(throws: SocketIOProtocolError.self) { try connection.receiveText("2") }
    }

    @Test("client 41 leaves the namespace; server disconnect sends 41; reset forgets everything")
    func disconnects() throws {
        var connection = SocketIOServerConnection()
        _ = connection.accept(namespace: "/", sid: "s1")
        #expect(try connection.receiveText("1") == .disconnect(namespace: "/"))
        #expect(!connection.isConnected("/"))
        #expect(try connection.receiveText("1") == .ignored("disconnect from namespace / which is not connected"))
        _ = connection.accept(namespace: "/", sid: "s2")
        #expect(connection.disconnect() == [.text("41")])
        #expect(connection.disconnect() == [])
        _ = connection.accept(namespace: "/", sid: "s3")
        connection.reset()
        #expect(connection.connectedNamespaces.isEmpty)
    }

    @Test("a full server exchange: session + connection against the frames a python client sends")
    func fullExchange() throws {
        var session = EngineIOServerSession(sid: "eio9")
        var connection = SocketIOServerConnection()
        _ = session.start(at: Fixture.at(0))
        var decisions: [SocketIOServerDecision] = []
        for frame in [EngineIOFrame.text(#"40{"token":"abc"}"#), .text(#"421["ping:app"]"#), .text("41")] {
            for output in session.handle(.frameReceived(frame, at: Fixture.at(1))) {
                if let decision = try connection.receive(output) {
                    decisions.append(decision)
                    if case .connect(let namespace, _) = decision { _ = connection.accept(namespace: namespace, sid: "s") }
                }
            }
        }
        #expect(decisions == [.connect(namespace: "/", auth: ["token": "abc"]),
                              .event(SocketIOEvent(name: "ping:app", arguments: [], ackID: 1)),
                              .disconnect(namespace: "/")])
    }
}

/// The server's limits on binary packets, which it checks before buffering any attachment.
@Suite("SocketIOServerConnection binary limits")
struct SocketIOServerConnectionLimitTests {
    @Test("binary headers on a namespace not joined are refused before any attachment is buffered")
    func binaryBeforeJoin() {
        var connection = SocketIOServerConnection()
        #expect(throws: SocketIOProtocolError.notConnected("/")) {
            try connection.receiveText(#"51-["x",{"_placeholder":true,"num":0}]"#)
        }
        #expect(throws: SocketIOProtocolError.unexpectedAttachment) { try connection.receiveBinary(Data([1])) }
        _ = connection.accept(namespace: "/", sid: "s1")
        #expect(throws: SocketIOProtocolError.notConnected("/other")) {
            try connection.receiveText(#"61-/other,3[{"_placeholder":true,"num":0}]"#)
        }
    }

    @Test("attachment count and total bytes are capped")
    func caps() throws {
        var connection = SocketIOServerConnection(maxAttachments: 2, maxAttachmentBytes: 10)
        _ = connection.accept(namespace: "/", sid: "s1")
        #expect(throws: SocketIOProtocolError.self) { try connection.receiveText(#"53-["x"]"#) }
        #expect(try connection.receiveText(#"52-["x",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]"#) == nil)
        #expect(try connection.receiveBinary(Data(count: 6)) == nil)
        #expect(throws: SocketIOProtocolError.self) { try connection.receiveBinary(Data(count: 5)) }
        // The partial packet was dropped; a fresh one within the limits goes through.
        #expect(try connection.receiveText(#"51-["x",{"_placeholder":true,"num":0}]"#) == nil)
        guard case .event(let event)? = try connection.receiveBinary(Data(count: 10)) else {
            Issue.record("expected an event")
            return
        }
        #expect(event.attachments == [Data(count: 10)])
    }
}
