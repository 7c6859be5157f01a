import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
@testable import SupabaseAdapter

/// How the adapter turns a refused request into a `SwitchboardError`, without a server.
@Suite("Supabase adapter: HTTP error mapping")
struct SupabaseErrorMappingTests {
    @Test("a body with a trailing newline (or a message spanning lines) stays on the error's one line", arguments: [
        (HTTPResponse(status: 404, body: Data("not found\n".utf8)), "HTTP 404: not found"),
        (HTTPResponse(status: 400, body: Data((#"{"code":"22P02","message":"invalid input\nsyntax"}"# + "\n").utf8)),
         "HTTP 400 22P02: invalid input syntax"),
    ])
    func oneLine(response: HTTPResponse, expected: String) {
        let error = SupabaseREST.error(for: response)
        #expect(error.message == expected)
        #expect(!error.description.contains("\n"))
    }

    @Test("a 401 is an authentication failure that no retry can fix (the token was already refreshed when it could be)")
    func unauthorizedIsFinal() {
        let error = SupabaseREST.error(for: HTTPResponse(status: 401, body: Data(#"{"code":"PGRST301","message":"JWSError JWSInvalidSignature"}"#.utf8)))
        #expect(error.code == .unauthorized)
        #expect(!error.isRetryable)
        #expect(error.message == "HTTP 401 PGRST301: JWSError JWSInvalidSignature")
    }
}
