import Foundation
import Testing
@testable import SwitchboardNet

@Suite("WebSocket protocol rules (no sockets)")
struct WebSocketStateMachineTests {
    private let fin: UInt8 = 0x80

    private func machine(maxMessageSize: Int = 1024) -> WebSocketStateMachine {
        WebSocketStateMachine(maxMessageSize: maxMessageSize)
    }

    private func closePayload(_ code: UInt16, _ reason: String = "") -> Data {
        Data([UInt8(code >> 8), UInt8(code & 0xFF)]) + Data(reason.utf8)
    }

    @Test("complete text and binary frames are delivered")
    func messages() {
        var machine = machine()
        #expect(machine.frameReceived(bits: fin | 0x1, payload: Data("hi".utf8)).deliver == [.text("hi")])
        #expect(machine.frameReceived(bits: fin | 0x2, payload: Data([0, 255])).deliver == [.binary(Data([0, 255]))])
    }

    @Test("fragments are reassembled, with control frames allowed in between")
    func fragments() {
        var machine = machine()
        #expect(machine.frameReceived(bits: 0x1, payload: Data("frag".utf8)).deliver.isEmpty)
        let ping = machine.frameReceived(bits: fin | 0x9, payload: Data("p".utf8))
        #expect(ping.reply == WebSocketOutgoingFrame(opcode: 0xA, payload: Data("p".utf8)))
        #expect(machine.frameReceived(bits: 0x0, payload: Data("ment".utf8)).deliver.isEmpty)
        #expect(machine.frameReceived(bits: fin | 0x0, payload: Data("ed".utf8)).deliver == [.text("fragmented")])
    }

    @Test("a UTF-8 character split across fragments is fine; invalid UTF-8 closes with 1007")
    func utf8() {
        var machine = machine()
        let check = Array("✓".utf8)
        _ = machine.frameReceived(bits: 0x1, payload: Data(check[0..<1]))
        #expect(machine.frameReceived(bits: fin, payload: Data(check[1...])).deliver == [.text("✓")])
        let bad = machine.frameReceived(bits: fin | 0x1, payload: Data([0xC3, 0x28]))
        #expect(bad.reply == .close(code: .invalidPayloadData, reason: "text message is not UTF-8"))
        #expect(bad.keepReading == false)
    }

    @Test("protocol violations close with 1002 and deliver that close", arguments: [
        (UInt8(0x80 | 0x40 | 0x1), 1, "reserved bits"),
        (UInt8(0x80 | 0x3), 1, "reserved opcode 3"),
        (UInt8(0x80 | 0xB), 1, "reserved opcode 11"),
        (UInt8(0x9), 1, "fragmented ping"),
        (UInt8(0x80 | 0x0), 1, "continuation without a message"),
        (UInt8(0x80 | 0x9), 126, "ping longer than 125 bytes"),
    ])
    func violations(bits: UInt8, length: Int, label: String) {
        var machine = machine()
        let reaction = machine.frameReceived(bits: bits, payload: Data(repeating: 0x61, count: length))
        #expect(reaction.keepReading == false, "\(label)")
        #expect(reaction.reply?.opcode == 0x8, "\(label)")
        #expect(reaction.reply?.payload.prefix(2) == Data([0x03, 0xEA]), "\(label)")
        guard case .close(let code, _)? = reaction.deliver.first else {
            Issue.record("no close delivered for \(label)")
            return
        }
        #expect(code == .protocolError)
        #expect(machine.phase == .closed)
    }

