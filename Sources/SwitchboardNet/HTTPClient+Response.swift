import Foundation

/// A complete response: status code, header fields (repeated fields kept) and body.
public struct HTTPResponse: Sendable, Hashable {
    /// The status code of the final response (after any 1xx interim responses).
    public var status: Int
    /// The header fields of the final response, in the order received.
    public var headers: HTTPHeaders
    /// The body, decoded when the server compressed it.
    public var body: Data

    /// Makes a response from its parts.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// Whether the status is in 200–299.
    public var isSuccess: Bool { (200..<300).contains(status) }

    /// Returns the response when its status is 2xx, else throws an `HTTPClientError` carrying the status and the
    /// answer's `Retry-After`.
    @discardableResult
    public func ensureSuccess() throws(HTTPClientError) -> HTTPResponse {
        guard isSuccess else { throw HTTPClientError(unsuccessfulStatus: status, retryAfter: retryAfter()) }
        return self
    }
}
