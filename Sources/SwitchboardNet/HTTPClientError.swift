import CCurl

/// A failed HTTP exchange: curl's result code and message, the HTTP status when one arrived, and what kind of failure.
///
/// The description never includes the URL, header values or bodies, which may carry credentials.
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure; new kinds may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case transferFailed, unsuccessfulStatus, invalidRequest, clientClosed, responseTooLarge
        }

        private let kind: Kind

        /// curl could not complete the transfer (connect, TLS, timeout, reset...): see `curlCode`.
        public static let transferFailed = Code(kind: .transferFailed)
        /// The exchange completed but the status is not 2xx (from `HTTPResponse.ensureSuccess()`): see `status`.
        public static let unsuccessfulStatus = Code(kind: .unsuccessfulStatus)
        /// The request cannot be sent as given (for example a header value containing a line break).
        public static let invalidRequest = Code(kind: .invalidRequest)
        /// The client was released before the transfer could start.
        public static let clientClosed = Code(kind: .clientClosed)
        /// The response body (or one line of a line stream) passed the request's `maximumResponseBytes`; the
        /// transfer was cut there, never buffered further.
        public static let responseTooLarge = Code(kind: .responseTooLarge)

        /// The kind's name.
        public var description: String {
            switch kind {
            case .transferFailed: "transfer failed"
            case .unsuccessfulStatus: "unsuccessful status"
            case .invalidRequest: "invalid request"
            case .clientClosed: "client closed"
            case .responseTooLarge: "response too large"
            }
        }
    }

    /// The kind of failure.
    public let code: Code
    /// curl's result code (`CURLcode`, for example 28 for a timeout); 0 (`CURLE_OK`) when curl did not fail.
    public let curlCode: Int
    /// `curl_easy_strerror(curlCode)` for transfer failures, else our explanation.
    public let message: String
    /// curl's specific explanation from its error buffer (for example which port refused), when it gave one.
    public let detail: String?
    /// The HTTP status of the response, when one arrived.
    public let status: Int?
    /// How long the server asked to wait before a retry (its `Retry-After`), when an unsuccessful status said.
    public let retryAfter: Duration?

    /// Builds an error from its parts.
    public init(code: Code, curlCode: Int = 0, message: String, detail: String? = nil, status: Int? = nil,
                retryAfter: Duration? = nil) {
        self.code = code
        self.curlCode = curlCode
        self.message = message
        self.detail = detail
        self.status = status
        self.retryAfter = retryAfter
    }

    /// A transfer curl ended with `curlCode`, its message taken from `curl_easy_strerror`.
    init(curlCode: CURLcode, detail: String? = nil, status: Int? = nil) {
        self.init(code: .transferFailed, curlCode: Int(curlCode.rawValue),
                  message: String(cString: curl_easy_strerror(curlCode)),
                  detail: detail.flatMap { $0.isEmpty ? nil : $0 }, status: status)
    }

    /// A completed exchange whose status is not 2xx; `retryAfter` is the answer's `Retry-After`.
    init(unsuccessfulStatus status: Int, retryAfter: Duration? = nil) {
        self.init(code: .unsuccessfulStatus, message: "HTTP status \(status)", status: status, retryAfter: retryAfter)
    }

    /// A response whose body (or line) passed `limit` bytes and was cut there.
    public init(responseLargerThan limit: Int, status: Int? = nil) {
        self.init(code: .responseTooLarge, message: "the response exceeds the \(limit)-byte limit and was cut off",
                  status: status)
    }

    /// Whether curl gave up because a time limit passed (`CURLE_OPERATION_TIMEDOUT`, 28), including the low-speed limit.
    public var isTimeout: Bool { curlCode == Int(CURLE_OPERATION_TIMEDOUT.rawValue) }

    /// Whether no connection could be made: host not resolved (6) or connection refused or unreachable (7).
    public var isConnectionFailure: Bool {
        [CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT].contains { Int($0.rawValue) == curlCode }
    }

    /// Whether TLS failed: handshake, certificate or CA problems (35, 58, 59, 60, 64, 66, 77, 80, 83, 90, 91, 98).
    public var isTLSFailure: Bool {
        let codes: [CURLcode] = [
            CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_USE_SSL_FAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS,
            CURLE_SSL_CLIENTCERT,
        ]
        return codes.contains { Int($0.rawValue) == curlCode }
    }

    /// `HTTP client error (<kind>): <message> [curl <code>] [HTTP <status>] [— <detail>]`.
    public var description: String {
        var text = "HTTP client error (\(code)): \(message)"
        if curlCode != 0 { text += " [curl \(curlCode)]" }
        if let status { text += " [HTTP \(status)]" }
        if let detail { text += " — \(detail)" }
        return text
    }
}
