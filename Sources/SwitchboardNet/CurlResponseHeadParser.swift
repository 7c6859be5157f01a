/// The status and header fields of a final response, before its body.
struct CurlResponseHead: Sendable, Hashable {
    /// The status code.
    var status: Int
    /// The header fields, in the order received.
    var headers: HTTPHeaders
}

/// Turns the header lines curl hands to CURLOPT_HEADERFUNCTION into the final response head.
///
/// A pure state machine: it skips interim 1xx blocks and, when redirects are followed, the blocks of responses
/// curl will follow; it reports the head once, when the final block's empty line arrives.
struct CurlResponseHeadParser: Sendable {
    /// Whether curl follows redirects, so 3xx blocks with a `Location` are not final.
    let followsRedirects: Bool
    /// The status of the latest status line (0 before any).
    private(set) var status = 0
    /// Whether the final block has ended (later lines are trailers).
    private(set) var isComplete = false
    /// The fields of the current block.
    private var fields: [(String, String)] = []

    /// A parser that has seen nothing yet.
    init(followsRedirects: Bool) { self.followsRedirects = followsRedirects }

    /// The head as parsed so far.
    var head: CurlResponseHead { CurlResponseHead(status: status, headers: HTTPHeaders(fields)) }

    /// Feeds one line (with or without its CRLF); returns the head when this line ended the final header block.
    mutating func consume(_ rawLine: some StringProtocol) -> CurlResponseHead? {
        var line = Substring(rawLine)
        while let last = line.last, last.isNewline { line = line.dropLast() } // "\r\n" is one Character

        if line.hasPrefix("HTTP/") {
            // A new response: an interim one, a redirect or the final one. Only the last block counts.
            let parts = line.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: true)
            status = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            fields = []
            isComplete = false
            return nil
        }
        if line.isEmpty {
            guard !isComplete else { return nil } // the end of the trailers
            if (100..<200).contains(status) { return nil } // 100 Continue, 103 Early Hints
            if followsRedirects, (300..<400).contains(status), status != 304,
               fields.contains(where: { $0.0.caseInsensitiveCompare("Location") == .orderedSame }) {
                return nil // curl follows it; the next block is the one that matters
            }
            isComplete = true
            return head
        }
        if let first = line.first, first == " " || first == "\t" {
            // An obsolete folded continuation of the previous field.
            if let index = fields.indices.last {
                fields[index].1 += " " + line.trimmingSpaces
            }
            return nil
        }
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let name = line[..<colon].trimmingSpaces
        guard !name.isEmpty else { return nil }
        fields.append((name, line[line.index(after: colon)...].trimmingSpaces))
        return nil
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[start...end])
    }
}
