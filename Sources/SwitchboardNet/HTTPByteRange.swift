import Foundation

/// A `Range: bytes=…` request header resolved against a representation's length (RFC 9110 §14), as a pure value.
///
/// One range is served (`bytes=0-99`, `bytes=100-`, `bytes=-100`); a header this type cannot read, a unit other
/// than bytes, or several ranges are ignored — the whole representation is sent, as the RFC allows.
public enum HTTPByteRange: Equatable, Sendable {
    /// Send everything with 200 (no header, or one that is ignored).
    case whole
    /// Send these bytes of the representation (never empty) with 206 and a `Content-Range`.
    case partial(Range<Int>)
    /// Nothing of the representation is in the range: 416 with `Content-Range: bytes */<length>`.
    case unsatisfiable

    /// Resolves `header` (the `Range` value, nil when absent) against a representation of `length` bytes.
    public static func resolve(_ header: String?, length: Int) -> HTTPByteRange {
        guard let header else { return .whole }
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits = { (text: String) in text.allSatisfy { $0.isASCII && $0.isNumber } }
        guard digits(first), digits(last), !(first.isEmpty && last.isEmpty) else {
            return .whole
        }
        if first.isEmpty {  // the last `n` bytes
            guard let suffix = Int(last) else { return .whole }
            guard suffix > 0, length > 0 else { return .unsatisfiable }
            return .partial(max(0, length - suffix)..<length)
        }
        guard let start = Int(first) else { return .whole }
        let end: Int
        if last.isEmpty {
            end = length - 1
        } else {
            guard let value = Int(last) else { return .whole }
            guard value >= start else { return .whole }  // invalid: ignored
            end = min(value, length - 1)
        }
        guard start < length else { return .unsatisfiable }
        return .partial(start..<(end + 1))
    }

    /// The `Content-Range` value for this resolution of a representation of `length` bytes (nil for `.whole`).
    public func contentRange(length: Int) -> String? {
        switch self {
        case .whole: nil
        case let .partial(bytes): "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(length)"
        case .unsatisfiable: "bytes */\(length)"
        }
    }
}
