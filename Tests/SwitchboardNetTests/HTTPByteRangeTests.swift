import SwitchboardNet
import Testing

/// `Range: bytes=…` resolution as RFC 9110 §14 describes it, without a server.
@Suite struct HTTPByteRangeTests {
    @Test("one range: first-last (clamped), first-, and the last n bytes",
          arguments: [("bytes=0-0", 0..<1), ("bytes=2-5", 2..<6), ("bytes=5-", 5..<10), ("bytes=8-100", 8..<10),
                      ("bytes=-3", 7..<10), ("bytes=-50", 0..<10), (" Bytes=1-2 ", 1..<3), ("bytes=9-9", 9..<10)])
    func partial(header: String, expected: Range<Int>) {
        #expect(HTTPByteRange.resolve(header, length: 10) == .partial(expected), "\(header)")
    }

    @Test("absent, malformed, other units, several ranges and last < first are ignored: the whole is sent",
          arguments: [nil, "", "bytes=", "bytes=-", "bytes=a-b", "items=0-1", "bytes=0-1,3-4", "bytes=5-2", "bytes 0-1",
                      "bytes=99999999999999999999999-"])
    func whole(header: String?) {
        #expect(HTTPByteRange.resolve(header, length: 10) == .whole, "\(header ?? "nil")")
    }

    @Test("a range starting at or past the end, an empty suffix or any range of nothing is unsatisfiable")
    func unsatisfiable() {
        #expect(HTTPByteRange.resolve("bytes=10-", length: 10) == .unsatisfiable)
        #expect(HTTPByteRange.resolve("bytes=10-20", length: 10) == .unsatisfiable)
        #expect(HTTPByteRange.resolve("bytes=-0", length: 10) == .unsatisfiable)
        #expect(HTTPByteRange.resolve("bytes=0-", length: 0) == .unsatisfiable)
        #expect(HTTPByteRange.resolve("bytes=-5", length: 0) == .unsatisfiable)
    }

    @Test("Content-Range values")
    func contentRange() {
        #expect(HTTPByteRange.partial(2..<6).contentRange(length: 10) == "bytes 2-5/10")
        #expect(HTTPByteRange.unsatisfiable.contentRange(length: 10) == "bytes */10")
        #expect(HTTPByteRange.whole.contentRange(length: 10) == nil)
    }
}
