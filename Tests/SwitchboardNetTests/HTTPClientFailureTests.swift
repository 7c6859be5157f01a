import Foundation
import TestSupport
import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// Timeouts, refused connections and cancellation.
    @Suite("Failures and cancellation")
    struct Failures {
        @Test("A request slower than its timeout fails with curl code 28")
        func timeout() async throws {
            try await withHTTPTestServer { server in
                let clock = ContinuousClock()
                let start = clock.now
                // The server answers after 30 s; the 300 ms timeout must end the request long before (a loaded
                // machine may take seconds to resume the caller, hence the generous bound below).
                let request = HTTPRequest(url: server.url("/slow?delay_ms=30000"), timeout: .milliseconds(300))
                let error = await #expect(throws: HTTPClientError.self) { try await HTTPClient().send(request) }
                #expect(error?.curlCode == 28)
                #expect(error?.isTimeout == true)
                #expect(error?.code == .transferFailed)
                #expect(error?.message.isEmpty == false)
                #expect(clock.now - start < TestTime.limit(.seconds(15)))
            }
        }

        @Test("A refused connection fails with curl code 7 and curl's explanation")
        func connectionRefused() async throws {
            // Port 1 on loopback: nothing listens there.
            let request = HTTPRequest(url: URL(string: "http://127.0.0.1:1/echo")!)
            let error = await #expect(throws: HTTPClientError.self) { try await HTTPClient().send(request) }
            #expect(error?.curlCode == 7)
            #expect(error?.isConnectionFailure == true)
            #expect(error?.status == nil)
            #expect(error?.detail != nil)
        }

        @Test("Cancelling the task stops a request in flight promptly and throws CancellationError")
        func cancelSend() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let task = Task { try await client.send(HTTPRequest(url: server.url("/slow?delay_ms=10000"))) }
                try await Task.sleep(for: .milliseconds(300))
                let clock = ContinuousClock()
                let start = clock.now
                task.cancel()
                let result = await task.result
                // Milliseconds when the machine is calm; well short of the 10 s the server waits even when the
                // group's CPU-heavy tests hold the cooperative threads (1.4 s once under two CPU hogs).
                #expect(clock.now - start < TestTime.limit(.seconds(5)))
                #expect(throws: CancellationError.self) { try result.get() }
                // The client still works afterwards.
                #expect(try await client.send(HTTPRequest(url: server.url("/status/200"))).status == 200)
            }
        }

        @Test("A task cancelled before sending throws CancellationError without connecting")
        func alreadyCancelled() async throws {
            try await withHTTPTestServer { server in
                let client = HTTPClient()
                let task = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return try await client.send(HTTPRequest(url: server.url("/echo")))
                }
                await #expect(throws: CancellationError.self) { try await task.value }
                #expect(client.connectionsOpened == 0)
            }
        }

        @Test("A released client's thread finishes the stream still running, then exits and frees curl")
        func clientRelease() async throws {
            try await withHTTPTestServer { server in
                var client: HTTPClient? = HTTPClient()
                weak let loop = client?.loop
                do {
                    let stream = try await client!.lines(HTTPRequest(url: server.url("/stream?lines=3&delay_ms=100")))
                    client = nil
                    var count = 0
                    for try await _ in stream { count += 1 }
                    #expect(count == 3, "the stream outlived its client")
                }
                #expect(client == nil)
                let exited = await eventually(within: .seconds(3)) { loop == nil }
                #expect(exited, "the curl thread exited and released the multi handle")
            }
        }
    }
}
