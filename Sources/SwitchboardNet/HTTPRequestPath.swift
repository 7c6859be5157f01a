/// The path of a request target as handlers see it, made from the raw path the client sent: percent-decoded, then
/// cleaned the way civetweb cleans it (RFC 3986 dot segments removed, `\` read as `/`, `//` collapsed, dots ending a
/// segment dropped). Decoding that yields NUL or another control character is refused: a C string would end at the
/// NUL and `a%00b` would silently reach a handler as `a`.
public enum HTTPRequestPath {
    /// Why a request path was refused; the server answers 400.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        /// What is wrong with the path.
        public let description: String
    }

    /// The handler's path for `raw`, the path part of the request target (no query), still percent-encoded.
    public static func decode(_ raw: String) throws(Refusal) -> String {
        let decoded = percentDecoded(Array(raw.utf8))
        if let control = decoded.first(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw Refusal(description: "the path holds the control character 0x\(String(control, radix: 16)) once decoded")
        }
        return String(decoding: cleaned(decoded), as: UTF8.self)
    }

    /// `%XX` (two hex digits) replaced by its byte; a `%` not followed by two hex digits is kept as it is, and `+` is
    /// not a space in a path (civetweb's `mg_url_decode` with `is_form_url_encoded` 0).
    static func percentDecoded(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
               let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    /// The value of one hex digit, nil for any other byte.
    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// civetweb's `remove_dot_segments` on decoded bytes: `\` becomes `/`, RFC 3986 §5.2.4 removes `.` and `..`
    /// segments, then runs of dots before a `/` or at the end are dropped and `//` collapses to `/`.
    static func cleaned(_ bytes: [UInt8]) -> [UInt8] {
        let slash = UInt8(ascii: "/"), dot = UInt8(ascii: ".")
        var input = bytes.map { $0 == UInt8(ascii: "\\") ? slash : $0 }[...]
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        /// Drops the output's last segment and the `/` before it.
        func removeLastSegment() {
            while let last = output.popLast(), last != slash {}
        }
        while let first = input.first {
            if input.starts(with: "../".utf8) {
                input = input.dropFirst(3)
            } else if input.starts(with: "./".utf8) || input.starts(with: "/./".utf8) {
                input = input.dropFirst(2)
            } else if input.elementsEqual("/.".utf8) {
                input = [slash][...]
            } else if input.starts(with: "/../".utf8) {
                input = input.dropFirst(3)
                removeLastSegment()
            } else if input.elementsEqual("/..".utf8) {
                input = [slash][...]
                removeLastSegment()
            } else if input.elementsEqual(".".utf8) || input.elementsEqual("..".utf8) {
                input = []
            } else {
                output.append(first)
                input = input.dropFirst()
                while let next = input.first, next != slash {
                    output.append(next)
                    input = input.dropFirst()
                }
            }
        }
        // civetweb's second pass (for Windows, where `x.` names `x`): drop dots ending a segment, collapse `//`.
        var result: [UInt8] = []
        result.reserveCapacity(output.count)
        var index = 0
        while index < output.count {
            let byte = output[index]
            if byte == dot {
                var ahead = index
                repeat { ahead += 1 } while ahead < output.count && output[ahead] == dot
                if ahead < output.count && output[ahead] == slash {
                    index = ahead
                    if result.last == slash { result.removeLast() }
                } else if ahead == output.count {
                    index = ahead
                } else {
                    result.append(contentsOf: repeatElement(dot, count: ahead - index))
                    index = ahead
                }
            } else if byte == slash {
                result.append(slash)
                repeat { index += 1 } while index < output.count && output[index] == slash
            } else {
                result.append(byte)
                index += 1
            }
        }
        return result
    }
}
