import CHTTPParser
import Foundation

/// Splits the bytes a client sends into requests with Debian's http-parser, enforcing the server's limits as the
/// bytes arrive: a head larger than `maxHeadBytes`, more than `maxHeaderFields` fields, or a body (declared, or a
/// single chunk, or received so far) larger than `maxBodyBytes` is refused before any more of it is buffered.
///
/// Pure: it never touches a socket, so every case is tested by feeding bytes. After each complete request it
/// pauses; the caller answers, then calls `next()` and feeds the bytes it did not consume (pipelined requests).
final class HTTPRequestParser {
    /// The limits one request must stay within.
    struct Limits: Sendable, Hashable {
        /// Request line plus header fields, in bytes.
        var maxHeadBytes = 16 * 1024
        /// How many header fields.
        var maxHeaderFields = 100
        /// The body after de-chunking, in bytes.
        var maxBodyBytes = 1 << 20
    }

    /// What the parser found in the bytes fed so far.
    enum Event: Equatable {
        /// A request head. `upgrade` is set for `Upgrade` + `Connection: upgrade` requests: the bytes after the head
        /// belong to the new protocol and are left unconsumed.
        case head(HTTPServerRequestHead, upgrade: Bool)
        /// Part of the body, de-chunked.
        case body(Data)
        /// The request is complete; the parser is paused until `next()`.
        case end
    }

    /// Why the byte stream cannot be a request; the connection answers `status` and closes.
    struct Failure: Error, Hashable, Sendable {
        /// The HTTP status to answer: 400, 413 or 431.
        var status: Int
        /// A short explanation for the response body and the log.
        var reason: String
    }

    /// The result of one `feed`.
    struct Output: Equatable {
        /// What was found, in order.
        var events: [Event] = []
        /// How many of the fed bytes were consumed; the rest wait for `next()` (or belong to an upgrade).
        var consumed = 0
        /// Set when the stream is not HTTP or breaks a limit; nothing more should be fed.
        var failure: Failure?
    }

    let limits: Limits
    private let parser: UnsafeMutablePointer<http_parser>
    private var output = Output()
    private var url: [UInt8] = []
    private var fields: [(name: [UInt8], value: [UInt8])] = []
    private var lastWasValue = false
    private var headBytes = 0
    private var bodyBytes = 0
    private var inHead = false
    private var paused = false
    private var stoppedBy: Failure?

