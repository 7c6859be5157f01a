import Foundation
import Testing
@testable import SwitchboardNet

@Suite("HTTP request parser and connection machine (no sockets)")
struct HTTPRequestParserTests {
    private func parse(_ text: String, limits: HTTPRequestParser.Limits = .init()) -> HTTPRequestParser.Output {
        HTTPRequestParser(limits: limits).feed(Data(text.utf8))
    }

    private func head(_ output: HTTPRequestParser.Output) -> HTTPServerRequestHead? {
        for case .head(let head, _) in output.events { return head }
        return nil
    }

    @Test("a request with a query, repeated fields and a body is one head, its body, then the end")
    func wholeRequest() throws {
        let output = parse("POST /a/b?x=1&y=%20 HTTP/1.1\r\nHost: h\r\nX-Two: 1\r\nX-Two: 2\r\nContent-Length: 5\r\n\r\nhello")
        #expect(output.failure == nil)
        let found = try #require(head(output))
        #expect(found.method == .post && found.path == "/a/b" && found.rawQuery == "x=1&y=%20")
        #expect(found.headers.values("X-Two") == ["1", "2"] && found.contentLength == 5 && !found.isChunked)
        #expect(found.httpVersion == "1.1")
        #expect(output.events.dropFirst() == [.body(Data("hello".utf8)), .end])
    }

    @Test("bytes fed one at a time give the same request")
    func trickle() throws {
        let parser = HTTPRequestParser(limits: .init())
        let text = Data("PUT /t HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".utf8)
        var events: [HTTPRequestParser.Event] = []
        for byte in text {
            let output = parser.feed(Data([byte]))
            #expect(output.failure == nil && output.consumed == 1)
            events += output.events
        }
        let body = events.reduce(into: Data()) { if case .body(let data) = $1 { $0.append(data) } }
        #expect(body == Data("abcde".utf8))
        #expect(events.last == .end)
    }

