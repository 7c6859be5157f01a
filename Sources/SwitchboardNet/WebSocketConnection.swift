import Foundation

/// One accepted WebSocket connection on an `HTTPServer`, handed to the path's handler.
///
/// The server answers pings itself and pings a silent peer (see `webSocketPingInterval`); the frames stream
/// carries only messages and the final `.close`. Frames that break RFC 6455 (reserved bits or opcodes, unmasked
/// or badly fragmented frames, oversized or fragmented control frames, invalid close codes) close the connection
/// with 1002, invalid UTF-8 with 1007, oversized messages with 1009 (a frame from its header alone), and a peer
/// more than `maxUnreadWebSocketMessages` ahead of the handler with 1008.
public final class WebSocketConnection: Sendable {
    /// The upgrade request: path, query, header fields and peer address (the body is empty).
    public let request: HTTPServerRequest
    let channel: WebSocketChannel
    private let closeTimeout: Duration

    init(request: HTTPServerRequest, channel: WebSocketChannel, closeTimeout: Duration) {
        self.request = request
        self.channel = channel
        self.closeTimeout = closeTimeout
    }

    /// Incoming text and binary messages; the last element is always a `.close` frame, then the stream ends.
    public var frames: AsyncStream<WebSocketFrame> { channel.frames }

    /// Whether messages may still be sent (no close frame sent or received yet).
    public var isOpen: Bool { channel.isOpen }

    /// Sends a text message.
    public func send(text: String) async throws {
        try await channel.send(opcode: WebSocketOpcode.text, payload: Data(text.utf8))
    }

    /// Sends a binary message.
    public func send(binary: Data) async throws {
        try await channel.send(opcode: WebSocketOpcode.binary, payload: binary)
    }

    /// Sends text and binary messages in order as one write, so a burst costs one system call rather than one
    /// per message; a `.close` among them is refused (use `close(code:reason:)`).
    public func send(_ messages: [WebSocketFrame]) async throws {
        try await channel.send(messages: try WebSocketFrame.wireMessages(messages))
    }

    /// Sends a close frame and waits (up to the server's `closeHandshakeTimeout`) for the peer's answer.
    public func close(code: WebSocketCloseCode = .normalClosure, reason: String = "") async {
        await channel.close(code: code, reason: reason)
        _ = await channel.ended.wait(timeout: closeTimeout)
    }
}
