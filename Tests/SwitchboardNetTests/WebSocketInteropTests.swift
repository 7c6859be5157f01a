import Foundation
import TestSupport
import Testing
import SwitchboardNet
import SwitchboardCore

/// What a server-side WebSocket handler saw, for assertions after the fact.
final class WebSocketObservations: Sendable {
    private let frames = Locked<[WebSocketFrame]>([])
    private let headers = Locked<[HTTPHeaders]>([])
    private let closed = AsyncStream<Void>.makeStream()

    func record(_ frame: WebSocketFrame) { frames.withLock { $0.append(frame) } }
    func record(_ request: HTTPServerRequest) { headers.withLock { $0.append(request.headers) } }
    func connectionEnded() { closed.continuation.yield() }

    var all: [WebSocketFrame] { frames.withLock { $0 } }
    var requestHeaders: [HTTPHeaders] { headers.withLock { $0 } }
    var closes: [WebSocketFrame] { all.filter { if case .close = $0 { true } else { false } } }

    /// Waits until `count` connections have ended (at most `timeout`).
    func waitForEnds(_ count: Int, timeout: Duration = .seconds(10)) async throws -> Bool {
        let ends = closed.stream
        return try await NetTest.answers(within: timeout) {
            var iterator = ends.makeAsyncIterator()
            for _ in 0..<count { _ = await iterator.next() }
            return true
        }
    }
}

extension NetworkSuites {
    /// WebSockets against the Python `websockets` package (both directions) and raw sockets.
    @Suite("WebSocket interop with Python websockets and raw sockets")
    struct WebSocketInteropTests {
        /// A server whose `/ws` endpoint echoes, and closes with 4001 on `close-me`.
        private func withEchoServer<T>(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
                                       _ body: (HTTPServer, Int, WebSocketObservations) async throws -> T) async throws -> T {
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            let server = HTTPServer(configuration: configuration)
            let observations = WebSocketObservations()
            server.webSocket("/ws") { connection in
                observations.record(connection.request)
                for await frame in connection.frames {
                    observations.record(frame)
                    switch frame {
                    case .text("close-me"):
                        await connection.close(code: 4001, reason: "server says bye")
                    case .text(let text):
                        try? await connection.send(text: text)
                    case .binary(let data):
                        try? await connection.send(binary: data)
                    case .close:
                        break
                    }
                }
                observations.connectionEnded()
            }
            server.route(.get, "/health") { _ in .text("ok") }
            let port = try server.start()
            do {
                let result = try await body(server, port, observations)
                await server.stop()
                return result
            } catch {
                await server.stop()
                throw error
            }
        }

        /// Starts `ws_echo_server.py` and returns it with its URL.
        private func startPythonServer(_ extra: [String] = []) async throws -> (ChildProcess, URL) {
            let process = try ChildProcess(try NetTest.python(), [NetTest.fixture("ws_echo_server.py")] + extra)
            do {
                let line = try await process.line(startingWith: "listening on ")
                let url = try #require(URL(string: String(line.dropFirst("listening on ".count))))
                return (process, url)
            } catch {
                process.stop()
                throw error
            }
        }

        private func pythonClient(_ url: String, _ scenario: String) async throws -> [String: Any] {
            let process = try ChildProcess(try NetTest.python(), [NetTest.fixture("ws_client.py"), url, scenario])
            let result = try await process.result(timeout: .seconds(30))
            #expect(result.status == 0, "ws_client.py failed: \(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [String: Any])
        }

        // MARK: Our server, Python client

        @Test("Python client ↔ our server: text, binary, fragmented echo, ping/pong, client close 4001")
        func pythonClientEcho() async throws {
            try await withEchoServer { _, port, observations in
                let report = try await pythonClient("ws://127.0.0.1:\(port)/ws", "echo")
                #expect(report["text"] as? String == "hello from python")
                #expect(report["binary"] as? String == "0001feff")
                #expect(report["fragmented"] as? String == "fragment one, fragment two")
                #expect(report["pong"] as? Bool == true)
                #expect(report["close_code"] as? Int == 4001, "the server echoes the client's close code")
                #expect(try await observations.waitForEnds(1))
                #expect(observations.closes == [.close(code: 4001, reason: "client done")])
                #expect(observations.requestHeaders.first?["X-Interop"] == "python")
            }
        }

