import Foundation
import Synchronization
import TestSupport
import Testing
import SwitchboardNet

extension NetworkSuites {
    /// Our server against the `curl` command and raw sockets.
    @Suite("HTTPServer interop with curl and raw sockets")
    struct HTTPServerInteropTests {
        /// A running server with an echo route; stopped when `body` returns or throws.
        private func withServer<T>(_ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
                                   routes: (HTTPServer) -> Void = { _ in },
                                   _ body: (HTTPServer, Int) async throws -> T) async throws -> T {
            var configuration = HTTPServer.Configuration()
            configuration.maxRequestBodySize = 64 * 1024
            configure(&configuration)
            let server = HTTPServer(configuration: configuration)
            server.route(.get, "/echo", handler: Self.echo)
            server.route(.post, "/echo", handler: Self.echo)
            routes(server)
            return try await NetTest.serving(server) { port in try await body(server, port) }
        }

        /// Answers a JSON picture of the request.
        @Sendable private static func echo(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
            let picture: [String: Any] = [
                "method": request.method.rawValue,
                "path": request.path,
                "rawQuery": request.rawQuery ?? NSNull(),
                "query": request.queryItems.map { [$0.name, $0.value] },
                "custom": request.headers.values("X-Custom"),
                "userAgent": request.headers["user-agent"] ?? "",
                "body": String(decoding: request.body, as: UTF8.self),
                "bodyCount": request.body.count,
                "remote": request.remoteAddress,
                "remotePort": request.remotePort,
            ]
            var response = HTTPServerResponse.json(try JSONSerialization.data(withJSONObject: picture))
            response.headers.add("X-Echo", "yes")
            return response
        }

        private func json(_ data: Data) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        }

        @Test("GET with query and repeated headers reaches the handler; the response head reaches curl")
        func getRoundTrip() async throws {
            try await withServer { _, port in
                let result = try await NetTest.curl([
                    "--dump-header", "/dev/stderr",
                    "-H", "X-Custom: one", "-H", "X-Custom: two",
                    "http://127.0.0.1:\(port)/echo/sub%20dir?a=1&b=x%20y&a=2&plus=a+b&check=%E2%9C%93&flag",
                ])
                #expect(result.status == 0, "\(result.stderr)")
                let picture = try json(result.stdout)
                #expect(picture["method"] as? String == "GET")
                #expect(picture["path"] as? String == "/echo/sub dir")
                #expect(picture["rawQuery"] as? String == "a=1&b=x%20y&a=2&plus=a+b&check=%E2%9C%93&flag")
                let query = try #require(picture["query"] as? [[String]])
                #expect(query == [["a", "1"], ["b", "x y"], ["a", "2"], ["plus", "a b"], ["check", "✓"], ["flag", ""]])
                #expect(picture["custom"] as? [String] == ["one", "two"])
                #expect((picture["userAgent"] as? String)?.hasPrefix("curl/") == true)
                #expect(picture["remote"] as? String == "127.0.0.1")
                #expect((picture["remotePort"] as? Int ?? 0) > 0)
                let head = result.stderr.lowercased()
                #expect(head.hasPrefix("http/1.1 200 ok"))
                #expect(head.contains("content-type: application/json"))
                #expect(head.contains("x-echo: yes"))
                #expect(head.contains("content-length: \(result.stdout.count)"))
            }
        }

        @Test("POST bodies arrive whole: with Content-Length, with 100-continue, and chunked")
        func postRoundTrip() async throws {
            try await withServer { _, port in
                let url = "http://127.0.0.1:\(port)/echo"
                let small = try await NetTest.curl(["--data-binary", "hello=world", url])
                #expect(try json(small.stdout)["body"] as? String == "hello=world")
                #expect(try json(small.stdout)["method"] as? String == "POST")

                // 40 KB makes curl send `Expect: 100-continue` and wait for our interim answer.
                let large = String(repeating: "0123456789", count: 4000)
                let expect = try await NetTest.curl(["--data-binary", "@-", "-H", "Expect: 100-continue",
                                                     "--expect100-timeout", "10", url], stdin: Data(large.utf8))
                #expect(try json(expect.stdout)["bodyCount"] as? Int == 40000)

                let chunked = try await NetTest.curl(["--data-binary", "@-", "-H", "Transfer-Encoding: chunked", url],
                                                     stdin: Data(large.utf8))
                #expect(try json(chunked.stdout)["body"] as? String == large)
            }
        }

