import Foundation
import SwitchboardCore

/// Everything `SocketIOServer` (and `switchboard serve socketio`) can be told; defaults follow WIRE.md.
public struct SocketIOServerConfiguration: Sendable {
    /// The address to bind (loopback by default).
    public var host = "127.0.0.1"
    /// The port to bind; 0 picks a free one.
    public var port = 0
    /// Where the SQLite database (`socketio.sqlite`) and uploaded files (`uploads/<id>`) live.
    public var dataDirectory: URL
    /// The base of file URLs; default `http://<host>:<bound port>`.
    public var publicBaseURL: String?
    /// Messages per history page (`--page-size`).
    public var pageSize = 50
    /// How long after `createdAt` the sender may edit a message (`--edit-window`).
    public var editWindow: Duration = .seconds(15 * 60)
    /// How long after `createdAt` the sender may delete a message (`--delete-window`).
    public var deleteWindow: Duration = .seconds(2 * 60 * 60)
    /// The most UTF-8 bytes of a message's text.
    public var maxTextBytes = 65_536
    /// The most attachments of one message.
    public var maxAttachments = 10
    /// The largest upload accepted (larger: 413 `too_large`).
    public var maxUploadSize = 25 << 20
    /// The largest JSON request body.
    public var maxRequestBodySize = 1 << 20
    /// Engine.IO `pingInterval`: how often the server pings each socket.
    public var pingInterval: Duration = .milliseconds(25_000)
    /// Engine.IO `pingTimeout`: how long a ping may go unanswered before the socket is closed.
    public var pingTimeout: Duration = .milliseconds(20_000)
    /// Engine.IO `maxPayload` announced in the open packet; larger WebSocket messages close the connection.
    public var maxPayload = 1_000_000
    /// How long a new socket may stay open without joining a namespace with a valid token (engine.io's
    /// `connectTimeout`); a refused token closes the socket at once.
    public var connectTimeout: Duration = .seconds(10)
    /// How many live events one socket may fall behind before it is closed (its client reconnects and catches up).
    public var socketBufferLimit = 1_000
    /// Where diagnostics go (nowhere unless a handler is given); tokens are never passed to it.
    public var logger = Logger(label: "socketio")

    /// A configuration with the required data directory.
    public init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
    }
}

extension Duration {
    /// The duration in whole milliseconds (negative ones count as 0).
    var wholeMilliseconds: Int64 {
        let parts = components
        return max(0, parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000)
    }
}
