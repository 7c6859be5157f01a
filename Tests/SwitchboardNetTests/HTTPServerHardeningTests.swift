import Foundation
import Synchronization
import TestSupport
import Testing
import SwitchboardNet

extension NetworkSuites {
    /// What an attacker tried against the reference servers, each against the bare `HTTPServer`: a handful of
    /// cheap connections, huge declared sizes, slow clients, peers that never read.
    @Suite("HTTPServer under attack: cheap connections, huge declarations, slow and silent peers")
    struct HTTPServerHardeningTests {
        private typealias WS = WebSocketInteropTests

        private func withServer<T>(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
                                   _ body: (HTTPServer, Int) async throws -> T) async throws -> T {
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            let server = HTTPServer(configuration: configuration)
            server.route(.get, "/health") { _ in .text("ok") }
            server.route(.post, "/upload") { request in .text("\(request.body.count)") }
            server.route(.get, "/stream") { _ in
                let (stream, continuation) = AsyncStream<Data>.makeStream()
                continuation.yield(Data("open\n".utf8))
                return .stream(stream, heartbeat: .init(interval: .seconds(10)))
            }
            server.webSocket("/ws") { connection in
                for await _ in connection.frames {}
            }
            return try await NetTest.serving(server) { port in try await body(server, port) }
        }

        private func health(_ port: Int) async throws -> String {
            try await NetTest.curl(["--silent", "--max-time", "20", "http://127.0.0.1:\(port)/health"]).text
        }

