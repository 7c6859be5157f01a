import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// The Socket.IO client machine: namespace connect, events, acks, disconnects.
@Suite("Socket.IO client machine")
struct SocketIOClientMachineTests {
    private typealias Output = SocketIOClientMachine.Output

    private func machine(auth: JSONValue? = ["token": "t0k"]) -> SocketIOClientMachine {
        SocketIOClientMachine(configuration: .init(auth: auth))
    }

    private func receive(_ machine: inout SocketIOClientMachine, _ text: String, at seconds: Double = 2) -> [Output] {
        machine.handle(.frameReceived(.text(text), at: Fixture.at(seconds)))
    }

    private func connected(auth: JSONValue? = ["token": "t0k"]) -> SocketIOClientMachine {
        var client = machine(auth: auth)
        _ = client.handle(.transportOpened(at: Fixture.at(0)))
        _ = client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        _ = receive(&client, #"40{"sid":"sio1"}"#)
        return client
    }

    @Test("after the Engine.IO open packet it sends 40 with the auth object; 40{sid} connects")
    func connect() {
        var client = machine()
        #expect(client.handle(.transportOpened(at: Fixture.at(0))).isEmpty)
        #expect(client.phase == .handshaking)
        let outputs = client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(outputs == [.engineOpened(EngineIOHandshake(sid: "eio1")), .send(.text(#"40{"token":"t0k"}"#))])
        #expect(client.phase == .connecting)
        #expect(receive(&client, #"40{"sid":"sio1"}"#) == [.connected(sid: "sio1")])
        #expect(client.isConnected && client.phase == .connected(sid: "sio1"))
        #expect(client.handshake?.sid == "eio1")
    }

    @Test("without auth the connect packet is a bare 40; setAuth changes the next one")
    func bareConnect() {
        var client = machine(auth: nil)
        _ = client.handle(.transportOpened(at: Fixture.at(0)))
        #expect(client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1))).last == .send(.text("40")))
        client.setAuth(["token": "new"])
        _ = client.handle(.transportOpened(at: Fixture.at(5)))
        #expect(client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(6))).last
                == .send(.text(#"40{"token":"new"}"#)))
    }

    @Test("44 fails the connection with the server's message, without retry; the old string form too")
    func connectError() {
        var client = machine()
        _ = client.handle(.transportOpened(at: Fixture.at(0)))
        _ = client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        let outputs = receive(&client, #"44{"message":"unauthorized"}"#)
        #expect(outputs == [.send(.text("1")), .closeTransport, .closed(.connectError(message: "unauthorized", data: nil))])
        #expect(client.phase == .idle)
        #expect(!SocketIOCloseReason.connectError(message: "unauthorized", data: nil).shouldReconnect)
        var old = machine()
        _ = old.handle(.transportOpened(at: Fixture.at(0)))
        _ = old.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(receive(&old, #"44"Unable to connect""#).last == .closed(.connectError(message: "Unable to connect", data: nil)))
        var withData = machine()
        _ = withData.handle(.transportOpened(at: Fixture.at(0)))
        _ = withData.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(receive(&withData, #"44{"message":"no","data":{"retry":1}}"#).last
                == .closed(.connectError(message: "no", data: ["retry": 1])))
    }

    @Test("no answer to 40 within connectTimeout closes with connectTimeout")
    func connectTimeout() {
        var client = machine()
        _ = client.handle(.transportOpened(at: Fixture.at(0)))
        _ = client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(client.nextDeadline == Fixture.at(21))
        #expect(client.handle(.tick(at: Fixture.at(20))).isEmpty)
        #expect(client.handle(.tick(at: Fixture.at(21))) == [.send(.text("1")), .closeTransport, .closed(.connectTimeout)])
        #expect(SocketIOCloseReason.connectTimeout.shouldReconnect)
    }

    @Test("incoming events are delivered with name and args; an ack id is answered once through ack(id:)")
    func events() throws {
        var client = connected()
        let message: JSONValue = ["id": "42", "text": "hi"]
        #expect(receive(&client, #"42["message",{"id":"42","text":"hi"}]"#)
                == [.event(SocketIOEvent(name: "message", arguments: [message]))])
        #expect(receive(&client, #"427["question",1]"#)
                == [.event(SocketIOEvent(name: "question", arguments: [1], ackID: 7))])
        #expect(try client.ack(id: 7, [["ok": true]]) == [.send(.text(#"437[{"ok":true}]"#))])
        #expect(throws: SocketIOClientError.unknownAckID(7)) { try client.ack(id: 7) }
        #expect(throws: SocketIOClientError.unknownAckID(99)) { try client.ack(id: 99) }
        #expect(receive(&client, #"42/other,["x"]"#).isEmpty)
    }

    @Test("binary events are reassembled from the header and attachment frames")
    func binaryEvents() throws {
        var client = connected()
        #expect(receive(&client, #"451-["file",{"_placeholder":true,"num":0}]"#).isEmpty)
        let outputs = client.handle(.frameReceived(.binary(Data([1, 2])), at: Fixture.at(3)))
        guard case .event(let event)? = outputs.first, outputs.count == 1 else {
            Issue.record("expected one event, got \(outputs)")
            return
        }
        #expect(event.name == "file" && event.attachments == [Data([1, 2])])
        #expect(try event.resolvedArguments() == [.binary(Data([1, 2]))])
        let stray = client.handle(.frameReceived(.binary(Data([3])), at: Fixture.at(4)))
        #expect(stray.last == .closed(.engine(.protocolError("unexpected binary attachment"))))
    }

    @Test("a text packet while attachments are due is a protocol error")
    func textMidAssembly() {
        var client = connected()
        _ = receive(&client, #"451-["file",{"_placeholder":true,"num":0}]"#)
        #expect(receive(&client, #"42["x"]"#).last
                == .closed(.engine(.protocolError("expected a binary attachment, got a text packet"))))
    }

    @Test("emit allocates increasing ack ids from 0; 43<id> resolves them; unknown acks are ignored")
    func emitWithAck() throws {
        var client = connected()
        let plain = try client.emit("typing", [["conversationId": "c1", "typing": true]])
        #expect(plain.ackID == nil)
        #expect(plain.outputs == [.send(.text(#"42["typing",{"conversationId":"c1","typing":true}]"#))])
        let first = try client.emit("ping:app", ack: true)
        let second = try client.emit("typing", [["conversationId": "c1", "typing": false]], ack: true)
        #expect(first.ackID == 0 && second.ackID == 1)
        #expect(first.outputs == [.send(.text(#"420["ping:app"]"#))])
        #expect(second.outputs == [.send(.text(#"421["typing",{"conversationId":"c1","typing":false}]"#))])
        #expect(client.pendingAckIDs == [0, 1])
        #expect(receive(&client, #"431[{"ok":true}]"#) == [.ackReceived(id: 1, arguments: [["ok": true]], attachments: [])])
        #expect(receive(&client, #"431[{"ok":true}]"#).isEmpty)
        #expect(receive(&client, #"4355[]"#).isEmpty)
        #expect(client.pendingAckIDs == [0])
        let binary = try client.emit("blob", binaryArguments: [.binary(Data([9]))], ack: true)
        #expect(binary.ackID == 2)
        #expect(binary.outputs == [.send(.text(#"451-2["blob",{"_placeholder":true,"num":0}]"#)), .send(.binary(Data([9])))])
    }

    @Test("binary acks resolve after their attachments")
    func binaryAck() throws {
        var client = connected()
        _ = try client.emit("get", ack: true)
        #expect(receive(&client, #"461-0[{"_placeholder":true,"num":0}]"#).isEmpty)
        #expect(client.handle(.frameReceived(.binary(Data([5])), at: Fixture.at(3)))
                == [.ackReceived(id: 0, arguments: [["_placeholder": true, "num": 0]], attachments: [Data([5])])])
    }

    @Test("ack deadlines fail pending acks on tick and feed nextDeadline")
    func ackTimeout() throws {
        var client = connected()
        _ = try client.emit("slow", ack: true, ackDeadline: Fixture.at(5))
        _ = try client.emit("slower", ack: true, ackDeadline: Fixture.at(8))
        _ = try client.emit("patient", ack: true)
        #expect(client.nextDeadline == Fixture.at(5))
        #expect(client.handle(.tick(at: Fixture.at(4))).isEmpty)
        #expect(client.handle(.tick(at: Fixture.at(8))) == [.ackFailed(id: 0, .timedOut), .ackFailed(id: 1, .timedOut)])
        #expect(client.pendingAckIDs == [2])
        #expect(client.nextDeadline == Fixture.at(46))
        #expect(receive(&client, "430[]").isEmpty)
    }

    @Test("pending acks fail when the connection drops, then closed is reported")
    func acksFailOnDrop() throws {
        var client = connected()
        _ = try client.emit("a", ack: true)
        _ = try client.emit("b", ack: true)
        #expect(client.handle(.transportClosed(reason: "reset"))
                == [.ackFailed(id: 0, .disconnected), .ackFailed(id: 1, .disconnected),
                    .closed(.engine(.transportClosed("reset")))])
        #expect(client.pendingAckIDs.isEmpty)
        #expect(throws: SocketIOClientError.notConnected) { try client.emit("c") }
        #expect(SocketIOCloseReason.engine(.transportClosed("reset")).shouldReconnect)
    }

    @Test("a dead connection (no ping) fails pending acks too; ack ids keep growing after a reconnect")
    func pingTimeoutAndReconnect() throws {
        var client = connected()
        _ = try client.emit("a", ack: true)
        #expect(client.handle(.tick(at: Fixture.at(46))) == [.closeTransport, .ackFailed(id: 0, .disconnected), .closed(.engine(.pingTimeout))])
        _ = client.handle(.transportOpened(at: Fixture.at(50)))
        _ = client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(51)))
        _ = receive(&client, #"40{"sid":"sio2"}"#, at: 52)
        #expect(client.phase == .connected(sid: "sio2"))
        #expect(try client.emit("b", ack: true).ackID == 1)
        #expect(client.handle(.frameReceived(.text("2"), at: Fixture.at(60))) == [.send(.text("3"))])
    }

    @Test("server 41 closes with serverDisconnect (no reconnect); disconnectRequested sends 41 then 1")
    func disconnects() throws {
        var client = connected()
        _ = try client.emit("a", ack: true)
        #expect(receive(&client, "41") == [.send(.text("1")), .closeTransport, .ackFailed(id: 0, .disconnected),
                                          .closed(.serverDisconnect)])
        #expect(!SocketIOCloseReason.serverDisconnect.shouldReconnect)
        client = connected()
        #expect(client.handle(.disconnectRequested) == [.send(.text("41")), .send(.text("1")), .closeTransport,
                                                        .closed(.clientDisconnect)])
        #expect(client.handle(.disconnectRequested).isEmpty)
        #expect(!SocketIOCloseReason.clientDisconnect.shouldReconnect)
    }

    @Test("malformed Socket.IO text closes with a protocol error; events before connect are dropped")
    func malformed() {
        var client = connected()
        #expect(receive(&client, "4x").last == .closed(.engine(.protocolError("unknown Socket.IO packet type \"x\""))))
        var early = machine()
        _ = early.handle(.transportOpened(at: Fixture.at(0)))
        _ = early.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(receive(&early, #"42["x"]"#).isEmpty)
        #expect(throws: SocketIOClientError.notConnected) { try early.ack(id: 1) }
    }

    @Test("a namespace other than / uses its prefix everywhere")
    func customNamespace() throws {
        var client = SocketIOClientMachine(configuration: .init(namespace: "/admin", auth: nil))
        _ = client.handle(.transportOpened(at: Fixture.at(0)))
        #expect(client.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1))).last == .send(.text("40/admin,")))
        #expect(receive(&client, #"40{"sid":"root"}"#).isEmpty)
        #expect(receive(&client, #"40/admin,{"sid":"a1"}"#) == [.connected(sid: "a1")])
        #expect(try client.emit("x", ack: true).outputs == [.send(.text(#"42/admin,0["x"]"#))])
        #expect(client.handle(.disconnectRequested).first == .send(.text("41/admin,")))
    }
}
