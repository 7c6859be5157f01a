import CCivetweb
import Foundation

/// The request line and header fields civetweb parsed, copied out of its per-connection buffers.
struct HTTPServerRequestHead: Sendable {
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

    /// civetweb's own keep-alive rule (`should_keep_alive`), so the `Connection` header we send matches what it does.
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

/// What reading a request body produced.
enum HTTPServerBodyResult {
    case complete(Data)
    case tooLarge
    case malformed
}

/// Reads and writes one civetweb connection; used only on the worker thread that owns it.
struct HTTPServerWire {
    let connection: OpaquePointer

    /// Copies the parsed request out of civetweb.
    func requestHead() -> HTTPServerRequestHead? {
        guard let info = mg_get_request_info(connection)?.pointee,
              let method = info.request_method, let path = info.local_uri else { return nil }
        var headers = HTTPHeaders()
        withUnsafeBytes(of: info.http_headers) { raw in
            let fields = raw.bindMemory(to: mg_header.self)
            for index in 0..<min(Int(info.num_headers), fields.count) {
                guard let name = fields[index].name, let value = fields[index].value else { continue }
                headers.add(String(cString: name), String(cString: value))
            }
        }
        let remoteAddress = withUnsafeBytes(of: info.remote_addr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let transferEncoding = headers["Transfer-Encoding"]?.lowercased()
        return HTTPServerRequestHead(
            method: HTTPMethod(rawValue: String(cString: method)),
            path: String(cString: path),
            rawQuery: info.query_string.map { String(cString: $0) },
            headers: headers,
            remoteAddress: remoteAddress,
            remotePort: Int(info.remote_port),
            httpVersion: info.http_version.map { String(cString: $0) } ?? "1.0",
            contentLength: info.content_length,
            isChunked: transferEncoding != nil && transferEncoding != "identity")
    }

    /// Reads the whole body, stopping as soon as it exceeds `limit` bytes.
    func readBody(limit: Int, expectedLength: Int64) -> HTTPServerBodyResult {
        var body = Data()
        if expectedLength > 0 { body.reserveCapacity(Int(expectedLength)) }
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress, $0.count) }
            if count < 0 { return .malformed }
            if count == 0 { break }
            body.append(contentsOf: buffer[0..<Int(count)])
            if body.count > limit { return .tooLarge }
        }
        // A short body means the client stalled past the request timeout or hung up.
        if expectedLength >= 0 && Int64(body.count) < expectedLength { return .malformed }
        return .complete(body)
    }

    /// Reads and drops up to `limit` more body bytes, so the response is not lost to a TCP reset on close.
    func drainBody(limit: Int) {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var drained = 0
        while drained < limit {
            let count = buffer.withUnsafeMutableBytes { mg_read(connection, $0.baseAddress, $0.count) }
            if count <= 0 { return }
            drained += Int(count)
        }
    }

    /// Writes raw bytes; `false` when the client is gone.
    @discardableResult
    func write(_ data: Data) -> Bool {
        guard !data.isEmpty else { return true }
        let written = data.withUnsafeBytes { mg_write(connection, $0.baseAddress, $0.count) }
        return written == data.count
    }

    /// Writes one chunk of a chunked body (never an empty one, which would end the body).
    func sendChunk(_ data: Data) -> Bool {
        guard !data.isEmpty else { return true }
        return data.withUnsafeBytes { raw in
            mg_send_chunk(connection, raw.baseAddress?.assumingMemoryBound(to: CChar.self), UInt32(raw.count))
        } >= 0
    }

    /// Writes the terminating zero-length chunk.
    @discardableResult
    func endChunks() -> Bool {
        mg_send_chunk(connection, "", 0) >= 0
    }

    /// Makes civetweb close the connection after this response instead of reading another request.
    func disableKeepAlive() {
        mg_disable_connection_keep_alive(connection)
    }

    /// Writes the status line and header fields (invalid fields are dropped, framing fields are ours).
    @discardableResult
    func writeHead(status: Int, headers: HTTPHeaders, framing: HTTPServerFraming, keepAlive: Bool) -> Bool {
        let status = (100...999).contains(status) ? status : 500
        let reason = mg_get_response_code_text(connection, Int32(status)).map { String(cString: $0) } ?? ""
        var head = "HTTP/1.1 \(status) \(reason)\r\n"
        let managed: Set<String> = ["content-length", "transfer-encoding", "connection"]
        for field in headers where Self.isValid(field) && !managed.contains(field.name.lowercased()) {
            head += "\(field.name): \(field.value)\r\n"
        }
        if headers["Date"] == nil { head += "Date: \(Self.httpDate())\r\n" }
        switch framing {
        case .length(let count): head += "Content-Length: \(count)\r\n"
        case .chunked: head += "Transfer-Encoding: chunked\r\n"
        case .untilClose, .none: break
        }
        head += "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        if !keepAlive { disableKeepAlive() }
        return write(Data(head.utf8))
    }

    /// A complete small response (errors, 100-continue refusals).
    @discardableResult
    func respond(status: Int, text: String, headers: HTTPHeaders = HTTPHeaders(), keepAlive: Bool,
                 isHead: Bool = false) -> Int32 {
        var headers = headers
        if headers["Content-Type"] == nil { headers["Content-Type"] = "text/plain; charset=utf-8" }
        let body = Data(text.utf8)
        writeHead(status: status, headers: headers, framing: .length(body.count), keepAlive: keepAlive)
        if !isHead { write(body) }
        return Int32(status)
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
