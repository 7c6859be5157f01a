import Foundation
import Synchronization
import TestSupport
import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// `lines(_:)`: JSON-lines bodies delivered as they arrive.
    @Suite("Streaming lines")
    struct Streaming {
        /// One decoded fixture line.
        struct StreamLine: Decodable {
            let index: Int
            let sent_at: Double
        }

        @Test("Status and headers come first, then each line as the server sends it")
        func linesArriveAsSent() async throws {
            try await withHTTPTestServer { server in
                let stream = try await HTTPClient().lines(HTTPRequest(url: server.url("/stream?lines=5&delay_ms=250")))
                #expect(stream.status == 200)
                #expect(stream.headers["Content-Type"] == "application/x-ndjson")

                var received: [(line: StreamLine, at: Double)] = []
                for try await text in stream {
                    let at = Date().timeIntervalSince1970
                    received.append((try JSONDecoder().decode(StreamLine.self, from: Data(text.utf8)), at))
                }
                #expect(received.map(\.line.index) == [0, 1, 2, 3, 4])
                let firstReceived = try #require(received.first).at
                let lastSent = try #require(received.last).line.sent_at
                #expect(firstReceived < lastSent, "the first line arrived before the server sent the last one")
            }
        }

        @Test("Lines split across chunks are put back together")
        func splitLines() async throws {
            try await withHTTPTestServer { server in
                let stream = try await HTTPClient().lines(HTTPRequest(url: server.url("/stream?lines=10&split=1")))
                var indexes: [Int] = []
                for try await text in stream {
                    indexes.append(try JSONDecoder().decode(StreamLine.self, from: Data(text.utf8)).index)
                }
                #expect(indexes == Array(0..<10))
            }
        }

        @Test("A slow reader pauses the transfer and still gets every line in order")
        func backpressure() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient(configuration: .init(maximumBufferedLines: 8))
                let stream = try await client.lines(HTTPRequest(url: server.url("/stream?lines=3000")))
                var expected = 0
                for try await text in stream {
                    let index = try JSONDecoder().decode(StreamLine.self, from: Data(text.utf8)).index
                    #expect(index == expected)
                    expected += 1
                    if expected.isMultiple(of: 500) { try await Task.sleep(for: .milliseconds(50)) }
                }
                #expect(expected == 3000)
            }
        }

        @Test("bufferedLines hands over lines already received without waiting; iteration continues after them")
        func bufferedLinesInOrder() async throws {
            try await withHTTPTestServer { server in
                // A small buffer makes the transfer pause, so taking buffered lines must also resume it.
                let client = HTTPClient(configuration: .init(maximumBufferedLines: 8))
                let stream = try await client.lines(HTTPRequest(url: server.url("/stream?lines=3000")))
                var indexes: [Int] = []
                var batches = 0
                var iterator = stream.makeAsyncIterator()
                while let text = try await iterator.next() {
                    indexes.append(try JSONDecoder().decode(StreamLine.self, from: Data(text.utf8)).index)
                    let more = stream.bufferedLines(limit: 5)
                    #expect(more.count <= 5)
                    if !more.isEmpty { batches += 1 }
                    for line in more { indexes.append(try JSONDecoder().decode(StreamLine.self, from: Data(line.utf8)).index) }
                }
                #expect(indexes == Array(0..<3000))
                #expect(batches > 0, "a burst left lines in the buffer at least once")
                #expect(stream.bufferedLines(limit: 5).isEmpty, "nothing after the end")
            }
        }

        @Test("Cancelling the reading task stops a never-ending stream promptly; the server sees it")
        func cancelStream() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let abortsBefore = try await client.serverStats(server)["stream_aborts"] ?? -1
                let (started, startedContinuation) = AsyncStream<Void>.makeStream()
                let task = Task {
                    let stream = try await client.lines(HTTPRequest(url: server.url("/stream?lines=0&delay_ms=50")))
                    var count = 0
                    for try await _ in stream {
                        count += 1
                        if count == 3 { startedContinuation.yield() }
                    }
                    return count
                }
                var iterator = started.makeAsyncIterator()
                _ = await iterator.next()

                let clock = ContinuousClock()
                let start = clock.now
                task.cancel()
                let result = await task.result
                #expect(clock.now - start < TestTime.limit(.seconds(3)))  // milliseconds when calm; the stream itself never ends
                #expect(throws: CancellationError.self) { try result.get() }

                let noticed = try await eventually(within: .seconds(3)) {
                    try await client.serverStats(server)["stream_aborts"] == abortsBefore + 1
                }
                #expect(noticed, "the server saw the connection close")
                #expect(clock.now - start < TestTime.limit(.seconds(6)))
            }
        }

        @Test("Dropping a stream without reading it cancels the transfer")
        func droppedStream() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let before = try await client.serverStats(server)
                do {
                    let stream = try await client.lines(HTTPRequest(url: server.url("/stream?lines=0&delay_ms=50")))
                    #expect(stream.status == 200)
                }
                let noticed = try await eventually(within: .seconds(3)) {
                    try await client.serverStats(server)["stream_aborts"] == (before["stream_aborts"] ?? -1) + 1
                }
                #expect(noticed)
            }
        }

        @Test("The low-speed limit ends a stalled stream with curl code 28 after the lines that did arrive")
        func lowSpeedLimit() async throws {
            try await withHTTPTestServer { server in
                // curl averages the speed over the last few seconds: the limit must be above the lines' burst
                // spread over that window (about 100 bytes over 5 s) to trip one second into the silence.
                let configuration = HTTPClient.Configuration(lowSpeedLimit: .init(bytesPerSecond: 100, duration: .seconds(1)))
                let stream = try await HTTPClient(configuration: configuration)
                    .lines(HTTPRequest(url: server.url("/stall?lines=2&stall_ms=10000")))
                let clock = ContinuousClock()
                let start = clock.now
                var count = 0
                let error = await #expect(throws: HTTPClientError.self) {
                    for try await _ in stream { count += 1 }
                }
                #expect(count == 2)
                #expect(error?.curlCode == 28)
                #expect(clock.now - start < TestTime.limit(.seconds(5)))
            }
        }

        @Test("A stream's error status is available before its body; ensureSuccess throws it")
        func streamStatus() async throws {
            try await withHTTPTestServer { server in
                let stream = try await HTTPClient().lines(HTTPRequest(url: server.url("/status/404")))
                #expect(stream.status == 404)
                let error = #expect(throws: HTTPClientError.self) { try stream.ensureSuccess() }
                #expect(error?.status == 404)
            }
        }

        @Test("A stream that cannot connect throws from lines(_:)")
        func streamConnectionRefused() async throws {
            let error = await #expect(throws: HTTPClientError.self) {
                try await HTTPClient().lines(HTTPRequest(url: URL(string: "http://127.0.0.1:1/stream")!))
            }
            #expect(error?.curlCode == 7)
        }
    }
}
