import Foundation
import SwitchboardCore
import Testing
@testable import XMTPAdapter

/// How the adapter turns a refused node request into a `SwitchboardError`, without a node.
@Suite("XMTP adapter: node error mapping")
struct XMTPNodeErrorTests {
    @Test("a body with a trailing newline (or a message spanning lines) stays on the error's one line", arguments: [
        (404, "not found\n", "XMTP node HTTP 404: not found"),
        (400, #"{"code":3,"message":"bad\nenvelope\n"}"#, "XMTP node HTTP 400: bad envelope"),
    ])
    func oneLine(status: Int, body: String, expected: String) {
        let error = XMTPNodeClient.error(status: status, body: Data(body.utf8))
        #expect(error.message == expected)
        #expect(!error.description.contains("\n"))
    }

    @Test("a 401 is an authentication failure that no retry can fix")
    func unauthorizedIsFinal() {
        let error = XMTPNodeClient.error(status: 401, body: Data(#"{"code":16,"message":"unknown token"}"#.utf8))
        #expect(error.code == .unauthorized)
        #expect(!error.isRetryable)
    }
}
