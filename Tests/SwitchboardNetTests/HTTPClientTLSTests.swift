import Foundation
import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// TLS: verification is on by default; a CA file can be trusted instead. Loopback only.
    @Suite("TLS")
    struct TLS {
        @Test("HTTPS to a port that does not speak TLS fails with a TLS error")
        func httpsToPlainPort() async throws {
            try await withHTTPTestServer { server in
                let url = URL(string: "https://127.0.0.1:\(server.port)/echo")!
                let error = await #expect(throws: HTTPClientError.self) { try await HTTPClient().send(HTTPRequest(url: url)) }
                #expect(error?.curlCode == 35)
                #expect(error?.isTLSFailure == true)
            }
        }

        @Test("A self-signed server is refused by default and accepted with its certificate as the CA file")
        func selfSignedCertificate() async throws {
            try await withHTTPTestServer(tls: true) { server in
                let request = HTTPRequest(url: server.url("/status/201"))
                let error = await #expect(throws: HTTPClientError.self) { try await HTTPClient().send(request) }
                #expect(error?.curlCode == 60)
                #expect(error?.isTLSFailure == true)

                let trusting = HTTPClient(configuration: .init(certificateAuthorityFile: server.certificatePath))
                let response = try await trusting.send(request)
                #expect(response.status == 201)
            }
        }

        @Test("A CA file that does not exist fails with curl code 77")
        func missingCertificateAuthorityFile() async throws {
            try await withHTTPTestServer(tls: true) { server in
                let client = HTTPClient(configuration: .init(certificateAuthorityFile: "/nonexistent/switchboard-ca.pem"))
                let error = await #expect(throws: HTTPClientError.self) {
                    try await client.send(HTTPRequest(url: server.url("/echo")))
                }
                #expect(error?.curlCode == 77)
                #expect(error?.isTLSFailure == true)
            }
        }
    }
}
