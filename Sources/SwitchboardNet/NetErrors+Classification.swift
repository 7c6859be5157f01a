import SwitchboardCore

/// What an HTTP exchange's failure means to Switchboard, decided here so that no caller has to guess.
///
/// | failure | code | retryable |
/// | --- | --- | --- |
/// | curl could not complete the transfer (connect, DNS, TLS, timeout, reset) | `transport` | yes |
/// | the client was released before the transfer started | `transport` | yes |
/// | the request cannot be sent as given | `invalidArgument` | no |
/// | the response passed the request's `maximumResponseBytes` (cut off, never buffered) | `transport` | yes |
/// | HTTP 408, 429, 5xx (with the answer's `Retry-After`) | `transport` | yes |
/// | HTTP 401 / 403 / 404 / 409 / 413 | `unauthorized` / `forbidden` / `notFound` / `conflict` / `contentTooLarge` | no |
/// | any other unsuccessful status (400, 422, ...) | `refused` | no |
///
/// The adapters map their servers' answers themselves (each knows its error bodies); this is the classification
/// of a failure that reaches a caller as the HTTP client raised it.
extension HTTPClientError: SwitchboardErrorConvertible {
    /// The public error for this failure (see the table above).
    public var switchboardError: SwitchboardError {
        if code == .invalidRequest { return SwitchboardError(.invalidArgument, description) }
        // A server fault, as a 5xx is: repeating the request (under the same idempotency key) is safe, and callers
        // back off and cap their attempts; refusing to retry would fail a publish the server may have committed,
        // or stop a bridge direction for good over one bad answer.
        if code == .responseTooLarge { return SwitchboardError(.transport, description, retryable: true) }
        guard code == .unsuccessfulStatus, let status else {
            return SwitchboardError(.transport, description, retryable: true)
        }
        return Self.switchboardError(status: status, description, retryAfter: retryAfter)
    }

    /// The public error for an unsuccessful HTTP `status`, with `message` (see the table above).
    public static func switchboardError(status: Int, _ message: String, retryAfter: Duration? = nil) -> SwitchboardError {
        switch status {
        case 408, 429, 500...599: SwitchboardError(.transport, message, retryable: true, retryAfter: retryAfter)
        case 401: SwitchboardError(.unauthorized, message)
        case 403: SwitchboardError(.forbidden, message)
        case 404: SwitchboardError(.notFound, message)
        case 409: SwitchboardError(.conflict, message)
        case 413: SwitchboardError(.contentTooLarge, message)
        default: SwitchboardError(.refused, message)
        }
    }
}

/// What a WebSocket failure means to Switchboard: a connection that failed, closed or timed out is a retryable
/// `transport` error; a URL, header or call that cannot work as given is not retryable.
extension WebSocketError: SwitchboardErrorConvertible {
    /// The public error for this failure.
    public var switchboardError: SwitchboardError {
        switch code {
        case .connectFailed, .connectionClosed, .timedOut, .notConnected:
            SwitchboardError(.transport, description, retryable: true)
        case .unsupported:
            SwitchboardError(.notSupported, description)
        case .alreadyConnected:
            SwitchboardError(.internal, description)
        default:  // invalidURL, invalidHeader, payloadTooLarge, invalidArgument
            SwitchboardError(.invalidArgument, description)
        }
    }
}
