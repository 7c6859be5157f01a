extension HTTPClient {
    /// How an `HTTPClient` connects, verifies and gives up; one value per client.
    public struct Configuration: Sendable, Hashable {
        /// The limit for establishing a connection (TCP and TLS), per attempt.
        public var connectTimeout: Duration
        /// The limit for a whole `send` or `upload` whose request sets no timeout; nil for none.
        ///
        /// `lines(_:)` streams are long-lived and only honour a timeout set on the request itself.
        public var timeout: Duration?
        /// When set, a transfer slower than this for this long fails with a timeout (it catches stalled streams).
        public var lowSpeedLimit: LowSpeedLimit?
        /// A PEM file of CA certificates to trust instead of the system ones; peers are always verified.
        public var certificateAuthorityFile: String?
        /// Whether 3xx responses with a `Location` are followed (up to `maximumRedirects`).
        public var followsRedirects: Bool
        /// How many redirects one request may follow.
        public var maximumRedirects: Int
        /// Whether to ask for compressed bodies and decode them (`Accept-Encoding` with what curl supports).
        public var decompressesResponses: Bool
        /// The `User-Agent` sent unless the request sets one.
        public var userAgent: String
        /// How many received lines a `lines(_:)` stream holds before it pauses reading from the network.
        public var maximumBufferedLines: Int
        /// How many idle connections the client keeps open for reuse.
        public var maximumIdleConnections: Int

        /// The defaults: 10 s to connect, 60 s per request, system CAs, no redirects, decompression on.
        public init(connectTimeout: Duration = .seconds(10), timeout: Duration? = .seconds(60),
                    lowSpeedLimit: LowSpeedLimit? = nil, certificateAuthorityFile: String? = nil,
                    followsRedirects: Bool = false, maximumRedirects: Int = 10, decompressesResponses: Bool = true,
                    userAgent: String = "Switchboard", maximumBufferedLines: Int = 1024,
                    maximumIdleConnections: Int = 16) {
            self.connectTimeout = connectTimeout
            self.timeout = timeout
            self.lowSpeedLimit = lowSpeedLimit
            self.certificateAuthorityFile = certificateAuthorityFile
            self.followsRedirects = followsRedirects
            self.maximumRedirects = maximumRedirects
            self.decompressesResponses = decompressesResponses
            self.userAgent = userAgent
            self.maximumBufferedLines = maximumBufferedLines
            self.maximumIdleConnections = maximumIdleConnections
        }
    }

    /// A minimum transfer speed: below `bytesPerSecond` for `duration`, curl gives up with a timeout (28).
    ///
    /// curl averages the speed over roughly the last five seconds, so a burst keeps a transfer "fast" for a while
    /// after it stops; pick a speed above what the stream's heartbeats deliver.
    public struct LowSpeedLimit: Sendable, Hashable {
        /// The speed, in bytes per second, under which the transfer counts as stalled.
        public var bytesPerSecond: Int
        /// How long it may stay under that speed (whole seconds, rounded up).
        public var duration: Duration

        /// Makes a limit.
        public init(bytesPerSecond: Int, duration: Duration) {
            self.bytesPerSecond = bytesPerSecond
            self.duration = duration
        }
    }
}
