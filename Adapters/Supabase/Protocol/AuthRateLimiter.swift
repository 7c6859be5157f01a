/// Per-client token buckets, the way GoTrue limits its auth endpoints: each client (its IP address) may make
/// `limit` requests per `window`, refilled continuously, so a burst of `limit` is allowed and then one request
/// every `window / limit`. A refused request costs nothing. Pure state: the caller passes the time.
public struct AuthRateLimiter: Sendable {
    /// Requests allowed per window (0: no limit).
    public let limit: Int
    /// The window, in seconds.
    public let window: Double
    /// The most clients remembered; beyond it, clients whose buckets have refilled are forgotten (they would be
    /// admitted as new ones anyway), then the longest idle, so a flood of addresses cannot grow the table without
    /// end.
    public let maxClients: Int

    private struct Bucket: Sendable {
        var tokens: Double
        var updated: Double
    }

    private var buckets: [String: Bucket] = [:]

    /// A limiter allowing `limit` requests per `window` seconds for each client.
    public init(limit: Int, window: Double, maxClients: Int = 10_000) {
        self.limit = max(0, limit)
        self.window = max(window, 1)
        self.maxClients = max(1, maxClients)
    }

    /// Clients currently remembered.
    public var clientCount: Int { buckets.count }

    /// Whether `client` may make a request at `now` (seconds on any monotonic clock); takes a token when it may.
    public mutating func admit(_ client: String, now: Double) -> Bool {
        guard limit > 0 else { return true }
        let capacity = Double(limit)
        var bucket = buckets[client].map { refilled($0, now: now) } ?? Bucket(tokens: capacity, updated: now)
        guard bucket.tokens >= 1 else {
            buckets[client] = bucket
            return false
        }
        bucket.tokens -= 1
        if buckets[client] == nil, buckets.count >= maxClients { forgetRefilled(now: now) }
        buckets[client] = bucket
        return true
    }

    /// Seconds until `client` may make its next request (0 when it may now).
    public func retryAfter(_ client: String, now: Double) -> Double {
        guard limit > 0, let bucket = buckets[client].map({ refilled($0, now: now) }), bucket.tokens < 1 else { return 0 }
        return (1 - bucket.tokens) * window / Double(limit)
    }

    private func refilled(_ bucket: Bucket, now: Double) -> Bucket {
        let elapsed = max(0, now - bucket.updated)
        return Bucket(tokens: min(Double(limit), bucket.tokens + elapsed * Double(limit) / window), updated: now)
    }

    /// Drops the clients whose buckets are full again; when that frees less than a tenth of the table, the tenth
    /// that waited longest goes too (so a flood of new addresses costs one sort per tenth, not a scan per address).
    private mutating func forgetRefilled(now: Double) {
        for key in buckets.filter({ refilled($0.value, now: now).tokens >= Double(limit) }).map(\.key) { buckets[key] = nil }
        let tenth = max(1, maxClients / 10)
        guard buckets.count > maxClients - tenth else { return }
        let oldest = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(buckets.count - (maxClients - tenth))
        for (key, _) in oldest { buckets[key] = nil }
    }
}
