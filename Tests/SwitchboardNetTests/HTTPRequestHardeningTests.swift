import Foundation
import SwitchboardNet
import Testing

/// `HTTPRequestFraming` (conflicting `Content-Length`, `Transfer-Encoding` with `Content-Length`), without a server.
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
}

extension NetworkSuites {
    /// The framing refusals on a running server.
    @Suite("HTTPServer refuses ambiguous framing")
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
    }
}
