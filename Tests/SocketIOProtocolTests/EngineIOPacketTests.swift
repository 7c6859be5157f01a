import Foundation
import SwitchboardCore
import Testing
@testable import SocketIOProtocol

/// The Engine.IO v4 packet codec: exact frames, python-engineio's output, malformed input.
@Suite("Engine.IO packets")
struct EngineIOPacketTests {
    @Test("every packet type encodes to the exact frame and decodes back")
    func roundTrips() throws {
        let handshake = EngineIOHandshake(sid: "lv_VI97HAXpY6yYWAAAC", upgrades: [], pingInterval: .seconds(25),
                                          pingTimeout: .seconds(20), maxPayload: 1_000_000)
        let cases: [(EngineIOPacket, EngineIOFrame)] = [
            (.open(handshake), .text(#"0{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":[],"pingInterval":25000,"pingTimeout":20000,"maxPayload":1000000}"#)),
            (.close, .text("1")),
            (.ping(nil), .text("2")),
            (.ping("probe"), .text("2probe")),
            (.pong(nil), .text("3")),
            (.pong("probe"), .text("3probe")),
            (.message("hello"), .text("4hello")),
            (.message(#"2["a"]"#), .text(#"42["a"]"#)),
            (.message(""), .text("4")),
            (.binaryMessage(Data([1, 2, 3])), .binary(Data([1, 2, 3]))),
            (.upgrade, .text("5")),
            (.noop, .text("6")),
        ]
        for (packet, frame) in cases {
            #expect(packet.encoded == frame)
            #expect(try EngineIOPacket.decode(frame) == packet)
        }
    }

    @Test("python-engineio's open packet (pingTimeout before pingInterval) decodes")
    func pythonOpenPacket() throws {
        let frame = EngineIOFrame.text(#"0{"sid":"abc","upgrades":[],"pingTimeout":20000,"pingInterval":25000,"maxPayload":1000000}"#)
        guard case .open(let handshake) = try EngineIOPacket.decode(frame) else {
            Issue.record("not an open packet")
            return
        }
        #expect(handshake.sid == "abc")
        #expect(handshake.upgrades.isEmpty)
        #expect(handshake.pingInterval == .milliseconds(25_000))
        #expect(handshake.pingTimeout == .milliseconds(20_000))
        #expect(handshake.pingIntervalMilliseconds == 25_000)
        #expect(handshake.maxPayload == 1_000_000)
    }

    @Test("the engine.io spec's open packet with upgrades decodes; a missing maxPayload defaults to 1,000,000")
    func handshakeVariants() throws {
        let spec = try EngineIOHandshake.decode(#"{"sid":"lv_VI97HAXpY6yYWAAAC","upgrades":["websocket"],"pingInterval":25000,"pingTimeout":5000,"maxPayload":1000000}"#)
        #expect(spec.upgrades == ["websocket"])
        #expect(spec.pingTimeout == .seconds(5))
        let old = try EngineIOHandshake.decode(#"{"sid":"s","upgrades":[],"pingInterval":100,"pingTimeout":200}"#)
        #expect(old.maxPayload == 1_000_000)
        #expect(old.pingInterval == .milliseconds(100))
    }

    @Test("base64 text frames (the polling encoding) decode as binary messages")
    func base64() throws {
        #expect(try EngineIOPacket.decode(.text("bAQID")) == .binaryMessage(Data([1, 2, 3])))
        #expect(throws: EngineIOProtocolError.invalidBase64) { try EngineIOPacket.decode(.text("b!!")) }
    }

    @Test("malformed frames throw typed errors")
    func malformed() {
        #expect(throws: EngineIOProtocolError.emptyPacket) { try EngineIOPacket.decode(.text("")) }
        #expect(throws: EngineIOProtocolError.unknownPacketType("7")) { try EngineIOPacket.decode(.text("7")) }
        #expect(throws: EngineIOProtocolError.unknownPacketType("x")) { try EngineIOPacket.decode(.text("xyz")) }
        let badOpens = [
            "0", "0not json", "0[]", #"0{"upgrades":[],"pingInterval":1,"pingTimeout":1}"#,
            #"0{"sid":"s","pingInterval":"25000","pingTimeout":1}"#, #"0{"sid":"s","pingInterval":-1,"pingTimeout":1}"#,
            #"0{"sid":"s","pingInterval":1}"#, #"0{"sid":"s","upgrades":"websocket","pingInterval":1,"pingTimeout":1}"#,
            #"0{"sid":"s","upgrades":[1],"pingInterval":1,"pingTimeout":1}"#,
            #"0{"sid":"s","pingInterval":1,"pingTimeout":1,"maxPayload":"big"}"#,
        ]
        for text in badOpens {
            #expect(throws: EngineIOProtocolError.self, "\(text)") { try EngineIOPacket.decode(.text(text)) }
            do throws(EngineIOProtocolError) {
                _ = try EngineIOPacket.decode(.text(text))
            } catch {
                guard case .invalidHandshake = error else {
                    Issue.record("\(text): \(error)")
                    continue
                }
            }
        }
    }

    @Test("frame sizes count UTF-8 bytes")
    func byteCount() {
        #expect(EngineIOFrame.text("4é").byteCount == 3)
        #expect(EngineIOFrame.binary(Data(count: 7)).byteCount == 7)
    }

    @Test("errors describe themselves")
    func descriptions() {
        #expect(EngineIOProtocolError.payloadTooLarge(size: 10, limit: 5).description.contains("exceeds 5"))
        #expect(EngineIOProtocolError.unknownPacketType("9").description.contains("\"9\""))
    }
}
