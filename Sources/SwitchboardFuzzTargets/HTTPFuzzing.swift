import Foundation
import SwitchboardNet

/// HTTP pieces parsed by our own code: `Range` and `Retry-After` headers, and WebSocket frames.
enum HTTPFuzzing {
    /// The input as a `Range` value resolved against several lengths: a partial range is never empty and lies
    /// inside the representation, and only `.whole` has no `Content-Range`. The input as a `Retry-After` value:
    /// a wait between zero and the cap, or none.
    static func runHeaders(_ bytes: [UInt8]) throws {
        let name = "http-headers"
        let header = String(decoding: bytes, as: UTF8.self)
        for length in [0, 1, 2, 99, 100, 101, 1 << 20, Int.max] {
            let range = HTTPByteRange.resolve(header, length: length)
            if case .partial(let bytes) = range {
                try expect(!bytes.isEmpty && bytes.lowerBound >= 0 && bytes.upperBound <= length, name,
                           "\(header) resolved to \(bytes) for a length of \(length)")
            }
            let contentRange = range.contentRange(length: length)
            try expect((contentRange == nil) == (range == .whole), name, "\(range) has Content-Range \(String(describing: contentRange))")
        }
        try expect(HTTPByteRange.resolve(nil, length: 10) == .whole, name, "no header must send the whole representation")
        let response = HTTPResponse(status: 429, headers: HTTPHeaders([("Retry-After", header)]))
        for now in [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_800_000_000)] {
            if let wait = response.retryAfter(now: now) {
                try expect(wait >= .zero && wait <= HTTPResponse.retryAfterCap, name, "Retry-After \(header) asks for \(wait)")
            }
        }
    }

    /// A WebSocket byte stream: the first byte picks the chunking, the limits and the role (a server's frames as our
    /// client reads them, or a client's masked frames as our server reads them); the rest is the stream.
    static func runWebSocket(_ bytes: [UInt8]) throws {
        guard let seed = bytes.first else { return }
        let chunkSizes = [Int(seed & 0x07) + 1, Int(seed >> 3 & 0x07) * 3 + 1, 2, 1]
        let limit = seed & 0x40 == 0 ? 1 << 20 : 64
        if let problem = WebSocketFramingFuzzing.check(stream: Array(bytes.dropFirst()), chunkSizes: chunkSizes,
                                                       maxFramePayload: limit, maxMessageSize: limit,
                                                       expectsMasked: seed & 0x80 != 0) {
            throw FuzzFailure(target: "websocket-frames", message: problem)
        }
    }
}
