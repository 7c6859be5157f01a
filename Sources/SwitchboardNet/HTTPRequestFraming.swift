/// The body-framing rules of RFC 9112 §6 that civetweb does not enforce itself: it reads the first `Content-Length`
/// (ignoring any after it and any text after the digits) and lets `Transfer-Encoding: chunked` override a
/// `Content-Length`. Two parties reading the same bytes as different requests is how requests are smuggled, so
/// every ambiguous head is refused before its body is read.
public enum HTTPRequestFraming {
    /// Why a request head's framing was refused; the server answers 400 and closes the connection.
    public struct Violation: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong with the framing headers.
        public let description: String
    }

    /// Checks the framing fields of a request head: `Content-Length` values must be digits and all the same (a
    /// repeated identical value is allowed, RFC 9110 §8.6), `Transfer-Encoding` must be one `chunked` (or civetweb's
    /// no-op `identity`), and the two must not come together.
    public static func validate(_ headers: HTTPHeaders) throws(Violation) {
        let lengths = headers.values("Content-Length").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingOptionalWhitespace() }
        let codings = headers.values("Transfer-Encoding").flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { $0.trimmingOptionalWhitespace().lowercased() }
        if !lengths.isEmpty && !codings.isEmpty {
            throw Violation(description: "Transfer-Encoding and Content-Length together")
        }
        if let bad = lengths.first(where: { $0.isEmpty || !$0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) } }) {
            throw Violation(description: "Content-Length '\(bad.prefix(40))' is not a number")
        }
        if Set(lengths).count > 1 {
            throw Violation(description: "conflicting Content-Length values")
        }
        if !codings.isEmpty && codings != ["chunked"] && codings != ["identity"] {
            throw Violation(description: "Transfer-Encoding must be a single 'chunked'")
        }
    }
}

extension StringProtocol {
    /// The text without the spaces and tabs (HTTP's optional whitespace) around it.
    fileprivate func trimmingOptionalWhitespace() -> String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return String(text)
    }
}
