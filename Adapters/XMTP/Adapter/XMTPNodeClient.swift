import Foundation
import SwitchboardCore
import SwitchboardNet

/// One envelope as the node returns it from a query or a subscription (`GroupMessage.v1`).
struct XMTPNodeEnvelope: Sendable, Hashable {
    /// The node's sequence (the cursor).
    var sequence: UInt64
    /// The node's receive time in nanoseconds.
    var createdNs: UInt64
    /// The group's 16-byte ID.
    var groupID: [UInt8]
    /// The `XMTPGroupEnvelope` bytes.
    var data: [UInt8]

    /// Parses `{"v1":{"id","created_ns","group_id","data",..}}`; nil when a field is missing or malformed.
    init?(json: JSONValue) {
        guard let v1 = json["v1"], let id = v1["id"]?.stringValue.flatMap({ UInt64($0) }),
              let created = v1["created_ns"]?.stringValue.flatMap({ UInt64($0) }),
              let group = v1["group_id"]?.stringValue.flatMap({ Data(base64Encoded: $0) }),
              let data = v1["data"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else { return nil }
        sequence = id
        createdNs = created
        groupID = [UInt8](group)
        self.data = [UInt8](data)
    }
}

/// The node's answer to a presign request.
struct XMTPPresignedUpload: Sendable, Hashable {
    /// Where to `PUT` the bytes (no authorization).
    var uploadURL: URL
    /// Where anyone can `GET` them afterwards.
    var downloadURL: String
}

/// The adapter's HTTP client for the XMTP-like node: the MLS API's JSON gateway, uploads, error mapping.
final class XMTPNodeClient: Sendable {
    /// The node's base URL.
    let baseURL: URL
    /// The bearer token of the local inbox.
    let token: String
    /// The shared HTTP client.
    let http: HTTPClient
    /// The most bytes of one answer (of one line, on a subscription) read; a larger or endless one is cut there.
    let maximumResponseBytes: Int

    /// A client for the node at `baseURL` authenticating with `token`, reading at most `maximumResponseBytes` of
    /// an answer.
    init(baseURL: URL, token: String, http: HTTPClient, maximumResponseBytes: Int = 16 << 20) {
        self.baseURL = baseURL
        self.token = token
        self.http = http
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// A failed exchange as its source classifies it (a transfer that failed is a retryable `transport` error, an
    /// answer cut at the size limit likewise, a request that cannot be sent is not), with `what` in the message; a
    /// cancellation is rethrown.
    static func failure(_ what: String, _ error: any Error) -> any Error {
        if error is CancellationError { return error }
        let classified = SwitchboardError.wrapping(error)
        if classified.code == .internal { return SwitchboardError(.transport, "\(what): \(error)", retryable: true) }
        return SwitchboardError(classified.code, "\(what): \(error)", retryable: classified.isRetryable,
                                retryAfter: classified.retryAfter)
    }

    /// The URL of `path` below the base.
    func url(_ path: String) -> URL { RESTURL.url(base: baseURL, path: path) }

    /// A JSON `POST` to `path` with the bearer token (none when the token is empty: registration).
    func request(_ path: String, body: JSONValue, timeout: Duration? = .seconds(30)) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        if !token.isEmpty { headers.add("Authorization", "Bearer \(token)") }
        return HTTPRequest(method: .post, url: url(path), headers: headers, body: Data(body.serialized.utf8), timeout: timeout,
                           maximumResponseBytes: maximumResponseBytes)
    }

    /// Posts `body` to `path` and returns the parsed JSON answer; non-2xx answers become `SwitchboardError`s.
    func post(_ path: String, _ body: JSONValue) async throws -> JSONValue {
        let response: HTTPResponse
        do {
            response = try await http.send(request(path, body: body))
        } catch {
            throw Self.failure("request to the XMTP node failed", error)
        }
        guard response.isSuccess else { throw Self.error(status: response.status, body: response.body, retryAfter: response.retryAfter()) }
        guard let json = JSONValue.parseOrNil(response.body) else {
            throw SwitchboardError(.transport, "the XMTP node answered \(path) with invalid JSON", retryable: true)
        }
        return json
    }

    /// `send-group-messages` with one envelope.
    func send(envelope: [UInt8], shouldPush: Bool) async throws {
        let message: JSONValue = ["v1": ["data": .string(Data(envelope).base64EncodedString()),
                                         "sender_hmac": .string(""), "should_push": .bool(shouldPush)]]
        _ = try await post("/mls/v1/send-group-messages", ["messages": [message]])
    }

