import Foundation
import TestSupport
import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// Requests and responses over a keep-alive HTTP/1.1 server.
    @Suite("Round trips")
    struct RoundTrips {
        @Test("Each method reaches the server with its headers and body; response headers keep repeated fields",
              arguments: [HTTPMethod.get, .post, .put, .patch, .delete])
        func methodRoundTrip(method: HTTPMethod) async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let body = method == .get ? nil : Data("payload for \(method)".utf8)
                var headers = HTTPHeaders([("X-Test", "hello"), ("X-Repeat", "a"), ("X-Repeat", "b")])
                headers["X-Empty"] = ""
                let response = try await client.send(HTTPRequest(method: method, url: server.url("/echo?q=1"),
                                                                 headers: headers, body: body))

                #expect(response.status == 200)
                #expect(response.headers["x-echo-method"] == method.rawValue)
                #expect(response.headers.values("X-Multi") == ["one", "two"])
                #expect(response.headers["Content-Type"] == "application/json")

                let echo = try jsonObject(response.body)
                #expect(echo["method"] as? String == method.rawValue)
                #expect((echo["query"] as? [String: String])?["q"] == "1")
                let sent = (echo["headers"] as? [[String]] ?? []).map { ($0[0].lowercased(), $0[1]) }
                #expect(sent.contains { $0 == ("x-test", "hello") })
                #expect(sent.filter { $0.0 == "x-repeat" }.map(\.1) == ["a", "b"])
                #expect(sent.contains { $0 == ("x-empty", "") })
                #expect(!sent.contains { $0.0 == "expect" }, "no Expect: 100-continue")
                #expect(!sent.contains { $0.0 == "content-type" }, "no form content type the caller did not set")
                #expect(echo["body"] as? String == body.map { String(decoding: $0, as: UTF8.self) } ?? "")
            }
        }

        @Test("HEAD returns the header fields without a body")
        func head() async throws {
            try await withHTTPTestServer { server in
                let response = try await HTTPClient().send(HTTPRequest(method: .head, url: server.url("/echo")))
                #expect(response.status == 200)
                #expect(response.body.isEmpty)
                #expect(Int(response.headers["Content-Length"] ?? "") ?? 0 > 0)
            }
        }

        @Test("A non-2xx status is a response; ensureSuccess throws an error carrying it",
              arguments: [200, 201, 204, 404, 500, 503])
        func statuses(status: Int) async throws {
            try await withHTTPTestServer { server in
                let response = try await HTTPClient().send(HTTPRequest(url: server.url("/status/\(status)")))
                #expect(response.status == status)
                if (200..<300).contains(status) {
                    #expect(throws: Never.self) { try response.ensureSuccess() }
                } else {
                    let error = #expect(throws: HTTPClientError.self) { try response.ensureSuccess() }
                    #expect(error?.code == .unsuccessfulStatus)
                    #expect(error?.status == status)
                    #expect(error?.curlCode == 0)
                }
            }
        }

        @Test("50 sequential requests reuse one keep-alive connection")
        func keepAlive() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let before = try await client.serverStats(server)["accepted"]
                for index in 0..<50 {
                    let response = try await client.send(HTTPRequest(method: index.isMultiple(of: 2) ? .get : .post,
                                                                     url: server.url("/echo?i=\(index)"),
                                                                     body: index.isMultiple(of: 2) ? nil : Data("x".utf8)))
                    #expect(response.status == 200)
                }
                let after = try await client.serverStats(server)["accepted"]
                #expect(before != nil)
                #expect(after == before, "the server accepted no new connection for 50 requests")
                #expect(client.connectionsOpened == 1, "curl opened one connection in all (CURLINFO_NUM_CONNECTS)")
            }
        }

        @Test("20 concurrent requests run at once on the one curl thread")
        func concurrentRequests() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let clock = ContinuousClock()
                let start = clock.now
                let ids = try await withThrowingTaskGroup(of: String?.self) { group in
                    for index in 0..<20 {
                        group.addTask {
                            let response = try await client.send(HTTPRequest(url: server.url("/slow?delay_ms=400&id=\(index)")))
                            let query = try jsonObject(response.body)["query"] as? [String: String]
                            return query?["id"]
                        }
                    }
                    var ids: [String?] = []
                    for try await id in group { ids.append(id) }
                    return ids
                }
                let elapsed = clock.now - start
                #expect(Set(ids.compactMap { $0 }) == Set((0..<20).map(String.init)))
                // One after another they would take 8 s; concurrently ~0.4 s, more on a loaded machine.
                #expect(elapsed < TestTime.limit(.seconds(4)), "20 × 400 ms ran concurrently (took \(elapsed))")
            }
        }

        @Test("A header value with a line break is refused before anything is sent, without echoing the value")
        func invalidHeader() async throws {
            let request = HTTPRequest(url: URL(string: "http://127.0.0.1:1/")!,
                                      headers: ["Authorization": "Bearer secret\r\nX-Injected: 1"])
            let error = await #expect(throws: HTTPClientError.self) { try await HTTPClient().send(request) }
            #expect(error?.code == .invalidRequest)
            #expect(error.map { !$0.description.contains("secret") } == true)
        }
    }
}
