import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// Shared fixtures: a fixed origin instant (only differences matter) and a handshake frame.
enum Fixture {
    static let origin = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { origin + .milliseconds(Int64(seconds * 1000)) }
    static let openFrame = EngineIOFrame.text(#"0{"sid":"eio1","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#)
}

/// The Engine.IO client machine: handshake timeout, ping/pong, dead-connection detection, closes.
@Suite("Engine.IO client machine")
struct EngineIOClientMachineTests {
    private func opened() -> EngineIOClientMachine {
        var machine = EngineIOClientMachine()
        _ = machine.handle(.transportOpened(at: Fixture.at(0)))
        _ = machine.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        return machine
    }

    @Test("the open packet opens the connection and starts the ping deadline")
    func handshake() {
        var machine = EngineIOClientMachine()
        #expect(machine.nextDeadline == nil)
        #expect(machine.handle(.transportOpened(at: Fixture.at(0))).isEmpty)
        #expect(machine.nextDeadline == Fixture.at(10))
        #expect(machine.frame(forMessage: "x") == nil)
        let outputs = machine.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(1)))
        #expect(outputs == [.opened(EngineIOHandshake(sid: "eio1"))])
        #expect(machine.isOpen)
        #expect(machine.nextDeadline == Fixture.at(46))
        #expect(machine.frame(forMessage: #"2["a"]"#) == .text(#"42["a"]"#))
    }

    @Test("no open packet within 10 s: closes with handshakeTimeout (configurable)")
    func handshakeTimeout() {
        var machine = EngineIOClientMachine()
        _ = machine.handle(.transportOpened(at: Fixture.at(0)))
        #expect(machine.handle(.tick(at: Fixture.at(9.999))).isEmpty)
        #expect(machine.handle(.tick(at: Fixture.at(10))) == [.closeTransport, .closed(.handshakeTimeout)])
        #expect(machine.state == .idle)
        #expect(machine.handle(.tick(at: Fixture.at(20))).isEmpty)
        var quick = EngineIOClientMachine(configuration: .init(handshakeTimeout: .seconds(2)))
        _ = quick.handle(.transportOpened(at: Fixture.at(0)))
        #expect(quick.nextDeadline == Fixture.at(2))
        #expect(quick.handle(.tick(at: Fixture.at(2))) == [.closeTransport, .closed(.handshakeTimeout)])
    }

    @Test("every ping is answered with a pong echoing its data, and pushes the deadline")
    func pingPong() {
        var machine = opened()
        #expect(machine.handle(.frameReceived(.text("2"), at: Fixture.at(26))) == [.send(.text("3"))])
        #expect(machine.nextDeadline == Fixture.at(71))
        #expect(machine.handle(.frameReceived(.text("2probe"), at: Fixture.at(30))) == [.send(.text("3probe"))])
        #expect(machine.lastPingAt == Fixture.at(30))
        #expect(machine.handle(.tick(at: Fixture.at(74))).isEmpty)
    }

    @Test("no ping within pingInterval + pingTimeout of the last one (or of open): dead")
    func deadConnection() {
        var machine = opened()
        #expect(machine.handle(.tick(at: Fixture.at(45.9))).isEmpty)
        #expect(machine.handle(.tick(at: Fixture.at(46))) == [.closeTransport, .closed(.pingTimeout)])
        var pinged = opened()
        _ = pinged.handle(.frameReceived(.text("2"), at: Fixture.at(26)))
        #expect(pinged.handle(.tick(at: Fixture.at(70))).isEmpty)
        #expect(pinged.handle(.tick(at: Fixture.at(71))) == [.closeTransport, .closed(.pingTimeout)])
    }

    @Test("messages and binary frames are delivered; noop, pong and upgrade are ignored")
    func delivery() {
        var machine = opened()
        #expect(machine.handle(.frameReceived(.text(#"42["a"]"#), at: Fixture.at(2))) == [.deliverText(#"2["a"]"#)])
        #expect(machine.handle(.frameReceived(.binary(Data([1])), at: Fixture.at(2))) == [.deliverBinary(Data([1]))])
        for text in ["6", "3", "5"] {
            #expect(machine.handle(.frameReceived(.text(text), at: Fixture.at(2))).isEmpty)
        }
    }

    @Test("server close, transport close, close requests and protocol errors each end the connection once")
    func closes() {
        var machine = opened()
        #expect(machine.handle(.frameReceived(.text("1"), at: Fixture.at(2))) == [.closeTransport, .closed(.peerClosed)])
        #expect(machine.handle(.transportClosed(reason: "eof")).isEmpty)
        machine = opened()
        #expect(machine.handle(.transportClosed(reason: "eof")) == [.closed(.transportClosed("eof"))])
        machine = opened()
        #expect(machine.handle(.closeRequested) == [.send(.text("1")), .closeTransport, .closed(.requested)])
        #expect(machine.handle(.closeRequested).isEmpty)
        machine = opened()
        #expect(machine.handle(.frameReceived(.text("9"), at: Fixture.at(2)))
                == [.closeTransport, .closed(.protocolError("unknown Engine.IO packet type \"9\""))])
        machine = opened()
        #expect(machine.handle(.frameReceived(Fixture.openFrame, at: Fixture.at(2)))
                == [.closeTransport, .closed(.protocolError("a second open packet"))])
        var early = EngineIOClientMachine()
        _ = early.handle(.transportOpened(at: Fixture.at(0)))
        #expect(early.handle(.frameReceived(.text("40"), at: Fixture.at(1)))
                == [.closeTransport, .closed(.protocolError("expected the open packet first"))])
        _ = early.handle(.transportOpened(at: Fixture.at(5)))
        #expect(early.handle(.closeRequested) == [.closeTransport, .closed(.requested)])
    }

    @Test("frames before any transport are ignored; a new transport restarts the machine")
    func restart() {
        var machine = EngineIOClientMachine()
        #expect(machine.handle(.frameReceived(.text("2"), at: Fixture.at(0))).isEmpty)
        #expect(machine.handle(.transportClosed(reason: "x")).isEmpty)
        machine = opened()
        _ = machine.handle(.transportClosed(reason: "x"))
        _ = machine.handle(.transportOpened(at: Fixture.at(100)))
        #expect(machine.nextDeadline == Fixture.at(110))
        #expect(machine.handshake == nil)
    }
}