    /// A parser for one connection's requests.
    init(limits: Limits) {
        self.limits = limits
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_REQUEST)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        parser.deallocate()
    }

    /// Starts over on a fresh request (after an upgrade offer that was declined, which http-parser treats as the end
    /// of HTTP on the connection); paused until `next()` like after any request.
    func reset() {
        http_parser_init(parser, HTTP_REQUEST)
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        http_parser_pause(parser, 1)
        paused = true
    }

    /// Resumes after `.end`, ready for the next request on the connection.
    func next() {
        paused = false
        http_parser_pause(parser, 0)
    }

    /// Parses as much of `bytes` as forms the current request.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Output {
        output = Output()
        guard stoppedBy == nil else {
            output.failure = stoppedBy
            return output
        }
        guard !paused, let base = bytes.baseAddress, !bytes.isEmpty else { return output }
        let consumed = withUnsafePointer(to: Self.settings) { settings in
            http_parser_execute(parser, settings, base.assumingMemoryBound(to: CChar.self), bytes.count)
        }
        output.consumed = consumed
        let code = http_errno(rawValue: parser.pointee.http_errno)
        if let failure = stoppedBy {
            output.failure = failure
        } else if code != HPE_OK && code != HPE_PAUSED {
            let name = String(cString: http_errno_description(code))
            let failure = Failure(status: 400, reason: "malformed request: \(name)")
            stoppedBy = failure
            output.failure = failure
        }
        return output
    }

    /// Convenience for tests and small inputs.
    func feed(_ data: Data) -> Output {
        data.withUnsafeBytes { feed($0) }
    }

    // MARK: Callbacks (http-parser calls these synchronously inside `feed`)

    /// Records the failure and halts http-parser: -1, because 1 and 2 from `on_headers_complete` mean "no body".
    private func stop(_ status: Int, _ reason: String) -> Int32 {
        stoppedBy = Failure(status: status, reason: reason)
        return -1
    }

    private func countHead(_ length: Int) -> Int32 {
        headBytes += length
        return headBytes > limits.maxHeadBytes
            ? stop(431, "request head larger than \(limits.maxHeadBytes) bytes") : 0
    }

    fileprivate func messageBegin() -> Int32 {
        inHead = true
        url.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        lastWasValue = false
        headBytes = 0
        bodyBytes = 0
        return 0
    }

    fileprivate func urlData(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        url.append(contentsOf: bytes)
        return countHead(bytes.count)
    }

    fileprivate func fieldData(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if lastWasValue || fields.isEmpty {
            guard fields.count < limits.maxHeaderFields else {
                return stop(431, "more than \(limits.maxHeaderFields) header fields")
            }
            fields.append(([], []))
            lastWasValue = false
        }
        fields[fields.count - 1].name.append(contentsOf: bytes)
        return countHead(bytes.count + 4)
    }

    fileprivate func valueData(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        if fields.isEmpty { fields.append(([], [])) }
        fields[fields.count - 1].value.append(contentsOf: bytes)
        lastWasValue = true
        return countHead(bytes.count)
    }

    fileprivate func headersComplete() -> Int32 {
        inHead = false
        var headers = HTTPHeaders()
        for field in fields {
            headers.add(String(decoding: field.name, as: UTF8.self), String(decoding: field.value, as: UTF8.self))
        }
        let declared = parser.pointee.content_length
        let hasLength = parser.pointee.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0
        let isChunked = parser.pointee.flags & UInt32(F_CHUNKED.rawValue) != 0
        let target: HTTPRequestTarget
        do throws(HTTPRequestPath.Refusal) {
            target = try HTTPRequestTarget(raw: url)
        } catch {
            return stop(400, error.description)
        }
        let method = String(cString: http_method_str(http_method(rawValue: parser.pointee.method)))
        let head = HTTPServerRequestHead(
            method: HTTPMethod(rawValue: method), path: target.path, rawQuery: target.query, headers: headers,
            remoteAddress: "", remotePort: 0,
            httpVersion: "\(parser.pointee.http_major).\(parser.pointee.http_minor)",
            contentLength: hasLength ? Int64(clamping: declared) : -1, isChunked: isChunked)
        // http-parser refuses most ambiguous framing itself; the pure check states the rule for every case.
        do throws(HTTPRequestFraming.Violation) {
            try HTTPRequestFraming.validate(headers)
        } catch {
            return stop(400, error.description)
        }
        output.events.append(.head(head, upgrade: parser.pointee.upgrade == 1))
        if hasLength && declared > UInt64(limits.maxBodyBytes) {
            return stop(413, "request body larger than \(limits.maxBodyBytes) bytes")
        }
        return 0
    }

    fileprivate func chunkHeader() -> Int32 {
        let size = parser.pointee.content_length
        guard size <= UInt64(limits.maxBodyBytes - bodyBytes) else {
            return stop(413, "request body larger than \(limits.maxBodyBytes) bytes")
        }
        return 0
    }

    fileprivate func bodyData(_ bytes: UnsafeRawBufferPointer) -> Int32 {
        bodyBytes += bytes.count
        guard bodyBytes <= limits.maxBodyBytes else {
            return stop(413, "request body larger than \(limits.maxBodyBytes) bytes")
        }
        output.events.append(.body(Data(bytes)))
        return 0
    }

    fileprivate func messageComplete() -> Int32 {
        output.events.append(.end)
        url.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        bodyBytes = 0
        paused = true
        http_parser_pause(parser, 1)
        return 0
    }

    private static func owner(_ parser: UnsafeMutablePointer<http_parser>?) -> HTTPRequestParser {
        Unmanaged<HTTPRequestParser>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    private static func bytes(_ at: UnsafePointer<CChar>?, _ length: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: at, count: at == nil ? 0 : length)
    }

    private static let settings: http_parser_settings = {
        var settings = http_parser_settings()
        settings.on_message_begin = { owner($0).messageBegin() }
        settings.on_url = { owner($0).urlData(bytes($1, $2)) }
        settings.on_header_field = { owner($0).fieldData(bytes($1, $2)) }
        settings.on_header_value = { owner($0).valueData(bytes($1, $2)) }
        settings.on_headers_complete = { owner($0).headersComplete() }
        settings.on_chunk_header = { owner($0).chunkHeader() }
        settings.on_body = { owner($0).bodyData(bytes($1, $2)) }
        settings.on_message_complete = { owner($0).messageComplete() }
        return settings
    }()
}

/// A request target split into its decoded, cleaned path (`HTTPRequestPath`) and its raw query.
struct HTTPRequestTarget: Hashable, Sendable {
    /// The decoded path, always starting with `/`.
    var path: String
    /// The query as sent, without `?`; nil when there was none.
    var query: String?

    /// Splits `raw` (origin form `/a/b?q`, or absolute form `http://host/a/b?q`); a path that decodes to a control
    /// character is refused.
    init(raw: [UInt8]) throws(HTTPRequestPath.Refusal) {
        var bytes = raw[...]
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) { bytes = bytes[..<hash] }
        if bytes.first != UInt8(ascii: "/"), let scheme = bytes.firstRange(of: Array("://".utf8)) {
            let rest = bytes[scheme.upperBound...]
            bytes = rest.firstIndex(of: UInt8(ascii: "/")).map { rest[$0...] } ?? rest[rest.endIndex...]
        }
        var pathBytes = bytes
        query = nil
        if let mark = bytes.firstIndex(of: UInt8(ascii: "?")) {
            pathBytes = bytes[..<mark]
            query = String(decoding: bytes[(mark + 1)...], as: UTF8.self)
        }
        let rawPath = String(decoding: pathBytes, as: UTF8.self)
        path = try HTTPRequestPath.decode(rawPath.hasPrefix("/") ? rawPath : "/" + rawPath)
    }
}
