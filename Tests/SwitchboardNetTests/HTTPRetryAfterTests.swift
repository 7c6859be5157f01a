import Foundation
import Testing
@testable import SwitchboardNet

/// `Retry-After` as delay-seconds or an HTTP-date (RFC 9110 §10.2.3), capped; anything else is no advice.
@Suite("HTTP Retry-After")
struct HTTPRetryAfterTests {
    private func response(_ value: String?) -> HTTPResponse {
        HTTPResponse(status: 429, headers: HTTPHeaders(value.map { [("Retry-After", $0)] } ?? []))
    }

    @Test("delay-seconds, an HTTP-date, the cap, and what is no advice")
    func parses() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(response("120").retryAfter(now: now) == .seconds(120))
        #expect(response(" 0 ").retryAfter(now: now) == .zero)
        #expect(response("Sun, 06 Nov 1994 08:50:07 GMT").retryAfter(now: now) == .seconds(30))
        #expect(response("Sun, 06 Nov 1994 08:49:00 GMT").retryAfter(now: now) == .zero, "a date in the past: retry now")
        #expect(response("999999").retryAfter(now: now) == HTTPResponse.retryAfterCap)
        for bad in [nil, "", "-5", "soon", "1.5", "Sunday, 06-Nov-94 08:49:37 GMT"] {
            #expect(response(bad).retryAfter(now: now) == nil, "\(bad ?? "nil")")
        }
    }
}
