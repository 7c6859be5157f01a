import Foundation
import Testing
@testable import SwitchboardNet

@Suite("HTTPServer routing and parsing (no sockets)")
struct HTTPServerRoutingTests {
    private func router() -> HTTPServerRouter<String> {
        var router = HTTPServerRouter<String>()
        router.add(method: .get, prefix: "/", handler: "root")
        router.add(method: .get, prefix: "/api", handler: "api")
        router.add(method: .get, prefix: "/api/rooms/", handler: "rooms")
        router.add(method: .post, prefix: "/api/rooms", handler: "create room")
        return router
    }

    private func handler(_ match: HTTPServerRouter<String>.Match) -> String? {
        if case .matched(let handler) = match { return handler }
        return nil
    }

    @Test("the longest matching prefix wins, on whole segments", arguments: [
        ("/", "root"), ("/index.html", "root"), ("/api", "api"), ("/api/", "api"), ("/apix", "root"),
        ("/api/rooms", "rooms"), ("/api/rooms/7/messages", "rooms"), ("/api/roomsx", "api"),
    ])
    func longestPrefix(path: String, expected: String) {
        #expect(handler(router().match(method: .get, path: path)) == expected)
    }

    @Test("the method picks among routes with the same prefix; HEAD falls back to GET")
    func methods() {
        let router = router()
        #expect(handler(router.match(method: .post, path: "/api/rooms")) == "create room")
        #expect(handler(router.match(method: .head, path: "/api/rooms/1")) == "rooms")
    }

    @Test("a path served only for other methods is 405 with the allowed methods")
    func methodNotAllowed() {
        var router = HTTPServerRouter<String>()
        router.add(method: .post, prefix: "/upload", handler: "upload")
        router.add(method: .get, prefix: "/upload/status", handler: "status")
        guard case .methodNotAllowed(let allowed) = router.match(method: .delete, path: "/upload/status") else {
            Issue.record("expected 405")
            return
        }
        #expect(Set(allowed) == [.post, .get, .head])
        guard case .notFound = router.match(method: .get, path: "/elsewhere") else {
            Issue.record("expected 404")
            return
        }
    }

    @Test("adding the same method and prefix replaces the route; prefixes are normalised")
    func replacement() {
        var router = HTTPServerRouter<String>()
        router.add(method: .get, prefix: "feed/", handler: "old")
        router.add(method: .get, prefix: "/feed", handler: "new")
        #expect(handler(router.match(method: .get, path: "/feed/x")) == "new")
        #expect(HTTPServerRouter<String>.normalize("//") == "/")
    }

    @Test("query strings are split and percent-decoded, repeated names kept in order")
    func queryParsing() {
        let items = HTTPServerRequest.parseQuery("a=1&b=x%20y&a=2&flag&empty=&plus=a+b&check=%E2%9C%93&bad=%zz&&")
        #expect(items.map(\.name) == ["a", "b", "a", "flag", "empty", "plus", "check", "bad"])
        #expect(items.map(\.value) == ["1", "x y", "2", "", "", "a b", "✓", "%zz"])
        let request = HTTPServerRequest(method: .get, path: "/", rawQuery: "a=1&a=2&c=%3D")
        #expect(request.queryValue("a") == "1")
        #expect(request.queryValues("a") == ["1", "2"])
        #expect(request.queryValue("c") == "=")
        #expect(request.queryValue("missing") == nil)
    }

    @Test("the Connection header we send follows HTTP/1.x's keep-alive rule", arguments: [
        ("1.1", nil, true), ("1.1", "close", false), ("1.1", "Keep-Alive", true), ("1.1", "Upgrade", false),
        ("1.0", nil, false), ("1.0", "keep-alive", true),
    ] as [(String, String?, Bool)])
    func keepAlive(version: String, connection: String?, expected: Bool) {
        var headers = HTTPHeaders()
        if let connection { headers["Connection"] = connection }
        let head = HTTPServerRequestHead(method: .get, path: "/", rawQuery: nil, headers: headers, remoteAddress: "",
                                         remotePort: 0, httpVersion: version, contentLength: -1, isChunked: false)
        #expect(head.allowsKeepAlive(configured: true) == expected)
        #expect(head.allowsKeepAlive(configured: false) == false)
    }

    @Test("HTTP dates are IMF-fixdate")
    func httpDate() {
        let date = HTTPResponseEncoder.httpDate()
        #expect(date.range(of: #"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$"#,
                            options: .regularExpression) != nil)
    }
}
