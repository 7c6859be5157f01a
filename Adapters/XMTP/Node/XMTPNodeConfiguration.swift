import Foundation
import SwitchboardCore
import SwitchboardNet

/// Everything `XMTPNodeServer` (and `switchboard serve xmtp`) can be told; defaults follow XMTP where it has one.
public struct XMTPNodeConfiguration: Sendable {
    /// The address to bind (loopback by default).
    public var host = "127.0.0.1"
    /// The port to bind; 0 picks a free one.
    public var port = 0
    /// Where the SQLite database (`xmtp-node.sqlite`) and uploads (`uploads/<digest>`) live.
    public var dataDirectory: URL
    /// Use this PostgreSQL database (schema `xmtp_node`) instead of SQLite.
    public var databaseURL: String?
    /// The base of presigned upload and download URLs; default `http://<host>:<bound port>`.
    public var publicBaseURL: String?
    /// The largest `data` of one group message (XMTP refuses more than 1 MB).
    public var maxMessageSize = 1 << 20
    /// The largest JSON request body (beyond it the HTTP layer answers 413).
    public var maxRequestBodySize = 16 << 20
    /// The largest upload accepted.
    public var maxUploadSize = 25 << 20
    /// How long a presigned upload URL stays valid.
    public var uploadURLLifetime: Duration = .seconds(3600)
    /// How often an idle subscription writes an empty line, so a vanished client is noticed.
    public var subscriptionHeartbeat: Duration = .seconds(10)
    /// How many live messages a subscriber may fall behind before its stream is ended with RESOURCE_EXHAUSTED.
    public var subscriberBufferLimit = 10_000
    /// How long an idle kept-alive HTTP connection waits for its next request.
    public var keepAliveTimeout = HTTPServer.Configuration().keepAliveTimeout
    /// PostgreSQL connections kept open.
    public var postgresPoolSize = 4
    /// Where diagnostics go (nowhere unless a handler is given); tokens are never passed to it.
    public var logger = Logger(label: "xmtp")

    /// A configuration with the required data directory.
    public init(dataDirectory: URL) {
        self.dataDirectory = dataDirectory
    }
}
