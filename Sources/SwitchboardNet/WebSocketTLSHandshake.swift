import COpenSSL
import Foundation

/// The HTTP/1.1 upgrade request of RFC 6455 §4.1 and the checks on the server's answer, for the TLS client.
///
/// Pure apart from the random key: it builds bytes and judges bytes, the transport moves them.
struct WebSocketTLSHandshake: Sendable {
    /// The GUID RFC 6455 appends to the key before hashing.
    static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// The largest response head accepted.
    static let maxHeadSize = 16 * 1024

    /// The base64 of 16 random bytes, sent as `Sec-WebSocket-Key`.
    let key: String
    /// The request bytes.
    let request: Data

    /// A handshake for `target` with a fresh random key (or the given one, for tests).
    init(target: WebSocketClientTarget, key: String? = nil) {
        let key = key ?? Self.randomKey()
        self.key = key
        let defaultPort = target.isSecure ? 443 : 80
        let hostName = target.host.contains(":") ? "[\(target.host)]" : target.host
        let host = target.port == defaultPort ? hostName : "\(hostName):\(target.port)"
        var lines = [
            "GET \(target.path) HTTP/1.1", "Host: \(host)", "Upgrade: websocket", "Connection: Upgrade",
            "Sec-WebSocket-Key: \(key)", "Sec-WebSocket-Version: 13",
        ]
        // `originArgument` is `Origin` followed by the checked extra fields, already joined with CR LF.
        if let origin = target.originArgument { lines.append("Origin: \(origin)") }
        request = Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    /// The `Sec-WebSocket-Accept` value a server must answer `key` with: base64(SHA-1(key + GUID)).
    static func acceptValue(for key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        _ = SHA1(input, input.count, &digest)
        return Data(digest).base64EncodedString()
    }

    /// 16 bytes from OpenSSL's CSPRNG (the system generator if that fails), base64-encoded.
    static func randomKey() -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        if RAND_bytes(&bytes, 16) != 1 {
            var generator = SystemRandomNumberGenerator()
            bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        }
        return Data(bytes).base64EncodedString()
    }

    /// Where the response head ends (the index after CR LF CR LF) in `bytes`, if it is complete.
    static func headEnd(in bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 3..<bytes.count where bytes[index] == 10 && bytes[index - 1] == 13
            && bytes[index - 2] == 10 && bytes[index - 3] == 13 {
            return index + 1
        }
        return nil
    }

    /// Checks a complete response head (status line and fields, without the blank line is fine too).
    func validate(head: [UInt8]) throws(WebSocketError) {
        let text = String(decoding: head, as: UTF8.self)
        let lines = text.components(separatedBy: "\r\n")
        let status = lines.first ?? ""
        let parts = status.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1.") else {
            throw WebSocketError(.connectFailed, "the server did not answer with HTTP")
        }
        guard parts[1] == "101" else {
            throw WebSocketError(.connectFailed, "the server answered \(parts.dropFirst().joined(separator: " ")) instead of 101")
        }
        var fields: [String: [String]] = [:]
        for line in lines.dropFirst() where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            fields[name, default: []].append(value)
        }
        guard fields["upgrade"]?.contains(where: { $0.lowercased() == "websocket" }) == true else {
            throw WebSocketError(.connectFailed, "the 101 response lacks Upgrade: websocket")
        }
        let connection = (fields["connection"] ?? []).flatMap { $0.split(separator: ",") }
        guard connection.contains(where: { $0.trimmingCharacters(in: .whitespaces).lowercased() == "upgrade" }) else {
            throw WebSocketError(.connectFailed, "the 101 response lacks Connection: Upgrade")
        }
        guard fields["sec-websocket-accept"] == [Self.acceptValue(for: key)] else {
            throw WebSocketError(.connectFailed, "Sec-WebSocket-Accept does not match the key sent")
        }
        guard fields["sec-websocket-extensions"] == nil else {
            throw WebSocketError(.connectFailed, "the server chose an extension the client did not offer")
        }
    }
}
