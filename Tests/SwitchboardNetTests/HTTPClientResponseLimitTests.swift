import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport

/// `HTTPRequest.maximumResponseBytes`: an answer (or a streamed line) past the limit is cut, not buffered.
@Suite("HTTP client response limit")
struct HTTPClientResponseLimitTests {
    @Test("a body past the limit fails with responseTooLarge, classified as a retryable transport error (a server fault)")
    func bodyLimit() async throws {
        try await HostileServer.with { hostile, url in
            hostile.on(.get, "/endless", .endless(status: 200, headers: [:], chunk: Data(repeating: 7, count: 16 * 1024)))
            hostile.on(.get, "/big", .answer(status: 200, headers: [:], body: Data(repeating: 1, count: 100_001)))
            hostile.on(.get, "/exact", .answer(status: 200, headers: [:], body: Data(repeating: 1, count: 100_000)))
            let client = HTTPClient()
            for path in ["/endless", "/big"] {
                let request = HTTPRequest(url: url.appendingPathComponent(path), maximumResponseBytes: 100_000)
                let error = await #expect(throws: HTTPClientError.self, "\(path)") { _ = try await client.send(request) }
                #expect(error?.code == .responseTooLarge)
                #expect(error?.description.contains("100000-byte limit") == true)
                let classified = error?.switchboardError
                #expect(classified?.code == .transport && classified?.isRetryable == true)
            }
            #expect(await conditionHolds(within: .seconds(60)) { hostile.openStreams == 0 }, "the endless writer still runs")
            let exact = try await client.send(HTTPRequest(url: url.appendingPathComponent("/exact"), maximumResponseBytes: 100_000))
            #expect(exact.body.count == 100_000)
            // The connection pool is still usable after a cut transfer.
            let again = try await client.send(HTTPRequest(url: url.appendingPathComponent("/exact")))
            #expect(again.body.count == 100_000)
        }
    }

    @Test("a slow drip under the size limit is ended by the request's timeout, as a retryable transport error")
    func slowDrip() async throws {
        try await HostileServer.with { hostile, url in
            hostile.on(.get, "/drip", .drip(status: 200, headers: [:], chunk: Data("x".utf8), interval: .milliseconds(100), count: nil))
            let request = HTTPRequest(url: url.appendingPathComponent("/drip"), timeout: .seconds(1), maximumResponseBytes: 1 << 20)
            let started = ContinuousClock.now
            let error = await #expect(throws: HTTPClientError.self) { _ = try await HTTPClient().send(request) }
            #expect(started.duration(to: .now) < .seconds(10))
            #expect(error?.isTimeout == true, "\(String(describing: error))")
            #expect(error?.switchboardError.isRetryable == true)
            #expect(await conditionHolds(within: .seconds(60)) { hostile.openStreams == 0 }, "the drip still runs")
        }
    }

    @Test("a streamed line past the limit ends the stream with responseTooLarge after the lines before it")
    func lineLimit() async throws {
        try await HostileServer.with { hostile, url in
            hostile.on(.get, "/lines", .handler { _ in
                HTTPServerResponse(status: 200, body: .writer { writer in
                    try await writer.write(Data("short\n".utf8))
                    while true { try await writer.write(Data(repeating: UInt8(ascii: "x"), count: 8 * 1024)) }
                })
            })
            let stream = try await HTTPClient().lines(HTTPRequest(url: url.appendingPathComponent("/lines"),
                                                                  maximumResponseBytes: 64 * 1024))
            var lines: [String] = []
            let error = await #expect(throws: HTTPClientError.self) { for try await line in stream { lines.append(line) } }
            #expect(lines == ["short"])
            #expect(error?.code == .responseTooLarge)
            stream.cancel()
            #expect(await conditionHolds(within: .seconds(10)) { hostile.requestCount("/lines") == 1 })
        }
    }
}
