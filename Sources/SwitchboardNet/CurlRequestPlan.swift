import Foundation

/// Everything the curl thread needs to run one request, validated and prepared before it is queued.
struct CurlRequestPlan: Sendable {
    /// The URL, as text.
    let url: String
    /// The method.
    let method: HTTPMethod
    /// `Name: value` lines for CURLOPT_HTTPHEADER, including the ones that switch curl's defaults off.
    let headerLines: [String]
    /// The body, sent through the read callback, or nil for none.
    let body: Data?
    /// CURLOPT_TIMEOUT_MS, or nil for no limit on the whole transfer.
    let timeoutMilliseconds: Int?
    /// Called on the curl thread with the fraction of the body sent, only ever increasing.
    let progress: (@Sendable (Double) -> Void)?
    /// The most body bytes the transfer may receive before it is aborted, or nil for no limit.
    var maximumBodyBytes: Int?

    /// Validates `request` and prepares it; throws `.invalidRequest` for header fields that cannot be sent safely.
    init(request: HTTPRequest, body: Data?, timeout: Duration?,
         progress: (@Sendable (Double) -> Void)? = nil) throws(HTTPClientError) {
        self.url = request.url.absoluteString
        self.method = request.method
        self.body = body
        self.timeoutMilliseconds = timeout?.curlMilliseconds
        self.progress = progress
        self.headerLines = try Self.headerLines(for: request.headers)
    }

    /// The header lines: the caller's fields, then blanks that stop curl adding `Expect: 100-continue` and a
    /// form `Content-Type` the caller did not ask for.
    private static func headerLines(for headers: HTTPHeaders) throws(HTTPClientError) -> [String] {
        var lines: [String] = []
        for field in headers {
            guard isToken(field.name) else {
                throw HTTPClientError(code: .invalidRequest, message: "header name \"\(field.name)\" is not a valid token")
            }
            guard !field.value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0x00 }) else {
                // Never echo the value: it may be a credential.
                throw HTTPClientError(code: .invalidRequest, message: "header \(field.name) has a line break or NUL in its value")
            }
            // curl drops `Name:` with an empty value; `Name;` is its syntax for sending a field with no value.
            lines.append(field.value.isEmpty ? "\(field.name);" : "\(field.name): \(field.value)")
        }
        for name in ["Expect", "Content-Type"] where headers[name] == nil {
            lines.append("\(name):")
        }
        return lines
    }

    /// Whether `name` is an RFC 9110 token (no spaces, controls or separators).
    private static func isToken(_ name: String) -> Bool {
        let separators = Set("()<>@,;:\\\"/[]?={} \t".utf8)
        return !name.isEmpty && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !separators.contains($0) }
    }
}

extension Duration {
    /// Whole milliseconds, rounded up and at least 1 (curl reads 0 as "no limit").
    var curlMilliseconds: Int {
        let (seconds, attoseconds) = components
        let perMillisecond: Int64 = 1_000_000_000_000_000
        let (whole, partial) = attoseconds.quotientAndRemainder(dividingBy: perMillisecond)
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return seconds > 0 ? Int.max : 1 }
        return max(1, Int(clamping: scaled + whole + (partial > 0 ? 1 : 0)))
    }

    /// Whole seconds, rounded up and at least 1 (for CURLOPT_LOW_SPEED_TIME).
    var curlSeconds: Int {
        let (seconds, attoseconds) = components
        return max(1, Int(clamping: seconds + (attoseconds > 0 ? 1 : 0)))
    }
}
