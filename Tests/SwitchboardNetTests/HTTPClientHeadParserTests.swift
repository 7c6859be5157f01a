import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// The header-line state machine, without sockets.
    @Suite("Response head parser")
    struct HeadParser {
        /// Feeds `lines` and returns every head reported.
        static func feed(_ lines: [String], followsRedirects: Bool = false) -> [CurlResponseHead] {
            var parser = CurlResponseHeadParser(followsRedirects: followsRedirects)
            return lines.compactMap { parser.consume($0 + "\r\n") }
        }

        @Test("Repeated fields are kept in order and values are trimmed")
        func repeatedFields() throws {
            let heads = Self.feed(["HTTP/1.1 200 OK", "Set-Cookie: a=1", "Content-Type:  text/plain ", "set-cookie: b=2", ""])
            let head = try #require(heads.first)
            #expect(heads.count == 1)
            #expect(head.status == 200)
            #expect(head.headers.values("Set-Cookie") == ["a=1", "b=2"])
            #expect(head.headers["content-type"] == "text/plain")
        }

        @Test("Interim 1xx blocks are skipped")
        func interimResponses() {
            let heads = Self.feed(["HTTP/1.1 100 Continue", "", "HTTP/1.1 103 Early Hints", "Link: </a>", "",
                                   "HTTP/1.1 201 Created", "Location: /x", ""])
            #expect(heads.map(\.status) == [201])
            #expect(heads.first?.headers.fields.map(\.name) == ["Location"])
        }

        @Test("A followed redirect's block is skipped; without following it is the final head")
        func redirects() {
            let lines = ["HTTP/1.1 302 Found", "Location: /next", "", "HTTP/2 200", "X-Final: yes", ""]
            #expect(Self.feed(lines, followsRedirects: true).map(\.status) == [200])
            #expect(Self.feed(lines, followsRedirects: false).first?.status == 302)
        }

        @Test("Folded continuation lines join the previous field; trailers do not report a second head")
        func foldingAndTrailers() {
            var parser = CurlResponseHeadParser(followsRedirects: false)
            var heads: [CurlResponseHead] = []
            for line in ["HTTP/1.1 200 OK", "X-Long: first", "\tsecond", "", "X-Trailer: t", ""] {
                if let head = parser.consume(line + "\r\n") { heads.append(head) }
            }
            #expect(heads.count == 1)
            #expect(heads.first?.headers["X-Long"] == "first second")
            #expect(parser.head.headers["X-Trailer"] == "t")
        }
    }
}