    /// One `query-group-messages` page.
    func query(groupID: [UInt8], ascending: Bool, cursor: UInt64, limit: Int) async throws -> [XMTPNodeEnvelope] {
        let body: JSONValue = [
            "group_id": .string(Data(groupID).base64EncodedString()),
            "paging_info": ["direction": .string(ascending ? "DIRECTION_ASCENDING" : "DIRECTION_DESCENDING"),
                            "limit": .int(Int64(max(1, min(limit, 100)))), "id_cursor": .string(String(cursor))],
        ]
        let json = try await post("/mls/v1/query-group-messages", body)
        return (json["messages"]?.arrayValue ?? []).compactMap(XMTPNodeEnvelope.init(json:))
    }

    /// Opens `subscribe-group-messages` for one group after `cursor`; the stream yields one JSON object a line.
    func subscribe(groupID: [UInt8], cursor: UInt64) async throws -> HTTPLineStream {
        let body: JSONValue = ["filters": [["group_id": .string(Data(groupID).base64EncodedString()),
                                            "id_cursor": .string(String(cursor))]]]
        let stream: HTTPLineStream
        do {
            stream = try await http.lines(request("/mls/v1/subscribe-group-messages", body: body, timeout: nil))
        } catch {
            throw Self.failure("subscribing at the XMTP node failed", error)
        }
        guard stream.isSuccess else {
            stream.cancel()
            // The error body is not read (it is a stream); the status and `Retry-After` say enough.
            throw Self.error(status: stream.status, body: Data("subscribe refused".utf8),
                             retryAfter: HTTPResponse(status: stream.status, headers: stream.headers).retryAfter())
        }
        return stream
    }

    /// `POST /upload/v1/presign` for a payload with this digest and length.
    func presign(digest: String, length: Int) async throws -> XMTPPresignedUpload {
        let json = try await post("/upload/v1/presign", ["content_digest": .string(digest), "content_length": .string(String(length))])
        guard let upload = json["upload_url"]?.stringValue.flatMap(URL.init(string:)),
              let download = json["download_url"]?.stringValue else {
            throw SwitchboardError(.transport, "presign answer lacks upload_url or download_url", retryable: true)
        }
        return XMTPPresignedUpload(uploadURL: upload, downloadURL: download)
    }

    /// `PUT`s the encrypted payload to a presigned URL, reporting progress.
    func put(_ url: URL, body: Data, progress: @escaping @Sendable (Double) -> Void) async throws {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/octet-stream")
        let response: HTTPResponse
        do {
            response = try await http.upload(HTTPRequest(method: .put, url: url, headers: headers, timeout: .seconds(120),
                                                         maximumResponseBytes: maximumResponseBytes),
                                             body: body, progress: progress)
        } catch {
            throw Self.failure("upload failed", error)
        }
        guard response.isSuccess else { throw Self.error(status: response.status, body: response.body, retryAfter: response.retryAfter()) }
    }

    /// `GET`s a download URL (public, no token), reading at most `maximumBytes` of it.
    func get(_ url: URL, maximumBytes: Int) async throws -> Data {
        let response: HTTPResponse
        do {
            response = try await http.send(HTTPRequest(method: .get, url: url, timeout: .seconds(120),
                                                       maximumResponseBytes: maximumBytes))
        } catch {
            throw Self.failure("download failed", error)
        }
        guard response.isSuccess else { throw Self.error(status: response.status, body: response.body, retryAfter: response.retryAfter()) }
        return response.body
    }

    /// The core error for a failed node answer (`{"code","message","details"}`); `retryAfter` is the answer's
    /// `Retry-After`, kept on retryable errors.
    static func error(status: Int, body: Data, retryAfter: Duration? = nil) -> SwitchboardError {
        let json = JSONValue.parseOrNil(body)
        let message = json?["message"]?.stringValue.map { ServerErrorText.oneLine($0) } ?? ServerErrorText.oneLine(body)
        let text = "XMTP node HTTP \(status): \(message)"
        switch status {
        case 401: return SwitchboardError(.unauthorized, text)
        case 403: return SwitchboardError(.forbidden, text)  // not a member of the group
        case 404: return SwitchboardError(.notFound, text)
        case 409: return SwitchboardError(.conflict, text)
        case 413: return SwitchboardError(.contentTooLarge, text)
        case 429: return SwitchboardError(.transport, text, retryable: true, retryAfter: retryAfter)
        case 400..<500: return SwitchboardError(.invalidArgument, text)
        default: return SwitchboardError(.transport, text, retryable: true, retryAfter: retryAfter)
        }
    }
}