        @Test("Python client ↔ our server: the server closes with 4001 and a reason")
        func pythonClientServerClose() async throws {
            try await withEchoServer { _, port, observations in
                let report = try await pythonClient("ws://127.0.0.1:\(port)/ws", "server-close")
                #expect(report["close_code"] as? Int == 4001)
                #expect(report["close_reason"] as? String == "server says bye")
                #expect(report["unexpected"] is NSNull)
                #expect(try await observations.waitForEnds(1))
                guard case .close(let code, _)? = observations.closes.first else {
                    Issue.record("the server saw no close: \(observations.all)")
                    return
                }
                #expect(code == 4001, "Python echoes the server's code")
            }
        }

        // MARK: Our client, Python server

        @Test("our client ↔ Python server: echo, large binary, pings both ways, headers, close 4001")
        func clientAgainstPython() async throws {
            let (python, url) = try await startPythonServer()
            defer { python.stop() }
            let client = WebSocketClient()
            try await client.connect(url: url.appendingPathComponent("chat"),
                                     headers: ["Authorization": "Bearer token", "X-Trace": "abc"])
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "hello ✓")
            #expect(await frames.next() == .text("hello ✓"))
            let large = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0) })
            try await client.send(binary: large)
            #expect(await frames.next() == .binary(large))
            try await client.ping()
            try await client.ping(Data("custom".utf8))
            try await client.send(text: "ping-me")
            #expect(await frames.next() == .text("pong-received"), "Python's ping got our automatic pong")
            try await client.send(text: "request")
            guard case .text(let json)? = await frames.next(),
                  let request = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                  let headers = request["headers"] as? [String: String] else {
                Issue.record("no request report")
                return
            }
            #expect(request["path"] as? String == "/chat")
            #expect(headers["Authorization"] == "Bearer token")
            #expect(headers["X-Trace"] == "abc")
            #expect(headers["Origin"] == url.absoluteString.replacingOccurrences(of: "ws://", with: "http://"))
            await client.close(code: 4001, reason: "swift done")
            #expect(await frames.next() == .close(code: 4001, reason: "swift done"), "Python echoes code and reason")
            #expect(await frames.next() == nil)
            #expect(!client.isOpen)
            _ = try await python.line(startingWith: "closed code=4001 reason=swift done")
            await #expect(throws: WebSocketError.self) { try await client.send(text: "late") }
        }

        @Test("our client ↔ Python server: the server closes with 4003 and a reason")
        func pythonServerCloses() async throws {
            let (python, url) = try await startPythonServer()
            defer { python.stop() }
            let client = WebSocketClient()
            try await client.connect(url: url)
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "close:4003:python says bye")
            #expect(await frames.next() == .close(code: 4003, reason: "python says bye"))
            #expect(await frames.next() == nil)
            await client.close()
            _ = try await python.line(startingWith: "closed code=4003")
        }

        @Test("connecting to a refused port or an unknown WebSocket path fails cleanly")
        func connectFailures() async throws {
            try await withEchoServer { _, port, _ in
                let unknown = WebSocketClient()
                await #expect(throws: WebSocketError.self) {
                    try await unknown.connect(url: URL(string: "ws://127.0.0.1:\(port)/nope")!)
                }
                let socket = try await RawSocket.connect(port: port)
                try await socket.send(Self.upgradeRequest(path: "/nope"))
                let (reply, _) = try await socket.receive(timeout: .seconds(5)) { $0.count > 12 }
                #expect(String(decoding: reply, as: UTF8.self).hasPrefix("HTTP/1.1 404"))
                await #expect(throws: WebSocketError.self) {
                    try await WebSocketClient().connect(url: URL(string: "ws://127.0.0.1:1/")!)
                }
                await #expect(throws: WebSocketError.self) {
                    try await WebSocketClient().connect(url: URL(string: "wss://127.0.0.1:\(port)/ws")!)
                }
            }
        }

        @Test("wss:// to Python with a self-signed certificate (our OpenSSL transport)")
        func secureClient() async throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("wss-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            for name in ["server", "other"] {
                let result = try await ChildProcess("/usr/bin/openssl", [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", directory.appendingPathComponent("\(name)-key.pem").path,
                    "-out", directory.appendingPathComponent("\(name)-cert.pem").path,
                ]).result(timeout: .seconds(30))
                try #require(result.status == 0, "openssl failed: \(result.stderr)")
            }
            let (python, url) = try await startPythonServer([
                "--certfile", directory.appendingPathComponent("server-cert.pem").path,
                "--keyfile", directory.appendingPathComponent("server-key.pem").path,
            ])
            defer { python.stop() }
            #expect(url.scheme == "wss")

            var trusted = WebSocketClient.Configuration()
            trusted.trustedCertificatesFile = directory.appendingPathComponent("server-cert.pem").path
            #expect(WebSocketClient.isTLSAvailable)
            let client = WebSocketClient(configuration: trusted)
            try await client.connect(url: url)
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "over TLS")
            #expect(await frames.next() == .text("over TLS"))
            await client.close()
            #expect(await frames.next() == .close(code: .normalClosure, reason: ""))

            var wrong = WebSocketClient.Configuration()
            wrong.trustedCertificatesFile = directory.appendingPathComponent("other-cert.pem").path
            await #expect(throws: WebSocketError.self) { try await WebSocketClient(configuration: wrong).connect(url: url) }
        }

        // MARK: Misbehaving peers

        static func upgradeRequest(path: String = "/ws") -> String {
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        }

        /// A client frame: `first` byte as given, masked payload.
        static func maskedFrame(first: UInt8, payload: Data) -> Data {
            let mask: [UInt8] = [0x11, 0x22, 0x33, 0x44]
            var frame = Data([first])
            if payload.count < 126 {
                frame.append(0x80 | UInt8(payload.count))
            } else {
                frame.append(0x80 | 126)
                frame.append(contentsOf: [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)])
            }
            frame.append(contentsOf: mask)
            frame.append(contentsOf: payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
            return frame
        }

        /// Opens a raw WebSocket to `/ws` and checks the 101 answer.
        static func rawWebSocket(port: Int) async throws -> RawSocket {
            let socket = try await RawSocket.connect(port: port)
            try await socket.send(upgradeRequest())
            let (head, _) = try await socket.receive(timeout: .seconds(5)) {
                String(decoding: $0, as: UTF8.self).contains("\r\n\r\n")
            }
            let text = String(decoding: head, as: UTF8.self)
            try #require(text.hasPrefix("HTTP/1.1 101"), "\(text)")
            #expect(text.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo="))
            return socket
        }

        @Test("malformed frames get a close frame with the RFC code, then the connection drops", arguments: [
            (UInt8(0xC1), Data("hello".utf8), UInt16(1002), "RSV1 without an extension"),
            (UInt8(0x83), Data("x".utf8), UInt16(1002), "reserved opcode 3"),
            (UInt8(0x80), Data("x".utf8), UInt16(1002), "continuation without a message"),
            (UInt8(0x81), Data([0xC3, 0x28]), UInt16(1007), "invalid UTF-8"),
            (UInt8(0x88), Data([0x03, 0xED]), UInt16(1002), "close code 1005 on the wire"),
        ])
        func malformedFrames(first: UInt8, payload: Data, expected: UInt16, label: String) async throws {
            try await withEchoServer { _, port, observations in
                let socket = try await Self.rawWebSocket(port: port)
                try await socket.send(Self.maskedFrame(first: first, payload: payload))
                let (reply, closed) = try await socket.receive(timeout: .seconds(5))
                let bytes = [UInt8](reply)
                #expect(bytes.count >= 4, "\(label): \(bytes)")
                if bytes.count >= 4 {
                    #expect(bytes[0] == 0x88, "\(label): expected an unmasked close frame")
                    #expect(UInt16(bytes[2]) << 8 | UInt16(bytes[3]) == expected, "\(label)")
                }
                #expect(closed, "\(label): the server kept the connection open")
                #expect(try await observations.waitForEnds(1))
                if case .close(let code, _)? = observations.closes.first {
                    #expect(code.rawValue == expected, "\(label): the handler saw \(code)")
                } else {
                    Issue.record("\(label): the handler saw no close")
                }

                // The server still serves others.
                let client = WebSocketClient()
                try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
                var frames = client.frames.makeAsyncIterator()
                try await client.send(text: "still here")
                #expect(await frames.next() == .text("still here"))
                await client.close()
                let health = try await NetTest.curl(["http://127.0.0.1:\(port)/health"])
                #expect(health.text == "ok")
            }
        }

        @Test("a client that gets more messages ahead than the handler has read is cut off with 1008; the handler reads those queued, then the end")
        func unreadLimit() async throws {
            var configuration = HTTPServer.Configuration()
            configuration.maxUnreadWebSocketMessages = 8
            let server = HTTPServer(configuration: configuration)
            let release = AsyncStream<Void>.makeStream()
            let observations = WebSocketObservations()
            server.webSocket("/ws") { connection in
                var gate = release.stream.makeAsyncIterator()
                _ = await gate.next()  // reads nothing until released
                for await frame in connection.frames { observations.record(frame) }
                observations.connectionEnded()
            }
            let port = try server.start()
            defer { Task { await server.stop() } }
            let socket = try await Self.rawWebSocket(port: port)
            var burst = Data()
            for index in 0..<50 { burst.append(Self.maskedFrame(first: 0x81, payload: Data("m\(index)".utf8))) }
            try await socket.send(burst)
            let (reply, closed) = try await socket.receive(timeout: .seconds(5))
            let bytes = [UInt8](reply)
            #expect(bytes.count >= 4 && bytes[0] == 0x88, "expected a close frame: \(bytes)")
            if bytes.count >= 4 { #expect(UInt16(bytes[2]) << 8 | UInt16(bytes[3]) == 1008) }
            #expect(closed, "the server kept reading past the limit")
            release.continuation.yield()
            #expect(try await observations.waitForEnds(1))
            let texts = observations.all.compactMap { frame -> String? in if case .text(let text) = frame { text } else { nil } }
            #expect(texts == (0..<8).map { "m\($0)" }, "the queued messages, in order, and no more")

            // The default limit leaves an ordinary burst alone.
            try await withEchoServer { _, port, _ in
                let client = WebSocketClient()
                try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
                var frames = client.frames.makeAsyncIterator()
                try await client.send((0..<500).map { WebSocketFrame.text("n\($0)") })
                var echoed = 0
                while echoed < 500, case .text? = await frames.next() { echoed += 1 }
                #expect(echoed == 500)
                await client.close()
            }
        }

        @Test("a client that a server gets more messages ahead of than it has read cuts it off with 1008; it reads those queued, then the end")
        func clientUnreadLimit() async throws {
            let server = HTTPServer()
            let observations = WebSocketObservations()
            server.webSocket("/ws") { connection in
                try? await connection.send((0..<50).map { WebSocketFrame.text("m\($0)") })
                for await frame in connection.frames { observations.record(frame) }
                observations.connectionEnded()
            }
            let port = try server.start()
            defer { Task { await server.stop() } }
            var configuration = WebSocketClient.Configuration()
            configuration.maxUnreadMessages = 8
            let client = WebSocketClient(configuration: configuration)
            try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
            // Without the cut-off nothing would end: the watchdog's close keeps a failure from hanging the test.
            let watchdog = Task { try await Task.sleep(for: .seconds(15)); await client.close() }
            defer { watchdog.cancel() }
            #expect(try await observations.waitForEnds(1), "the server's handler saw no end")
            #expect(observations.closes.contains { if case .close(let code, _) = $0 { code.rawValue == 1008 } else { false } },
                    "the server saw \(observations.closes)")
            var texts: [String] = []
            for await frame in client.frames { if case .text(let text) = frame { texts.append(text) } }
            #expect(texts == (0..<8).map { "m\($0)" }, "the queued messages, in order, and no more")
            await client.close()
        }

        @Test("a peer that never answers pings is dropped after the unanswered-ping limit")
        func silentPeer() async throws {
            try await withEchoServer({ $0.webSocketPingInterval = .milliseconds(100) }) { _, port, observations in
                let socket = try await Self.rawWebSocket(port: port)
                let (data, closed) = try await socket.receive(timeout: .seconds(10))
                #expect(closed)
                #expect([UInt8](data).starts(with: [0x89, 0x00]), "the server pings a silent peer")
                #expect(try await observations.waitForEnds(1))
                #expect(observations.closes == [.close(code: .abnormalClosure, reason: "connection ended without a close frame")])
            }
        }

        @Test("a client that answers pings stays connected across many ping intervals")
        func pingedClientStays() async throws {
            try await withEchoServer({ $0.webSocketPingInterval = .milliseconds(100) }) { _, port, _ in
                let client = WebSocketClient()
                try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
                try await Task.sleep(for: .seconds(1.5))
                var frames = client.frames.makeAsyncIterator()
                try await client.send(text: "alive")
                #expect(await frames.next() == .text("alive"))
                await client.close()
            }
        }

        @Test("a batch of messages sent as one write arrives as separate messages, in order, both ways; a close in a batch is refused")
        func batchedSends() async throws {
            let server = HTTPServer()
            let refusal = Locked<WebSocketError?>(nil)
            server.webSocket("/ws") { connection in
                for await frame in connection.frames {
                    guard case .text(let text) = frame else { continue }
                    if text == "burst" {
                        do {
                            try await connection.send([.text("close"), .close(code: .normalClosure, reason: "")])
                        } catch let error as WebSocketError {
                            refusal.withLock { $0 = error }
                        } catch {}
                        try? await connection.send([.text("one"), .binary(Data([1, 2, 3])), .text(String(repeating: "ü", count: 40_000))])
                    } else {
                        try? await connection.send(text: "echo:" + text)
                    }
                }
            }
            let port = try server.start()
            defer { Task { await server.stop() } }
            let client = WebSocketClient()
            try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "burst")
            #expect(await frames.next() == .text("one"))
            #expect(await frames.next() == .binary(Data([1, 2, 3])))
            #expect(await frames.next() == .text(String(repeating: "ü", count: 40_000)))
            #expect(refusal.withLock { $0?.code } == .invalidArgument)
            try await client.send([.text("a"), .text("b"), .text("c")])
            #expect(await frames.next() == .text("echo:a"))
            #expect(await frames.next() == .text("echo:b"))
            #expect(await frames.next() == .text("echo:c"))
            await #expect(throws: WebSocketError.self) { try await client.send([.close(code: .normalClosure, reason: "")]) }
            await client.close()
        }

        @Test("stop() sends 1001 to open WebSockets and returns promptly")
        func stopClosesWebSockets() async throws {
            let server = HTTPServer()
            server.webSocket("/ws") { connection in
                for await _ in connection.frames {}
            }
            let port = try server.start()
            let client = WebSocketClient()
            try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/ws")!)
            let started = ContinuousClock.now
            await server.stop()
            #expect(ContinuousClock.now - started < TestTime.limit(.seconds(3)))
            var frames = client.frames.makeAsyncIterator()
            #expect(await frames.next() == .close(code: .goingAway, reason: "server stopping"))
            await client.close()
        }
    }
}