        @Test("curl -N sees each chunk as it is produced, and the stream ends cleanly")
        func chunkedStreaming() async throws {
            let gate = AsyncStream<Void>.makeStream()
            try await withServer(routes: { server in
                server.route(.get, "/stream") { _ in
                    let (stream, continuation) = AsyncStream<Data>.makeStream()
                    Task {
                        continuation.yield(Data("{\"n\":1}\n".utf8))
                        // The second line waits until the test has seen the first one arrive.
                        var iterator = gate.stream.makeAsyncIterator()
                        _ = await iterator.next()
                        continuation.yield(Data("{\"n\":2}\n".utf8))
                        continuation.yield(Data("{\"n\":3}\n".utf8))
                        continuation.finish()
                    }
                    return .stream(stream, headers: ["Content-Type": "application/x-ndjson"])
                }
            }) { _, port in
                let curl = try ChildProcess(NetTest.curl, ["-N", "--silent", "--show-error", "--max-time", "20",
                                                           "--dump-header", "/dev/stderr",
                                                           "http://127.0.0.1:\(port)/stream"])
                defer { curl.stop() }
                _ = try await curl.line(startingWith: "{\"n\":1}", timeout: .seconds(10))
                #expect(!curl.stdoutText.contains("\"n\":2"), "the second line was sent before it was produced")
                gate.continuation.yield()
                let result = try await curl.result(timeout: .seconds(10))
                #expect(result.status == 0, "\(result.stderr)")
                #expect(result.text == "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
                #expect(result.stderr.lowercased().contains("transfer-encoding: chunked"))
            }
        }

        @Test("a client that disconnects ends the stream: the producer's onTermination runs")
        func streamEndsOnDisconnect() async throws {
            let terminated = AsyncStream<Void>.makeStream()
            try await withServer(routes: { server in
                server.route(.get, "/forever") { _ in
                    let (stream, continuation) = AsyncStream<Data>.makeStream()
                    continuation.onTermination = { _ in terminated.continuation.yield() }
                    Task {
                        for index in 0..<600 {
                            guard case .enqueued = continuation.yield(Data("{\"tick\":\(index)}\n".utf8)) else { return }
                            try? await Task.sleep(for: .milliseconds(50))
                        }
                        continuation.finish()
                    }
                    return .stream(stream)
                }
            }) { _, port in
                let curl = try ChildProcess(NetTest.curl, ["-N", "--silent", "http://127.0.0.1:\(port)/forever"])
                _ = try await curl.line(startingWith: "{\"tick\":1}", timeout: .seconds(10))
                curl.stop()
                let noticed = try await Self.first(of: terminated.stream, within: .seconds(10))
                #expect(noticed, "the stream kept running after the client left")
            }
        }

        @Test("a heartbeat notices a vanished client even when the stream is idle")
        func heartbeatNoticesDisconnect() async throws {
            let terminated = AsyncStream<Void>.makeStream()
            try await withServer(routes: { server in
                server.route(.get, "/idle") { _ in
                    let (stream, continuation) = AsyncStream<Data>.makeStream()
                    continuation.onTermination = { _ in terminated.continuation.yield() }
                    continuation.yield(Data("{\"hello\":true}\n".utf8))
                    return .stream(stream, heartbeat: .init(interval: .milliseconds(100)))
                }
            }) { _, port in
                let curl = try ChildProcess(NetTest.curl, ["-N", "--silent", "http://127.0.0.1:\(port)/idle"])
                _ = try await curl.line(startingWith: "{\"hello\"", timeout: .seconds(10))
                curl.stop()
                #expect(try await Self.first(of: terminated.stream, within: .seconds(10)))
            }
        }

        @Test("bodies over the limit get 413: by Content-Length up front, and while de-chunking")
        func payloadTooLarge() async throws {
            try await withServer { _, port in
                let url = "http://127.0.0.1:\(port)/echo"
                let oversize = Data(repeating: 0x61, count: 200 * 1024)
                let declared = try await NetTest.curl(["--output", "/dev/null", "--write-out", "%{http_code}",
                                                       "--data-binary", "@-", url], stdin: oversize)
                #expect(declared.text == "413", "\(declared.stderr)")
                let noExpect = try await NetTest.curl(["--output", "/dev/null", "--write-out", "%{http_code}",
                                                       "-H", "Expect:", "--data-binary", "@-", url], stdin: oversize)
                #expect(noExpect.text == "413", "\(noExpect.stderr)")
                let chunked = try await NetTest.curl(["--output", "/dev/null", "--write-out", "%{http_code}",
                                                      "-H", "Transfer-Encoding: chunked", "--data-binary", "@-", url],
                                                     stdin: oversize)
                #expect(chunked.text == "413", "\(chunked.stderr)")
                // The server is still fine afterwards.
                let after = try await NetTest.curl(["--write-out", "%{http_code}", "--output", "/dev/null", url])
                #expect(after.text == "200")
            }
        }

