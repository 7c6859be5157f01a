import Foundation

/// A `ws://` or `wss://` URL and extra header fields, checked and turned into what a handshake sends (civetweb for ws, our TLS transport for wss).
///
/// `mg_connect_websocket_client` accepts no header list, only an `Origin` value that it prints as the request's
/// last line. Extra fields therefore ride after the origin (`Origin: <origin>\r\nName: value`); when fields are
/// given without an `Origin`, the target's own origin (`http://host:port`) is sent. Every name and value is
/// checked for CR, LF and NUL first, so nothing can be injected.
struct WebSocketClientTarget: Hashable, Sendable {
    /// `wss://`.
    var isSecure: Bool
    /// Host name or IPv4 address.
    var host: String
    /// TCP port (80 or 443 when the URL has none).
    var port: Int
    /// Percent-encoded path and query, e.g. `/chat?room=1`.
    var path: String
    /// What to pass as civetweb's `origin` argument (`nil`: no `Origin` line at all).
    var originArgument: String?

    /// Fields the handshake writes itself (a second copy would confuse servers).
    static let reservedFields: Set<String> = [
        "host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions",
    ]

    /// Parses and checks `url` and `headers`.
    init(url: URL, headers: HTTPHeaders) throws(WebSocketError) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let scheme = components.scheme?.lowercased(), scheme == "ws" || scheme == "wss" else {
            throw WebSocketError(.invalidURL, "expected a ws:// or wss:// URL")
        }
        guard let host = components.host, !host.isEmpty else {
            throw WebSocketError(.invalidURL, "the URL has no host")
        }
        isSecure = scheme == "wss"
        self.host = host
        port = components.port ?? (isSecure ? 443 : 80)
        guard (1...65535).contains(port) else { throw WebSocketError(.invalidURL, "port \(port) is out of range") }
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        guard path.utf8.allSatisfy({ $0 > 32 && $0 < 127 }) else {
            throw WebSocketError(.invalidURL, "the path must be percent-encoded ASCII")
        }
        self.path = path

        var origin: String?
        var extra: [String] = []
        for field in headers {
            let name = field.name.lowercased()
            guard !field.name.isEmpty, Self.isClean(field.name), !field.name.contains(":"), !field.name.contains(" "),
                  Self.isClean(field.value) else {
                throw WebSocketError(.invalidHeader, "header \(field.name.debugDescription) has a forbidden character")
            }
            guard !Self.reservedFields.contains(name) else {
                throw WebSocketError(.invalidHeader, "header \(field.name) is written by the WebSocket handshake itself")
            }
            if name == "origin" {
                origin = field.value
            } else {
                extra.append("\(field.name): \(field.value)")
            }
        }
        if !extra.isEmpty && origin == nil {
            let defaultPort = isSecure ? 443 : 80
            origin = "\(isSecure ? "https" : "http")://\(host)\(port == defaultPort ? "" : ":\(port)")"
        }
        originArgument = origin.map { ([$0] + extra).joined(separator: "\r\n") }
    }

    private static func isClean(_ text: String) -> Bool {
        !text.utf8.contains { $0 == 0 || $0 == 10 || $0 == 13 }
    }
}
