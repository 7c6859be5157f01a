import Foundation

/// A request for `HTTPClient`: method, URL, header fields, optional body and optional total timeout.
public struct HTTPRequest: Sendable, Hashable {
    /// The request method.
    public var method: HTTPMethod
    /// The absolute `http` or `https` URL.
    public var url: URL
    /// Header fields sent as given, in order (an empty value is sent as an empty field).
    public var headers: HTTPHeaders
    /// The body, or nil for none; `upload(_:body:progress:)` replaces it.
    public var body: Data?
    /// The limit for the whole transfer, or nil for the client's default.
    public var timeout: Duration?
    /// The most response bytes held for this request, or nil for no limit: for `send` and `upload` the whole
    /// (decoded) body, which fails with `.responseTooLarge` as soon as it passes the limit, so an endless or huge
    /// answer is cut instead of buffered; for `lines(_:)` the longest line.
    public var maximumResponseBytes: Int?

    /// Makes a request; the method defaults to GET.
    public init(method: HTTPMethod = .get, url: URL, headers: HTTPHeaders = HTTPHeaders(), body: Data? = nil,
                timeout: Duration? = nil, maximumResponseBytes: Int? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }
}
