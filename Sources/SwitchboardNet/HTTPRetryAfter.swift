import Foundation

extension HTTPResponse {
    /// The longest wait a `Retry-After` field may ask for that a client honours (an hour); longer is capped.
    public static let retryAfterCap: Duration = .seconds(3600)

    /// How long the server asks to wait before retrying (RFC 9110 §10.2.3): `Retry-After` as delay-seconds or as
    /// an HTTP-date (then measured from `now`), capped at `retryAfterCap`; nil without a usable field.
    public func retryAfter(now: Date = Date()) -> Duration? {
        guard let value = headers["Retry-After"]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int64(value) {
            guard seconds >= 0 else { return nil }
            return min(.seconds(seconds), Self.retryAfterCap)
        }
        guard let date = Self.httpDate(value) else { return nil }
        let seconds = max(0, date.timeIntervalSince(now))
        return min(.milliseconds(Int64((seconds * 1000).rounded())), Self.retryAfterCap)
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form servers send; nil for anything else.
    static func httpDate(_ text: String) -> Date? {
        // A formatter per call: this runs only on a failed answer, and DateFormatter is not Sendable.
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text)
    }
}