        @Test("unknown paths are 404, wrong methods 405 with Allow, HEAD sends no body")
        func notFoundAndMethods() async throws {
            try await withServer(routes: { server in
                server.webSocket("/socket") { _ in }
            }) { _, port in
                let base = "http://127.0.0.1:\(port)"
                let missing = try await NetTest.curl(["--dump-header", "/dev/stderr", "\(base)/nope"])
                #expect(missing.stderr.lowercased().hasPrefix("http/1.1 404"))
                let wrong = try await NetTest.curl(["--dump-header", "/dev/stderr", "-X", "DELETE", "\(base)/echo"])
                #expect(wrong.stderr.lowercased().hasPrefix("http/1.1 405"))
                #expect(wrong.stderr.lowercased().contains("allow: get, post, head"))
                let head = try await NetTest.curl(["--head", "\(base)/echo"])
                #expect(head.text.lowercased().hasPrefix("http/1.1 200"))
                #expect(head.text.lowercased().contains("content-length: "))
                let plain = try await NetTest.curl(["--dump-header", "/dev/stderr", "\(base)/socket"])
                #expect(plain.stderr.lowercased().hasPrefix("http/1.1 426"))
            }
        }

        @Test("handler errors are 500; keep-alive connections serve several requests")
        func errorsAndKeepAlive() async throws {
            struct Failure: Error {}
            try await withServer(routes: { server in
                server.route(.get, "/fail") { _ in throw Failure() }
            }) { _, port in
                let base = "http://127.0.0.1:\(port)"
                let failed = try await NetTest.curl(["--write-out", "%{http_code}", "--output", "/dev/null", "\(base)/fail"])
                #expect(failed.text == "500")
                let twice = try await NetTest.curl(["--verbose", "\(base)/echo?n=1", "\(base)/echo?n=2"])
                #expect(twice.stderr.contains("Re-using existing connection"), "\(twice.stderr)")
            }
        }

        @Test("writer bodies stream; a throwing writer truncates the body; a slow handler hits handlerTimeout")
        func writersAndTimeouts() async throws {
            struct Failure: Error {}
            try await withServer({ $0.handlerTimeout = .milliseconds(300) }, routes: { server in
                server.route(.get, "/writer") { _ in
                    HTTPServerResponse(body: .writer { writer in
                        for index in 1...3 { try await writer.write(Data("line \(index)\n".utf8)) }
                    })
                }
                server.route(.get, "/broken") { _ in
                    HTTPServerResponse(body: .writer { writer in
                        try await writer.write(Data("partial\n".utf8))
                        throw Failure()
                    })
                }
                server.route(.get, "/slow") { _ in
                    let deadline = TestTime.deadline(after: .seconds(2))
                    while ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
                    return .text("too late")
                }
            }) { _, port in
                let base = "http://127.0.0.1:\(port)"
                let whole = try await NetTest.curl(["\(base)/writer"])
                #expect(whole.status == 0)
                #expect(whole.text == "line 1\nline 2\nline 3\n")
                let broken = try await NetTest.curl(["\(base)/broken"])
                #expect(broken.status == 18, "curl reports a partial transfer: \(broken.stderr)")
                #expect(broken.text == "partial\n")
                let slow = try await NetTest.curl(["--write-out", "%{http_code}", "--output", "/dev/null", "\(base)/slow"])
                #expect(slow.text == "503")
            }
        }

        @Test("200 requests, 25 at a time, each on its own connection, all get their own answer")
        func parallelRequests() async throws {
            try await withServer({ $0.keepAlive = false }, routes: { server in
                server.route(.get, "/slow-echo") { request in
                    try await Task.sleep(for: .milliseconds(5))
                    return .text((request.queryValue("n") ?? "?") + "\n")
                }
            }) { _, port in
                let urls = (0..<200).map { "http://127.0.0.1:\(port)/slow-echo?n=\($0)" }
                let started = ContinuousClock.now
                let result = try await NetTest.curl(["--parallel", "--parallel-immediate", "--parallel-max", "25"] + urls)
                print("200 parallel requests over 4 workers: \(ContinuousClock.now - started)")
                #expect(result.status == 0, "\(result.stderr)")
                let lines = result.text.split(separator: "\n").compactMap { Int($0) }
                #expect(lines.sorted() == Array(0..<200))
            }
        }

