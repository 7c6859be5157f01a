import Foundation

/// Text a server sent about an error (a response body, a JSON `message`), made fit for one line of an error.
public enum ServerErrorText {
    /// `text` trimmed, every run of whitespace or control characters (line breaks included) folded into one space,
    /// cut to `limit` characters (ending in `…` when cut); `(empty body)` when nothing is left.
    public static func oneLine(_ text: String, limit: Int = 300) -> String {
        var folded = ""
        var pendingSpace = false
        for character in text {
            if character.isWhitespace || character.unicodeScalars.allSatisfy({ $0.properties.generalCategory == .control }) {
                pendingSpace = true
                continue
            }
            if pendingSpace, !folded.isEmpty { folded.append(" ") }
            pendingSpace = false
            folded.append(character)
        }
        guard !folded.isEmpty else { return "(empty body)" }
        guard folded.count > limit else { return folded }
        return String(folded.prefix(max(0, limit - 1))) + "…"
    }

    /// A response body's UTF-8 text as `oneLine`.
    public static func oneLine(_ body: Data, limit: Int = 300) -> String {
        // Decode a little more than the limit allows, so a cut never splits what `oneLine` would fold.
        oneLine(String(decoding: body.prefix(limit * 4 + 16), as: UTF8.self), limit: limit)
    }
}