    @Test("a new message while a fragmented one is open is a protocol error")
    func interleavedMessages() {
        var machine = machine()
        _ = machine.frameReceived(bits: 0x1, payload: Data("a".utf8))
        #expect(machine.frameReceived(bits: fin | 0x2, payload: Data()).reply == .close(
            code: .protocolError, reason: "new message before the last one ended"))
    }

    @Test("oversized messages close with 1009, also when only the reassembly is too big")
    func tooBig() {
        var single = machine(maxMessageSize: 4)
        #expect(single.frameReceived(bits: fin | 0x2, payload: Data(count: 5)).reply?.payload.prefix(2) == Data([0x03, 0xF1]))
        var fragmented = machine(maxMessageSize: 4)
        _ = fragmented.frameReceived(bits: 0x2, payload: Data(count: 3))
        #expect(fragmented.frameReceived(bits: fin, payload: Data(count: 3)).keepReading == false)
    }

    @Test("a peer's close is echoed with its code and delivered with its reason")
    func peerClose() {
        var machine = machine()
        let reaction = machine.frameReceived(bits: fin | 0x8, payload: closePayload(4001, "bye"))
        #expect(reaction.deliver == [.close(code: 4001, reason: "bye")])
        #expect(reaction.reply == WebSocketOutgoingFrame(opcode: 0x8, payload: closePayload(4001)))
        #expect(reaction.keepReading == false)
        #expect(machine.connectionEnded() == nil)
    }

    @Test("an empty close reads as 1005 and is echoed empty")
    func emptyClose() {
        var machine = machine()
        let reaction = machine.frameReceived(bits: fin | 0x8, payload: Data())
        #expect(reaction.deliver == [.close(code: .noStatusReceived, reason: "")])
        #expect(reaction.reply == WebSocketOutgoingFrame(opcode: 0x8, payload: Data()))
    }

    @Test("invalid close payloads are protocol errors", arguments: [
        (Data([0x03]), WebSocketCloseCode.protocolError),
        (Data([0x03, 0xED]), .protocolError),  // 1005 may not be sent
        (Data([0x03, 0xEE]), .protocolError),  // 1006 may not be sent
        (Data([0x03, 0xE7]), .protocolError),  // 999
        (Data([0x13, 0x88]), .protocolError),  // 5000
        (Data([0x03, 0xE8, 0xFF]), .invalidPayloadData),
    ])
    func invalidClose(payload: Data, expected: WebSocketCloseCode) {
        var machine = machine()
        let reaction = machine.frameReceived(bits: fin | 0x8, payload: payload)
        guard case .close(let code, _)? = reaction.deliver.first else {
            Issue.record("no close delivered")
            return
        }
        #expect(code == expected)
    }

    @Test("our close waits for the peer's, which is then not echoed; data in between is dropped")
    func localClose() {
        var machine = machine()
        let frame = machine.closeRequested(code: .normalClosure, reason: "done")
        #expect(frame == WebSocketOutgoingFrame(opcode: 0x8, payload: closePayload(1000, "done")))
        #expect(machine.closeRequested(code: .normalClosure, reason: "again") == nil)
        #expect(!machine.canSend)
        #expect(machine.frameReceived(bits: fin | 0x1, payload: Data("late".utf8)).deliver.isEmpty)
        let answer = machine.frameReceived(bits: fin | 0x8, payload: closePayload(1000))
        #expect(answer.reply == nil)
        #expect(answer.deliver == [.close(code: .normalClosure, reason: "")])
        #expect(answer.keepReading == false)
    }

    @Test("a dropped connection delivers 1006 exactly once")
    func abnormalClosure() {
        var machine = machine()
        guard case .close(let code, _)? = machine.connectionEnded() else {
            Issue.record("expected a close frame")
            return
        }
        #expect(code == .abnormalClosure)
        #expect(machine.connectionEnded() == nil)
        #expect(machine.frameReceived(bits: fin | 0x1, payload: Data()).keepReading == false)
    }

    @Test("pongs are reported, not delivered")
    func pong() {
        var machine = machine()
        let reaction = machine.frameReceived(bits: fin | 0xA, payload: Data("x".utf8))
        #expect(reaction.pong == Data("x".utf8))
        #expect(reaction.deliver.isEmpty && reaction.reply == nil && reaction.keepReading)
    }

    @Test("close reasons are cut to 123 bytes on a character boundary")
    func closeReasonLength() {
        let payload = WebSocketClosePayload.encode(code: .normalClosure, reason: String(repeating: "é", count: 100))
        #expect(payload.count == 2 + 122)
        #expect(WebSocketClosePayload.encode(code: .noStatusReceived, reason: "x").isEmpty)
        #expect(WebSocketCloseCode(rawValue: 4001).isValidOnTheWire)
        #expect(!WebSocketCloseCode.abnormalClosure.isValidOnTheWire)
    }

    @Test("frames are encoded with the right length form and mask", arguments: [0, 5, 125, 126, 65535, 65536])
    func encoding(length: Int) {
        let payload = Data((0..<length).map { UInt8(truncatingIfNeeded: $0) })
        let plain = [UInt8](WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: 0x2, payload: payload), maskingKey: nil))
        #expect(plain[0] == 0x82)
        let headerLength = length < 126 ? 2 : length <= 0xFFFF ? 4 : 10
        #expect(plain.count == headerLength + length)
        #expect(plain[1] & 0x80 == 0)
        #expect(Data(plain[headerLength...]) == payload)
        let masked = [UInt8](WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: 0x1, payload: payload),
                                                          maskingKey: 0x0102_0304))
        #expect(masked[1] & 0x80 != 0)
        #expect(Array(masked[headerLength..<headerLength + 4]) == [1, 2, 3, 4])
        let unmasked = masked[(headerLength + 4)...].enumerated().map { $0.element ^ UInt8($0.offset % 4 + 1) }
        #expect(Data(unmasked) == payload)
        if length == 65536 { #expect(Array(plain[2..<10]) == [0, 0, 0, 0, 0, 1, 0, 0]) }
        if length == 126 { #expect(Array(plain[1..<4]) == [126, 0, 126]) }
    }

    @Test("client targets: defaults, path and query, extra headers after the Origin line")
    func targets() throws {
        let plain = try WebSocketClientTarget(url: URL(string: "ws://example.com/chat?room=a%20b")!, headers: [:])
        #expect(plain.port == 80 && plain.path == "/chat?room=a%20b" && plain.originArgument == nil && !plain.isSecure)
        let secure = try WebSocketClientTarget(url: URL(string: "wss://example.com")!, headers: ["Authorization": "Bearer t"])
        #expect(secure.port == 443 && secure.path == "/" && secure.isSecure)
        #expect(secure.originArgument == "https://example.com\r\nAuthorization: Bearer t")
        let origin = try WebSocketClientTarget(url: URL(string: "ws://h:81/")!, headers: ["X-A": "1", "Origin": "http://o"])
        #expect(origin.originArgument == "http://o\r\nX-A: 1")
        let implicit = try WebSocketClientTarget(url: URL(string: "ws://h:81/")!, headers: ["X-A": "1"])
        #expect(implicit.originArgument == "http://h:81\r\nX-A: 1")
    }

    @Test("client targets reject other schemes, injected lines and civetweb's own fields", arguments: [
        ("http://example.com/", [:]),
        ("ws:///nohost", [:]),
        ("ws://example.com/", ["X-Bad": "a\r\nInjected: yes"]),
        ("ws://example.com/", ["Bad Name": "v"]),
        ("ws://example.com/", ["Sec-WebSocket-Key": "x"]),
        ("ws://example.com/", ["Host": "other"]),
    ] as [(String, HTTPHeaders)])
    func rejectedTargets(url: String, headers: HTTPHeaders) {
        #expect(throws: WebSocketError.self) { try WebSocketClientTarget(url: URL(string: url)!, headers: headers) }
    }
}
