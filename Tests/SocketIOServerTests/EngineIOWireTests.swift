import Foundation
import Synchronization
import SocketIOProtocol
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
@testable import SocketIOServer

/// A raw WebSocket peer speaking Engine.IO/Socket.IO text by hand, to pin the wire details.
final class RawSocket: Sendable {
    /// The WebSocket.
    let client = WebSocketClient()
    private let iterator: IteratorBox
    /// Whether pings are answered (and hidden) in the background, so slow test steps never miss a pong.
    let answersPings = Flag(true)

    /// Connects to `/socket.io/?<query>`.
    init(_ harness: SocketIOHarness, query: String = "EIO=4&transport=websocket") async throws {
        let url = try #require(URL(string: "ws://127.0.0.1:\(harness.base.port!)/socket.io/?\(query)"))
        try await client.connect(url: url)
        let client = self.client, answersPings = self.answersPings
        iterator = IteratorBox(client.frames) { text in
            guard text == "2", answersPings.value else { return false }
            try? await client.send(text: "3")
            return true
        }
    }

    /// The next text frame (pings included), or nil once closed; fails after `timeout`.
    func next(timeout: Duration = .seconds(10)) async throws -> String? {
        try await withThrowingTaskGroup(of: String?.self) { group in
            group.addTask { await self.iterator.nextText() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TestSetupError("no frame within \(timeout)")
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The next text frame that is not a ping (pings are answered).
    func nextNonPing(timeout: Duration = .seconds(10)) async throws -> String? {
        while let frame = try await next(timeout: timeout) {
            if frame == "2" { try await client.send(text: "3"); continue }
            return frame
        }
        return nil
    }

    /// Sends a text frame.
    func send(_ text: String) async throws { try await client.send(text: text) }
}

/// A Boolean shared between tasks.
final class Flag: Sendable {
    private let state: Mutex<Bool>
    /// A flag set to `initial`.
    init(_ initial: Bool) { state = Mutex(initial) }
    /// The current value.
    var value: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}

/// Hands out a stream's text frames one at a time to whichever task asks.
final class IteratorBox: Sendable {
    private let stream: AsyncStream<String?>

    /// Wraps `frames`, mapping the close to nil; texts for which `consume` returns true are not handed out.
    init(_ frames: AsyncStream<WebSocketFrame>, consume: @escaping @Sendable (String) async -> Bool) {
        stream = AsyncStream { continuation in
            let task = Task {
                for await frame in frames {
                    switch frame {
                    case .text(let text): if await !consume(text) { continuation.yield(text) }
                    case .binary: continue
                    case .close: continuation.yield(nil)
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The next text (nil for the close or the end).
    func nextText() async -> String? {
        for await item in stream { return item }
        return nil
    }
}

@Suite("Socket-style server Engine.IO wire")
struct EngineIOWireTests {
    @Test("open packet, namespace refusals, connect, events, acks, binary events, and pong timeout closes the socket")
    func wire() async throws {
        try await SocketIOHarness.with(configure: { configuration in
            configuration.pingInterval = .milliseconds(200)
            configuration.pingTimeout = .milliseconds(300)
        }) { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)

            let socket = try await RawSocket(harness)
            let open = try #require(try await socket.next())
            #expect(open.hasPrefix("0"))
            let handshake = try EngineIOHandshake.decode(String(open.dropFirst()))
            #expect(handshake.upgrades.isEmpty)
            #expect(handshake.pingInterval == .milliseconds(200))
            #expect(handshake.pingTimeout == .milliseconds(300))
            #expect(handshake.maxPayload == 1_000_000)
            #expect(open.contains(#""sid":"\#(handshake.sid)","upgrades":[],"pingInterval":200,"pingTimeout":300,"maxPayload":1000000"#))
            #expect(harness.server.openSockets == 1)

            try await socket.send("40/admin,{\"token\":\"\(alice)\"}")
            #expect(try await socket.nextNonPing() == #"44/admin,{"message":"Invalid namespace"}"#)
            try await socket.send("40")
            #expect(try await socket.nextNonPing() == #"44{"message":"unauthorized"}"#)
            try await socket.send("40{\"token\":\"\(bob)x\"}")
            #expect(try await socket.nextNonPing() == #"44{"message":"unauthorized"}"#)
            #expect(harness.server.activeListeners == 0)
            try await socket.send("40{\"token\":\"\(alice)\"}")
            let connected = try #require(try await socket.nextNonPing())
            #expect(connected.hasPrefix(#"40{"sid":""#))
            #expect(harness.server.activeListeners == 1)

            try await socket.send(#"421["ping:app"]"#)
            let pong = try #require(try await socket.nextNonPing())
            #expect(pong.hasPrefix(#"431[{"ok":true,"time":""#))
            try await socket.send(#"422["typing",{"conversationId":"c1"}]"#)
            #expect(try await socket.nextNonPing()?.hasPrefix(#"432[{"ok":false,"#) == true)
            // A binary event is reassembled and answered like any other.
            try await socket.send(#"451-3["blob",{"_placeholder":true,"num":0}]"#)
            try await socket.client.send(binary: Data([1, 2, 3]))
            #expect(try await socket.nextNonPing() == #"433[{"ok":false,"error":"unknown event"}]"#)

            _ = try await harness.send("c1", "hello", token: bob)
            let event = try #require(try await socket.nextNonPing())
            #expect(event.hasPrefix(#"42["message",{"id":""#))
            #expect(event.contains(#""text":"hello""#))

            // Joined later: events of a conversation alice is added to afterwards arrive too.
            try await harness.createConversation("c2", members: [], token: bob)
            _ = try await harness.call(.post, "/conversations/c2/members", json: ["userIds": ["alice"]], token: bob)
            _ = try await harness.send("c2", "later", token: bob)
            #expect(try await socket.nextNonPing()?.contains(#""text":"later""#) == true)

            // Stop answering pings: the server closes within pingInterval + pingTimeout.
            socket.answersPings.value = false
            var closed = false
            let deadline = ContinuousClock.now + .seconds(5)
            while ContinuousClock.now < deadline {
                guard try await socket.next(timeout: .seconds(5)) != nil else { closed = true; break }
            }
            #expect(closed, "the server closed the unresponsive socket")
            let settle = ContinuousClock.now + .seconds(5)
            while (harness.server.activeListeners > 0 || harness.server.openSockets > 0) && ContinuousClock.now < settle {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(harness.server.activeListeners == 0)
            #expect(harness.server.openSockets == 0)
        }
    }

    @Test("a namespace disconnect and an abrupt WebSocket close both leave no listener; polling upgrades are refused")
    func cleanup() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice")
            let first = try await RawSocket(harness)
            _ = try await first.next()
            try await first.send("40{\"token\":\"\(alice)\"}")
            #expect(try await first.nextNonPing()?.hasPrefix("40{") == true)
            #expect(harness.server.activeListeners == 1)
            try await first.send("41")
            let deadline = ContinuousClock.now + .seconds(5)
            while harness.server.activeListeners > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            #expect(harness.server.activeListeners == 0)
            #expect(harness.server.openSockets == 1, "the Engine.IO session stays open")
            try await first.send("40{\"token\":\"\(alice)\"}")
            #expect(try await first.nextNonPing()?.hasPrefix("40{") == true)

            let second = try await RawSocket(harness)
            _ = try await second.next()
            try await second.send("40{\"token\":\"\(alice)\"}")
            #expect(try await second.nextNonPing()?.hasPrefix("40{") == true)
            #expect(harness.server.activeListeners == 2)
            await second.client.close(code: .goingAway)
            await first.client.close()
            let settle = ContinuousClock.now + .seconds(5)
            while (harness.server.activeListeners > 0 || harness.server.openSockets > 0) && ContinuousClock.now < settle {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(harness.server.activeListeners == 0)
            #expect(harness.server.openSockets == 0)

            let upgrade = try await RawSocket(harness, query: "EIO=4&transport=websocket&sid=abc")
            #expect(try await upgrade.next() == nil, "no polling session exists to upgrade")
            let old = try await RawSocket(harness, query: "EIO=3&transport=websocket")
            #expect(try await old.next() == nil)
        }
    }
}