    @Test("after a request the parser pauses; pipelined bytes wait for next()")
    func pipelined() throws {
        let parser = HTTPRequestParser(limits: .init())
        let both = Data("GET /one HTTP/1.1\r\nHost: h\r\n\r\nGET /two HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        let first = parser.feed(both)
        #expect(first.events.last == .end)
        let rest = both.dropFirst(first.consumed)
        #expect(String(decoding: rest, as: UTF8.self).hasPrefix("GET /two"))
        #expect(parser.feed(Data(rest)).events.isEmpty, "paused until next()")
        parser.next()
        let second = parser.feed(Data(rest))
        #expect(head(second)?.path == "/two" && second.consumed == rest.count)
    }

    @Test("limits are enforced as the bytes arrive", arguments: [
        ("GET / HTTP/1.1\r\nX-Big: \(String(repeating: "a", count: 20_000))\r\n\r\n", 431),
        ("GET / HTTP/1.1\r\n" + (0..<150).map { "X-\($0): v\r\n" }.joined() + "\r\n", 431),
        ("POST / HTTP/1.1\r\nContent-Length: 2000000\r\n\r\n", 413),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n8000000000000000\r\n", 413),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n100001\r\n", 413),
        ("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", 400),
        ("POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400),
        ("THIS IS NOT HTTP\r\n\r\n", 400),
        ("POST / HTTP/1.1\r\nContent-Length: nope\r\n\r\n", 400),
        ("GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 400),
    ])
    func limits(raw: String, status: Int) {
        var limits = HTTPRequestParser.Limits()
        limits.maxBodyBytes = 1 << 20
        let output = parse(raw, limits: limits)
        #expect(output.failure?.status == status, "\(raw.prefix(60)): \(String(describing: output.failure))")
    }

    @Test("a chunked body over the limit is refused at the chunk that crosses it")
    func chunkedOverLimit() {
        var limits = HTTPRequestParser.Limits()
        limits.maxBodyBytes = 8
        let output = parse("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\n", limits: limits)
        #expect(output.failure?.status == 413)
    }

    @Test("upgrade requests stop at the head and leave the frames unconsumed")
    func upgrade() throws {
        let raw = "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        let bytes = Data(raw.utf8) + Data([0x81, 0x80, 1, 2, 3, 4])
        let output = HTTPRequestParser(limits: .init()).feed(bytes)
        guard case .head(let found, let isUpgrade)? = output.events.first else {
            Issue.record("no head: \(output)")
            return
        }
        #expect(isUpgrade)
        #expect(output.consumed == raw.utf8.count)
        #expect(try WebSocketUpgradeRequest.evaluate(found).get() == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        var wrongVersion = found
        wrongVersion.headers["Sec-WebSocket-Version"] = "8"
        guard case .failure(let refusal) = WebSocketUpgradeRequest.evaluate(wrongVersion) else {
            Issue.record("version 8 accepted")
            return
        }
        #expect(refusal.status == 426 && refusal.headers["Sec-WebSocket-Version"] == "13")
        var noKey = found
        noKey.headers["Sec-WebSocket-Key"] = "short"
        #expect((try? WebSocketUpgradeRequest.evaluate(noKey).get()) == nil)
    }

    @Test("targets are split into a decoded, cleaned path and the raw query", arguments: [
        ("/a%20b/./c/../d?q=%41", "/a b/d", "q=%41"),
        ("/../../etc/passwd", "/etc/passwd", nil),
        ("/%2e%2e/x", "/x", nil),
        ("http://host:8080/p/q?z", "/p/q", "z"),
        ("/dir/", "/dir/", nil),
        ("/%zz", "/%zz", nil),
    ])
    func targets(raw: String, path: String, query: String?) throws {
        let target = try HTTPRequestTarget(raw: Array(raw.utf8))
        #expect(target.path == path)
        #expect(target.query == query)
    }

    @Test("a path with %00 is refused with 400 by the parser, before any handler sees it")
    func nulPath() {
        let output = parse("GET /storage/v1/object/b/a%00b HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(output.failure?.status == 400)
        #expect(output.events.isEmpty)
    }

    // MARK: The connection machine

    private let timeouts = HTTPConnectionMachine.Timeouts(request: .seconds(10), keepAlive: .seconds(5),
                                                          handler: .seconds(30), webSocketPing: .seconds(20),
                                                          linger: .seconds(1))

    @Test("each phase has one deadline and one consequence")
    func deadlines() {
        var machine = HTTPConnectionMachine(timeouts: timeouts)
        #expect(machine.deadline?.after == .seconds(10) && machine.deadline?.expiry == .close, "a new connection")
        let rearmFirst = machine.bytesArrived()
        #expect(!rearmFirst, "the first request's clock started at accept")
        #expect(machine.phase == .receiving && machine.deadline?.after == .seconds(10))
        machine.requestComplete()
        #expect(machine.deadline?.after == .seconds(30) && machine.deadline?.expiry == .answerTimedOut)
        let keptAlive = machine.responseFinished(keepAlive: true)
        #expect(keptAlive)
        #expect(machine.deadline?.after == .seconds(5) && machine.deadline?.expiry == .close, "idle keep-alive")
        let rearm = machine.bytesArrived()
        #expect(rearm, "a later request's clock starts at its first byte")
        machine.requestComplete()
        machine.responseStarted(streamed: true, heartbeat: .seconds(2))
        #expect(machine.deadline?.after == .seconds(2) && machine.deadline?.expiry == .heartbeat)
        let beat = machine.expired()
        #expect(beat == .heartbeat && machine.phase == .streaming(heartbeat: .seconds(2)))
        let stays = machine.responseFinished(keepAlive: false)
        #expect(!stays)
        #expect(machine.phase == .closed && machine.deadline == nil)
    }

    @Test("a slow request, a stuck handler and an idle connection each end the connection")
    func expiries() {
        var slow = HTTPConnectionMachine(timeouts: timeouts)
        _ = slow.bytesArrived()
        let slowExpiry = slow.expired()
        #expect(slowExpiry == .close && slow.phase == .closed)
        var stuck = HTTPConnectionMachine(timeouts: timeouts)
        stuck.requestComplete()
        let stuckExpiry = stuck.expired()
        #expect(stuckExpiry == .answerTimedOut)
        var unlimited = HTTPConnectionMachine(timeouts: .init(request: .seconds(1), keepAlive: .seconds(1), handler: nil,
                                                              webSocketPing: .seconds(1), linger: .seconds(1)))
        unlimited.requestComplete()
        #expect(unlimited.deadline == nil, "no handler timeout configured")
        var lingering = HTTPConnectionMachine(timeouts: timeouts)
        lingering.linger()
        #expect(lingering.deadline?.after == .seconds(1))
        let lingerExpiry = lingering.expired()
        #expect(lingerExpiry == .close)
    }

    @Test("a silent WebSocket peer is pinged each period and dropped after five unanswered pings; any byte resets it")
    func pings() {
        var machine = HTTPConnectionMachine(timeouts: timeouts)
        machine.upgraded()
        #expect(machine.deadline?.after == .seconds(20))
        var expiries: [HTTPConnectionMachine.Expiry?] = []
        for _ in 0..<HTTPConnectionMachine.maxSilentPings { expiries.append(machine.expired()) }
        _ = machine.bytesArrived()
        expiries.append(machine.expired())
        for _ in 0..<HTTPConnectionMachine.maxSilentPings { expiries.append(machine.expired()) }
        expiries.append(machine.expired())
        let pings = [HTTPConnectionMachine.Expiry?](repeating: .ping, count: HTTPConnectionMachine.maxSilentPings)
        #expect(expiries == pings + [.rearm] + pings + [.drop], "heard from: no ping that period")
    }
}
