import Foundation
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
                try await Task.sleep(for: TestTime.limit(timeout))
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
    private let state: Locked<Bool>
    /// A flag set to `initial`.
    init(_ initial: Bool) { state = Locked(initial) }
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
            configuration.pingTimeout = .seconds(2)
        }) { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)

            let socket = try await RawSocket(harness)
            let open = try #require(try await socket.next())
            #expect(open.hasPrefix("0"))
            let handshake = try EngineIOHandshake.decode(String(open.dropFirst()))
            #expect(handshake.upgrades.isEmpty)
            #expect(handshake.pingInterval == .milliseconds(200))
            #expect(handshake.pingTimeout == .seconds(2))
            #expect(handshake.maxPayload == 1_000_000)
            #expect(open.contains(#""sid":"\#(handshake.sid)","upgrades":[],"pingInterval":200,"pingTimeout":2000,"maxPayload":1000000"#))
            #expect(harness.server.openSockets == 1)

            try await socket.send("40/admin,{\"token\":\"\(alice)\"}")
            #expect(try await socket.nextNonPing() == #"44/admin,{"message":"Invalid namespace"}"#)
            // A refused auth is answered, then the socket is closed at once.
            for auth in ["", "{\"token\":\"\(bob)x\"}"] {
                let refused = try await RawSocket(harness)
                _ = try await refused.next()
                try await refused.send("40" + auth)
                #expect(try await refused.nextNonPing() == #"44{"message":"unauthorized"}"#)
                #expect(try await refused.nextNonPing() == "1", "the Engine.IO close packet")
                #expect(try await refused.nextNonPing() == nil)
            }
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
            let deadline = TestTime.deadline(after: .seconds(5))
            while ContinuousClock.now < deadline {
                guard try await socket.next(timeout: .seconds(5)) != nil else { closed = true; break }
            }
            #expect(closed, "the server closed the unresponsive socket")
            let settle = TestTime.deadline(after: .seconds(5))
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
            let deadline = TestTime.deadline(after: .seconds(5))
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
            let settle = TestTime.deadline(after: .seconds(5))
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

    @Test("a socket that joins no namespace with a valid token is closed after the connect timeout")
    func connectTimeout() async throws {
        try await SocketIOHarness.with(configure: { $0.connectTimeout = .seconds(2) }) { harness in
            let alice = try await harness.register("alice")
            let idle = try await RawSocket(harness)
            _ = try await idle.next()
            let joined = try await RawSocket(harness)
            _ = try await joined.next()
            try await joined.send("40{\"token\":\"\(alice)\"}")
            let answer = try await joined.nextNonPing()
            #expect(answer?.hasPrefix("40{") == true, "got \(String(describing: answer))")
            // The idle socket answers pings but never connects: it is closed anyway.
            #expect(try await idle.nextNonPing(timeout: .seconds(5)) == "1")
            #expect(try await idle.nextNonPing(timeout: .seconds(5)) == nil)
            try await Task.sleep(for: .milliseconds(300))
            try await joined.send(#"421["ping:app"]"#)
            #expect(try await joined.nextNonPing()?.hasPrefix(#"431[{"ok":true"#) == true, "the joined socket stays open")
            await joined.client.close()
        }
    }

    @Test("binary packets on a namespace not joined, or over the attachment limits, close the socket")
    func binaryLimits() async throws {
        try await SocketIOHarness.with(configure: { $0.maxPayload = 1_000 }) { harness in
            let alice = try await harness.register("alice")
            let early = try await RawSocket(harness)
            _ = try await early.next()
            try await early.send(#"451-["blob",{"_placeholder":true,"num":0}]"#)
            #expect(try await early.nextNonPing() == "1")
            #expect(try await early.nextNonPing() == nil)

            for (header, attachments) in [(#"4511-["blob"]"#, [Data]()),
                                          (#"452-["blob",{"_placeholder":true,"num":0},{"_placeholder":true,"num":1}]"#,
                                           [Data(count: 600), Data(count: 600)])] {
                let socket = try await RawSocket(harness)
                _ = try await socket.next()
                try await socket.send("40{\"token\":\"\(alice)\"}")
                #expect(try await socket.nextNonPing()?.hasPrefix("40{") == true)
                try await socket.send(header)
                for attachment in attachments { try? await socket.client.send(binary: attachment) }
                #expect(try await socket.nextNonPing() == "1", "closed after \(header)")
                #expect(try await socket.nextNonPing() == nil)
            }
        }
    }

    @Test("a non-member's socket receives no message or typing event of the conversation")
    func nonMemberGetsNothing() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            let carol = try await harness.register("carol")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            var sockets: [RawSocket] = []
            for token in [alice, bob, carol] {
                let socket = try await RawSocket(harness)
                _ = try await socket.next()
                try await socket.send("40{\"token\":\"\(token)\"}")
                #expect(try await socket.nextNonPing()?.hasPrefix("40{") == true)
                sockets.append(socket)
            }
            let (aliceSocket, bobSocket, carolSocket) = (sockets[0], sockets[1], sockets[2])
            try await bobSocket.send(#"421["typing",{"conversationId":"c1","typing":true}]"#)
            #expect(try await bobSocket.nextNonPing() == #"431[{"ok":true}]"#)
            // Carol cannot type into c1 either.
            try await carolSocket.send(#"421["typing",{"conversationId":"c1","typing":true}]"#)
            #expect(try await carolSocket.nextNonPing()?.hasPrefix(#"431[{"ok":false"#) == true)
            _ = try await harness.send("c1", "secret", token: bob)
            // The member sees both events, in order.
            #expect(try await aliceSocket.nextNonPing()?.hasPrefix(#"42["typing",{"conversationId":"c1","userId":"bob""#) == true)
            #expect(try await aliceSocket.nextNonPing()?.contains(#""text":"secret""#) == true)
            // A fence: the first event carol gets is from her own conversation, so nothing of c1 came before it.
            try await harness.createConversation("c2", members: ["carol"], token: bob)
            _ = try await harness.send("c2", "fence", token: bob)
            let first = try #require(try await carolSocket.nextNonPing())
            #expect(first.hasPrefix(#"42["message",{"#) && first.contains(#""text":"fence""#), "carol got \(first)")
            for socket in sockets { await socket.client.close() }
        }
    }
}
