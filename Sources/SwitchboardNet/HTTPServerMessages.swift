import CHTTPParser
import Foundation

/// The request line and header fields of one request, as the parser found them.
struct HTTPServerRequestHead: Sendable, Equatable {
    var method: HTTPMethod
    var path: String
    var rawQuery: String?
    var headers: HTTPHeaders
    var remoteAddress: String
    var remotePort: Int
    var httpVersion: String
    /// `Content-Length`, or -1 when absent.
    var contentLength: Int64
    /// Whether the body is sent with `Transfer-Encoding: chunked`.
    var isChunked: Bool

    /// Whether the client sent `Expect: 100-continue` on HTTP/1.1.
    var expectsContinue: Bool {
        httpVersion == "1.1" && headers["Expect"]?.lowercased() == "100-continue"
    }

    /// The request value handed to handlers.
    func request(body: Data) -> HTTPServerRequest {
        HTTPServerRequest(method: method, path: path, rawQuery: rawQuery, headers: headers, body: body,
                          remoteAddress: remoteAddress, remotePort: remotePort, httpVersion: httpVersion)
    }

    /// Whether the connection may serve another request after this one (HTTP/1.1 unless `Connection: close`;
    /// HTTP/1.0 only with `Connection: keep-alive`), and never when keep-alive is turned off.
    func allowsKeepAlive(configured: Bool) -> Bool {
        guard configured else { return false }
        if let connection = headers["Connection"] {
            return connection.split(separator: ",").contains {
                $0.trimmingCharacters(in: .whitespaces).caseInsensitiveCompare("keep-alive") == .orderedSame
            }
        }
        return httpVersion == "1.1"
    }
}

/// How a response body is delimited.
enum HTTPServerFraming: Equatable {
    /// `Content-Length: n`.
    case length(Int)
    /// `Transfer-Encoding: chunked`.
    case chunked
    /// No length: the body ends when the connection closes (HTTP/1.0 streams).
    case untilClose
    /// No body at all (1xx, 204, 304).
    case none
}

/// The bytes of responses: heads, chunks and small complete answers. Pure.
enum HTTPResponseEncoder {
    /// The status line and header fields (invalid fields are dropped; framing and `Connection` fields are ours).
    static func head(status: Int, headers: HTTPHeaders, framing: HTTPServerFraming, keepAlive: Bool) -> Data {
        let status = (100...999).contains(status) ? status : 500
        var head = "HTTP/1.1 \(status) \(reasonPhrase(status))\r\n"
        let managed: Set<String> = ["content-length", "transfer-encoding", "connection"]
        for field in headers where isValid(field) && !managed.contains(field.name.lowercased()) {
            head += "\(field.name): \(field.value)\r\n"
        }
        if headers["Date"] == nil { head += "Date: \(httpDate())\r\n" }
        switch framing {
        case .length(let count): head += "Content-Length: \(count)\r\n"
        case .chunked: head += "Transfer-Encoding: chunked\r\n"
        case .untilClose, .none: break
        }
        head += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        return Data(head.utf8)
    }

    /// A complete small `text/plain` response (errors, refusals); `isHead` leaves the body out.
    static func text(status: Int, _ text: String, headers: HTTPHeaders = HTTPHeaders(), keepAlive: Bool,
                     isHead: Bool = false) -> Data {
        var headers = headers
        if headers["Content-Type"] == nil { headers["Content-Type"] = "text/plain; charset=utf-8" }
        let body = Data(text.utf8)
        var bytes = head(status: status, headers: headers, framing: .length(body.count), keepAlive: keepAlive)
        if !isHead { bytes.append(body) }
        return bytes
    }

    /// One chunk of a chunked body (empty data gives empty bytes: an empty chunk would end the body).
    static func chunk(_ data: Data) -> Data {
        guard !data.isEmpty else { return Data() }
        var bytes = Data(String(data.count, radix: 16).utf8)
        bytes.append(contentsOf: [13, 10])
        bytes.append(data)
        bytes.append(contentsOf: [13, 10])
        return bytes
    }

    /// The terminating zero-length chunk.
    static let lastChunk = Data("0\r\n\r\n".utf8)

    /// The interim answer to `Expect: 100-continue`.
    static let continueHead = Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// The reason phrase for `status` (http-parser's table), empty for codes it does not know.
    static func reasonPhrase(_ status: Int) -> String {
        let phrase = String(cString: http_status_str(http_status(rawValue: UInt32(status))))
        return phrase == "<unknown>" ? "" : phrase
    }

    private static func isValid(_ field: (name: String, value: String)) -> Bool {
        let forbiddenInName: Set<UInt8> = [0, 10, 13, 32, 9, UInt8(ascii: ":")]
        return !field.name.isEmpty && !field.name.utf8.contains { forbiddenInName.contains($0) }
            && !field.value.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }

    /// The current time as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    static func httpDate() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
