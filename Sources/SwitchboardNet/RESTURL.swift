import Foundation

/// Percent-encoding and URL building for the adapters' REST clients.
public enum RESTURL {
    /// ASCII letters and digits plus `extra`: what a client leaves unescaped in a path segment or query component.
    public static func allowedCharacters(plus extra: String) -> CharacterSet {
        var set = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        set.insert(charactersIn: extra)
        return set
    }

    /// `text` percent-encoded, leaving `allowed` as is (`text` itself when it cannot be encoded).
    public static func encode(_ text: String, allowed: CharacterSet) -> String {
        text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// `path` (already encoded) below `base` (its trailing slashes dropped), with `query` items in order, each name
    /// and value encoded with `allowed`; `base` itself when the result is no URL.
    public static func url(base: URL, path: String, query: [(String, String)] = [],
                           allowed: CharacterSet = allowedCharacters(plus: "-._~")) -> URL {
        var text = base.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        text += path
        if !query.isEmpty {
            text += "?" + query.map { encode($0.0, allowed: allowed) + "=" + encode($0.1, allowed: allowed) }.joined(separator: "&")
        }
        return URL(string: text) ?? base
    }
}
