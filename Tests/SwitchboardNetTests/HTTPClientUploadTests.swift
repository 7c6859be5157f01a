import Foundation
import SwitchboardCore
import Testing
@testable import SwitchboardNet

extension HTTPClientTests {
    /// `upload(_:body:progress:)`.
    @Suite("Uploads")
    struct Uploads {
        /// `count` bytes of a fixed pseudo-random sequence.
        static func payload(_ count: Int) -> Data {
            var state: UInt64 = 0x9E37_79B9_7F4A_7C15
            var bytes = [UInt8](repeating: 0, count: count)
            for index in bytes.indices {
                state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                bytes[index] = UInt8(truncatingIfNeeded: state >> 33)
            }
            return Data(bytes)
        }

        @Test("A few megabytes arrive intact, with progress only increasing and ending at 1.0",
              arguments: [HTTPMethod.post, .put])
        func upload(method: HTTPMethod) async throws {
            try await withHTTPTestServer { server in
                let body = Self.payload(3 * 1024 * 1024 + 17)
                let reports = Locked<[Double]>([])
                let response = try await HTTPClient().upload(
                    HTTPRequest(method: method, url: server.url("/upload"), headers: ["Content-Type": "application/octet-stream"]),
                    body: body
                ) { fraction in reports.withLock { $0.append(fraction) } }

                #expect(response.status == 200)
                let result = try jsonObject(response.body)
                #expect(result["length"] as? Int == body.count)
                #expect(result["sha256"] as? String == sha256Hex(body))

                let progress = reports.withLock { $0 }
                #expect(!progress.isEmpty)
                #expect(zip(progress, progress.dropFirst()).allSatisfy { $0 < $1 }, "progress only increases")
                #expect(progress.allSatisfy { $0 > 0 && $0 <= 1 })
                #expect(progress.last == 1.0)
            }
        }

        @Test("An empty upload still reports completion")
        func emptyUpload() async throws {
            try await withHTTPTestServer { server in
                let reports = Locked<[Double]>([])
                let response = try await HTTPClient().upload(HTTPRequest(method: .post, url: server.url("/upload")),
                                                             body: Data()) { fraction in reports.withLock { $0.append(fraction) } }
                #expect(try jsonObject(response.body)["length"] as? Int == 0)
                #expect(reports.withLock { $0 } == [1.0])
            }
        }
    }
}
