import Foundation
import SwitchboardCore
import SwitchboardEngine

extension StandardScenarios {
    /// A server's rate limit (HTTP 429 with `Retry-After`): the publish waits as long as it was asked, then goes
    /// out, once.
    static let rateLimits: [Scenario] = [
        Scenario("rate-limit-backoff",
                 "publishes refused with 429 and Retry-After wait as asked, then go out once each",
                 injects: [.rateLimit]) { ctx in
            let faults = try ctx.faults()
            let (alice, bob) = try await pair(ctx)
            let convo = ctx.fixture.conversation
            let retryAfter = Duration.milliseconds(300)
            try await faults.inject(.rateLimitPublishes(count: 2, retryAfter: retryAfter))
            let started = ContinuousClock.now
            let first = try await alice.send("slowed down 1", in: convo)
            let second = try await alice.send("slowed down 2", in: convo)
            try await waitForDelivery(ctx, alice, first.id)
            let waited = started.duration(to: .now)
            // The engine's own backoff is a few milliseconds here: only the server's Retry-After explains a wait.
            try ctx.expect(waited >= retryAfter,
                           "the first message went out after \(waited), sooner than the Retry-After of \(retryAfter)")
            try await waitForDelivery(ctx, alice, second.id)
            try await waitToSee(ctx, bob, first.id)
            try await waitToSee(ctx, bob, second.id)
            try await Task.sleep(for: .milliseconds(100))
            let held = try await backendMessages(ctx)
            for text in ["slowed down 1", "slowed down 2"] {
                let copies = held.filter { $0.text == text }.count
                try ctx.expect(copies == 1, "backend holds \(copies) copies of \"\(text)\"")
                let seen = try await bob.rowsForTest(convo, text: text).count
                try ctx.expect(seen == 1, "bob sees \(seen) copies of \"\(text)\"")
            }
        },
    ]
}