        @Test("malformed HTTP gets 400 and the connection is closed", arguments: [
            "THIS IS NOT HTTP\r\n\r\n",
            "GET /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: nope\r\n\r\n",
            "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbody\r\n0\r\n\r\n",
        ])
        func malformedRequest(raw: String) async throws {
            try await withServer { _, port in
                let socket = try await RawSocket.connect(port: port)
                try await socket.send(raw)
                let (data, closed) = try await socket.receive(timeout: .seconds(10))
                let text = String(decoding: data, as: UTF8.self)
                #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(text)")
                #expect(text.contains("\r\nConnection: close\r\n"))
                #expect(closed)
            }
        }

        @Test("stalled clients are timed out (408) and do not block other connections meanwhile")
        func stalledClient() async throws {
            try await withServer({ $0.requestTimeout = TestTime.limit(.seconds(1)) }) { _, port in
                let started = ContinuousClock.now
                let stalledHead = try await RawSocket.connect(port: port)
                try await stalledHead.send("GET /echo HTTP/1.1\r\nHost: x\r\nX-Half: ")
                let stalledBody = try await RawSocket.connect(port: port)
                try await stalledBody.send("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nonly part")
                try await Task.sleep(for: .milliseconds(100))
                // The stalled clients cost their sockets only: others are served right away.
                let other = try await NetTest.curl(["--write-out", "%{http_code}", "--output", "/dev/null",
                                                    "http://127.0.0.1:\(port)/echo"])
                #expect(other.text == "200")
                #expect(ContinuousClock.now - started < TestTime.limit(.milliseconds(900)), "served before the stalled ones timed out")
                for stalled in [stalledHead, stalledBody] {
                    let (data, closed) = try await stalled.receive(timeout: .seconds(10))
                    #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
                    #expect(closed)
                }
                #expect(ContinuousClock.now - started < TestTime.limit(.seconds(5)))
            }
        }

        @Test("a request head larger than the 16 KiB limit gets a clean 431 and the connection is closed")
        func oversizedHead() async throws {
            try await withServer { _, port in
                let socket = try await RawSocket.connect(port: port)
                try await socket.send("GET /echo HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n")
                let (data, closed) = try await socket.receive(timeout: .seconds(10))
                #expect(String(decoding: data, as: UTF8.self).hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"),
                        "\(String(decoding: data.prefix(200), as: UTF8.self))")
                #expect(closed)
            }
        }

        @Test("stop() ends open streams and in-flight requests, then the server's thread is gone", .enabled(if: NetTest.isIsolated, NetTest.isolationReason))
        func stopDuringWork() async throws {
            // Servers of earlier tests stop in tasks of their own; let their threads exit first.
            func serverThreads() -> Int { NetTest.threadNames().filter { $0.hasPrefix("sb-http") }.count }
            for _ in 0..<500 where serverThreads() > 0 { try await Task.sleep(for: .milliseconds(20)) }
            let before = serverThreads()
            let server = HTTPServer()
            server.route(.get, "/hang") { _ in
                // Ignores cancellation, like a handler stuck in a slow call.
                let deadline = TestTime.deadline(after: .seconds(3))
                while ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
                return .text("late")
            }
            server.route(.get, "/stream") { _ in
                let (stream, continuation) = AsyncStream<Data>.makeStream()
                continuation.yield(Data("first\n".utf8))
                return .stream(stream)
            }
            let port = try server.start()
            var named = 0
            for _ in 0..<100 where named <= before {
                try await Task.sleep(for: .milliseconds(10))
                named = NetTest.threadNames().filter { $0.hasPrefix("sb-http") }.count
            }
            #expect(named == before + 1, "one thread serves every connection")
            let hanging = try ChildProcess(NetTest.curl, ["--silent", "--output", "/dev/null", "--write-out", "%{http_code}",
                                                          "http://127.0.0.1:\(port)/hang"])
            let streaming = try ChildProcess(NetTest.curl, ["-N", "--silent", "http://127.0.0.1:\(port)/stream"])
            _ = try await streaming.line(startingWith: "first")
            try await Task.sleep(for: .milliseconds(200))
            let started = ContinuousClock.now
            await server.stop()
            #expect(ContinuousClock.now - started < TestTime.limit(.seconds(5)))
            #expect(server.port == nil)
            #expect(NetTest.threadNames().filter { $0.hasPrefix("sb-http") }.count == before)
            let hung = try await hanging.result(timeout: .seconds(10))
            #expect(hung.text == "503")
            let streamed = try await streaming.result(timeout: .seconds(10))
            #expect(streamed.status == 0, "the stream did not end cleanly: \(streamed.stderr)")
        }

        /// Whether `stream` yields within `timeout`.
        static func first(of stream: AsyncStream<Void>, within timeout: Duration) async throws -> Bool {
            try await NetTest.answers(within: timeout) {
                var iterator = stream.makeAsyncIterator()
                return await iterator.next() != nil
            }
        }
    }
}
