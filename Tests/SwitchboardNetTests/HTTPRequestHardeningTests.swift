import Foundation
import SwitchboardNet
import Testing

/// `HTTPRequestFraming` (conflicting `Content-Length`, `Transfer-Encoding` with `Content-Length`) and
/// `HTTPRequestPath` (percent-decoding that refuses `%00`, civetweb's dot-segment cleaning), without a server.
@Suite struct HTTPRequestHardeningTests {
    @Test("unambiguous framing passes", arguments: [
        [(String, String)](), [("Content-Length", "5")], [("content-length", "0")], [("Content-Length", "5"), ("Content-Length", "5")],
        [("Content-Length", "5, 5")], [("Content-Length", " 12 ")], [("Transfer-Encoding", "chunked")], [("Transfer-Encoding", "Chunked")],
        [("Transfer-Encoding", "identity")], [("Host", "x"), ("X-Content-Length", "1"), ("Content-Length", "1")],
    ])
    func framingAccepted(fields: [(String, String)]) throws {
        try HTTPRequestFraming.validate(HTTPHeaders(fields))
    }

    @Test("conflicting or ambiguous framing is refused", arguments: [
        ([("Content-Length", "5"), ("Content-Length", "6")], "conflicting Content-Length values"),
        ([("Content-Length", "5, 6")], "conflicting Content-Length values"),
        ([("Content-Length", "5"), ("Content-Length", "05")], "conflicting Content-Length values"),
        ([("Transfer-Encoding", "chunked"), ("Content-Length", "5")], "Transfer-Encoding and Content-Length together"),
        ([("Content-Length", "0"), ("Transfer-Encoding", "identity")], "Transfer-Encoding and Content-Length together"),
        ([("Content-Length", "5x")], "Content-Length '5x' is not a number"),
        ([("Content-Length", "-1")], "Content-Length '-1' is not a number"),
        ([("Content-Length", "5,")], "Content-Length '' is not a number"),
        ([("Transfer-Encoding", "chunked"), ("Transfer-Encoding", "chunked")], "Transfer-Encoding must be a single 'chunked'"),
        ([("Transfer-Encoding", "gzip, chunked")], "Transfer-Encoding must be a single 'chunked'"),
    ])
    func framingRefused(fields: [(String, String)], reason: String) {
        let violation = #expect(throws: HTTPRequestFraming.Violation.self) { try HTTPRequestFraming.validate(HTTPHeaders(fields)) }
        #expect(violation?.description == reason)
    }

    @Test("paths are percent-decoded as civetweb decodes them ('+' stays, a stray '%' stays)", arguments: [
        ("/echo/sub%20dir", "/echo/sub dir"), ("/a+b", "/a+b"), ("/%E2%9C%93", "/✓"), ("/100%", "/100%"), ("/%zz%4", "/%zz%4"),
        ("/%41%6a", "/Aj"), ("/", "/"), ("/rest/v1/messages", "/rest/v1/messages"),
    ])
    func pathDecoded(raw: String, expected: String) throws {
        #expect(try HTTPRequestPath.decode(raw) == expected)
    }

    @Test("dot segments, backslashes, repeated slashes and trailing dots are cleaned as civetweb cleans them", arguments: [
        ("/a/../b", "/b"), ("/a/./b", "/a/b"), ("/../../etc/passwd", "/etc/passwd"), ("/a/%2e%2e/%2E%2E/b", "/b"),
        ("/a%2F..%2F..%2Fb", "/b"), ("/a%5C..%5C..%5Cb", "/b"), ("/a//b", "/a/b"), ("/a/b.", "/a/b"), ("/a./b", "/a/b"),
        ("/a/..", "/"), ("/a/.", "/a/"), ("/x/%252e%252e/y", "/x/%2e%2e/y"), ("/a.b/c", "/a.b/c"), ("/.../b", "/b"),
    ])
    func pathCleaned(raw: String, expected: String) throws {
        #expect(try HTTPRequestPath.decode(raw) == expected)
    }

    @Test("NUL and other control characters after decoding are refused, not cut short", arguments: [
        "/storage/v1/object/b/a%00b", "/a%00", "/%0a", "/a%0D%0Ab", "/a%1fb", "/a%7Fb", "/a%09b",
    ])
    func controlCharactersRefused(raw: String) {
        #expect(throws: HTTPRequestPath.Refusal.self) { try HTTPRequestPath.decode(raw) }
    }
}

extension NetworkSuites {
    /// The framing and path refusals on a running server.
    @Suite("HTTPServer refuses ambiguous framing and NUL in paths")
    struct HTTPServerFramingTests {
        /// Runs `body` against a server whose `/echo` answers the path and body it received.
        private func withServer(_ body: (Int) async throws -> Void) async throws {
            let server = HTTPServer(configuration: HTTPServer.Configuration())
            for method in [HTTPMethod.get, .post] {
                server.route(method, "/echo") { request in
                    .text(request.path + " " + String(decoding: request.body, as: UTF8.self))
                }
            }
            try await NetTest.serving(server, body)
        }

        /// Sends `raw` on a fresh connection; the reply and whether the server closed the connection.
        private func exchange(_ raw: String, port: Int) async throws -> (text: String, closed: Bool) {
            let socket = try await RawSocket.connect(port: port)
            try await socket.send(raw)
            let (data, closed) = try await socket.receive(timeout: .seconds(10))
            return (String(decoding: data, as: UTF8.self), closed)
        }

        @Test("two Content-Length values, or Transfer-Encoding with Content-Length, get 400 and a closed connection",
              arguments: [
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\nContent-Length: 5\r\n\r\nhello!",
                  "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5, 6\r\n\r\nhello!",
              ])
        func ambiguousFraming(raw: String) async throws {
            try await withServer { port in
                let (text, closed) = try await exchange(raw, port: port)
                #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(text)")
                #expect(text.contains("\r\nConnection: close\r\n"))
                #expect(!text.contains("/echo "), "the handler never ran")
                #expect(closed)
            }
        }

        @Test("a path with %00 gets 400 instead of reaching the handler cut short; ordinary paths still decode")
        func nulInPath() async throws {
            try await withServer { port in
                let (text, closed) = try await exchange("GET /echo/a%00b HTTP/1.1\r\nHost: x\r\n\r\n", port: port)
                #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(text)")
                #expect(!text.contains("/echo/a "))
                #expect(closed)
                let fine = try await exchange("POST /echo/x/%2e%2e/sub%20dir HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n"
                                              + "Connection: close\r\n\r\nok", port: port)
                #expect(fine.text.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(fine.text)")
                #expect(fine.text.hasSuffix("\r\n\r\n/echo/sub dir ok"), "\(fine.text)")
            }
        }
    }
}
