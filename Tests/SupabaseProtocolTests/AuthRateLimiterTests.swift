import Testing
import SupabaseProtocol

/// The per-client token buckets in front of `/auth/v1`'s sign-up, sign-in and refresh grants.
@Suite struct AuthRateLimiterTests {
    /// Whether each of `times` requests of `client` at `now` is admitted.
    private static func admitted(_ limiter: inout AuthRateLimiter, _ client: String, now: Double, times: Int = 1) -> [Bool] {
        (0..<times).map { _ in limiter.admit(client, now: now) }
    }

    @Test("a client gets its burst, then one request per window/limit; refusals cost nothing; clients are apart")
    func buckets() {
        var limiter = AuthRateLimiter(limit: 3, window: 300)
        #expect(Self.admitted(&limiter, "10.0.0.1", now: 0, times: 4) == [true, true, true, false])
        #expect(limiter.retryAfter("10.0.0.1", now: 0) == 100)
        #expect(Self.admitted(&limiter, "10.0.0.1", now: 99) == [false], "a refused request must not take a token")
        #expect(Self.admitted(&limiter, "10.0.0.2", now: 99) == [true], "another client has its own bucket")
        #expect(Self.admitted(&limiter, "10.0.0.1", now: 100, times: 2) == [true, false], "one token per window/limit")
        #expect(Self.admitted(&limiter, "10.0.0.1", now: 10_000, times: 4) == [true, true, true, false],
                "a long pause refills the burst, no further")
    }

    @Test("limit 0 admits everything")
    func unlimited() {
        var limiter = AuthRateLimiter(limit: 0, window: 300)
        #expect(Self.admitted(&limiter, "10.0.0.1", now: 0, times: 1000).allSatisfy { $0 })
        #expect(limiter.retryAfter("10.0.0.1", now: 0) == 0)
    }

    @Test("a flood of addresses keeps the table bounded; a limited client stays limited while the table is not full")
    func boundedTable() {
        var limiter = AuthRateLimiter(limit: 2, window: 300, maxClients: 1000)
        #expect(Self.admitted(&limiter, "victim", now: 0, times: 2) == [true, true])
        for index in 0..<500 { _ = limiter.admit("flood-\(index)", now: 1) }
        #expect(Self.admitted(&limiter, "victim", now: 2) == [false], "the limited client was forgotten too early")
        for index in 500..<20_000 { _ = limiter.admit("flood-\(index)", now: 3) }
        #expect(limiter.clientCount <= 1000)
        var next = 20_000
        while limiter.clientCount < 1000 {
            _ = limiter.admit("flood-\(next)", now: 3)
            next += 1
        }
        // Buckets that have refilled are forgotten first: they would be admitted as new clients anyway.
        _ = limiter.admit("late", now: 10_000)
        #expect(limiter.clientCount == 1, "the refilled buckets were kept")
    }
}