        @Test("hundreds of idle WebSockets, open streams and slowloris clients leave requests answered at once")
        func manyCheapConnections() async throws {
            try await withServer { _, port in
                var held: [RawSocket] = []
                for _ in 0..<150 { held.append(try await WS.rawWebSocket(port: port)) }
                for _ in 0..<150 {
                    let stream = try await RawSocket.connect(port: port)
                    try await stream.send("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
                    let (data, _) = try await stream.receive(timeout: .seconds(10)) {
                        String(decoding: $0, as: UTF8.self).contains("open")
                    }
                    #expect(String(decoding: data, as: UTF8.self).contains("open"))
                    held.append(stream)
                }
                for _ in 0..<50 {
                    let slow = try await RawSocket.connect(port: port)
                    try await slow.send("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                    held.append(slow)
                }
                // civetweb's 64 workers would all be held by now; an event loop answers as usual.
                for _ in 0..<5 { #expect(try await health(port) == "ok") }
                withExtendedLifetime(held) {}
            }
        }

        @Test("clients that hang up mid-response cost the server nothing (no SIGPIPE): it goes on answering")
        func hangUpMidResponse() async throws {
            try await withServer { server, port in
                server.route(.get, "/big") { _ in HTTPServerResponse(body: Data(count: 8 << 20)) }
                for _ in 0..<20 {
                    let socket = try await RawSocket.connect(port: port)
                    try await socket.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
                    _ = try await socket.receive(timeout: .seconds(10)) { $0.count > 1000 }
                }
                #expect(try await health(port) == "ok")
            }
        }

        @Test("a WebSocket frame declaring 1 GiB is refused from its header with 1009, before any payload")
        func hugeFrameHeader() async throws {
            try await withServer { _, port in
                let socket = try await WS.rawWebSocket(port: port)
                var header = Data([0x82, 0x80 | 127])
                header.append(contentsOf: withUnsafeBytes(of: UInt64(1 << 30).bigEndian, Array.init))
                header.append(contentsOf: [1, 2, 3, 4])
                try await socket.send(header)
                let (reply, closed) = try await socket.receive(timeout: .seconds(10))
                let bytes = [UInt8](reply)
                #expect(bytes.count >= 4 && bytes[0] == 0x88, "a close frame: \(bytes)")
                if bytes.count >= 4 { #expect(UInt16(bytes[2]) << 8 | UInt16(bytes[3]) == 1009) }
                #expect(closed)
                #expect(try await health(port) == "ok")
            }
        }

        @Test("huge declared bodies are refused at once: Content-Length, and a chunk size of 8000000000000000")
        func hugeDeclarations() async throws {
            try await withServer({ $0.maxRequestBodySize = 1 << 20 }) { _, port in
                for raw in ["POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n",
                            "POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n"] {
                    let socket = try await RawSocket.connect(port: port)
                    try await socket.send(raw)
                    let (data, _) = try await socket.receive(timeout: .seconds(10)) {
                        String(decoding: $0, as: UTF8.self).contains("\r\n\r\n")
                    }
                    #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 413 "), "\(raw)")
                }
            }
        }

        @Test("conflicting framing is refused: two Content-Lengths, or Content-Length with chunking", arguments: [
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
            "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        ])
        func conflictingFraming(raw: String) async throws {
            try await withServer { _, port in
                let socket = try await RawSocket.connect(port: port)
                try await socket.send(raw)
                let (data, closed) = try await socket.receive(timeout: .seconds(10))
                #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
                #expect(closed)
            }
        }

        @Test("connections over the per-client limit get 503; the ones within it are served")
        func perClientLimit() async throws {
            try await withServer({ $0.maxConnectionsPerClient = 3 }) { _, port in
                var held: [RawSocket] = []
                for _ in 0..<3 {
                    let socket = try await RawSocket.connect(port: port)
                    try await socket.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                    let (data, _) = try await socket.receive(timeout: .seconds(10)) {
                        String(decoding: $0, as: UTF8.self).hasSuffix("ok")
                    }
                    #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 200 "))
                    held.append(socket)
                }
                let refused = try await RawSocket.connect(port: port)
                let (data, closed) = try await refused.receive(timeout: .seconds(10))
                #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 503 "))
                #expect(closed)
                held.removeAll()
                // Once they close, new connections are admitted again.
                let deadline = TestTime.deadline(after: .seconds(20))
                var answer = ""
                while answer != "ok" && ContinuousClock.now < deadline {
                    answer = (try? await health(port)) ?? ""
                }
                #expect(answer == "ok")
            }
        }

        /// A server whose WebSocket handler sends 64 KiB messages from `senders` tasks until a send fails; yields
        /// once the handler has given up.
        private func floodingServer(_ configure: (inout HTTPServer.Configuration) -> Void,
                                    senders: Int) throws -> (HTTPServer, Int, AsyncStream<Void>) {
            var configuration = HTTPServer.Configuration()
            configure(&configuration)
            let server = HTTPServer(configuration: configuration)
            let failed = AsyncStream<Void>.makeStream()
            server.webSocket("/ws") { connection in
                let chunk = Data(count: 64 * 1024)
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<senders {
                        group.addTask { while (try? await connection.send(binary: chunk)) != nil {} }
                    }
                }
                failed.continuation.yield()
            }
            return (server, try server.start(), failed.stream)
        }

        @Test("a WebSocket peer that never reads is cut off once many senders queue past the byte budget")
        func silentReaderBudget() async throws {
            let (server, port, failed) = try floodingServer({
                $0.maxBytesInFlightPerConnection = 1 << 20
                $0.writeTimeout = .seconds(600)
            }, senders: 32)
            defer { Task { await server.stop() } }
            let socket = try await WS.rawWebSocket(port: port)
            let ended = try await NetTest.answers(within: .seconds(60)) {
                var iterator = failed.makeAsyncIterator()
                return await iterator.next() != nil
            }
            #expect(ended, "the server kept queueing for a peer that does not read")
            withExtendedLifetime(socket) {}
        }

        @Test("a WebSocket peer that never reads is cut off once nothing was taken for writeTimeout")
        func silentReaderStall() async throws {
            let (server, port, failed) = try floodingServer({ $0.writeTimeout = .milliseconds(500) }, senders: 1)
            defer { Task { await server.stop() } }
            let socket = try await WS.rawWebSocket(port: port)
            let ended = try await NetTest.answers(within: .seconds(60)) {
                var iterator = failed.makeAsyncIterator()
                return await iterator.next() != nil
            }
            #expect(ended, "a sender waited forever on a peer that does not read")
            withExtendedLifetime(socket) {}
        }
    }
}
