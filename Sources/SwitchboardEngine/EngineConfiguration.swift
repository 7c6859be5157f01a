import Foundation
import SwitchboardCore

/// Capped exponential backoff with an attempt limit, for publish retries.
public struct RetryPolicy: Sendable, Hashable {
    /// Delay after the first failure, in seconds.
    public var baseDelay: TimeInterval
    /// Largest delay, in seconds.
    public var maxDelay: TimeInterval
    /// Attempts before a message is `failed`.
    public var maxAttempts: Int
    /// Fraction of random spread added to each delay (0 = none).
    public var jitter: Double

    /// Builds a policy.
    public init(baseDelay: TimeInterval = 0.5, maxDelay: TimeInterval = 30, maxAttempts: Int = 6, jitter: Double = 0.2) {
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.maxAttempts = maxAttempts
        self.jitter = jitter
    }

    /// The delay before attempt `attempt + 1`, after `attempt` failures (1-based), without jitter.
    public func baseDelay(afterFailures attempt: Int) -> TimeInterval {
        let exponent = Double(max(0, attempt - 1))
        return min(maxDelay, baseDelay * pow(2, exponent))
    }
}

/// The outbox's decision after a publish attempt: a pure state machine, testable without a backend.
public struct OutboxAttemptMachine: Sendable, Hashable {
    /// What the outbox does next.
    public enum Action: Sendable, Hashable {
        /// Forget the entry: the message is on the backend.
        case complete
        /// Try again at the given time (the message stays pending).
        case retry(at: Date)
        /// Stop; the message becomes failed (retryable by a user).
        case fail(reason: String, retryable: Bool)
    }

    /// The policy in force.
    public let policy: RetryPolicy
    /// Attempts made so far.
    public private(set) var attempts: Int

    /// A machine that has made `attempts` attempts.
    public init(policy: RetryPolicy, attempts: Int) {
        self.policy = policy
        self.attempts = attempts
    }

    /// Records a successful publish.
    public mutating func publishSucceeded() -> Action {
        attempts += 1
        return .complete
    }

    /// Records a failed publish; `random` is 0...1 and spreads the delay by the policy's jitter.
    public mutating func publishFailed(_ error: SwitchboardError, now: Date, random: Double) -> Action {
        attempts += 1
        guard error.isRetryable else { return .fail(reason: error.message, retryable: false) }
        guard attempts < policy.maxAttempts else {
            return .fail(reason: "gave up after \(attempts) attempts: \(error.message)", retryable: true)
        }
        var delay = policy.baseDelay(afterFailures: attempts) * (1 + policy.jitter * random)
        if let asked = error.retryAfter {
            // The server said how long to wait (`Retry-After`): never sooner.
            delay = max(delay, Double(asked.components.seconds) + Double(asked.components.attoseconds) / 1e18)
        }
        return .retry(at: now.addingTimeInterval(delay))
    }
}

/// Engine settings; the defaults suit an app.
public struct EngineConfiguration: Sendable {
    /// Publish retry policy.
    public var retry: RetryPolicy
    /// How long after sending a message may be edited.
    public var editWindow: TimeInterval
    /// How long after sending a message may be deleted.
    public var deleteWindow: TimeInterval
    /// Messages per history page.
    public var pageSize: Int
    /// Most messages a timeline window holds in memory.
    public var windowLimit: Int
    /// Changes fetched per delta-sync request.
    public var syncBatchSize: Int
    /// Most live changes of a conversation that may wait for the reconciler: a stream that runs further ahead
    /// (a flood, or a store stalled) has its queued changes dropped and the conversation resynchronizes from its
    /// stored cursor instead, which loses nothing and keeps memory bounded (each waiting change holds its whole
    /// message, so the default is modest: a few megabytes for ordinary messages).
    public var maxQueuedLiveChanges: Int
    /// Least time between two "typing" signals sent.
    public var typingDebounce: TimeInterval
    /// Idle time after which "stopped typing" is sent.
    public var typingIdleTimeout: TimeInterval
    /// Time after which someone else's typing indicator clears without news.
    public var remoteTypingTimeout: TimeInterval
    /// Folder where attachments given as bytes are kept until uploaded (and displayed from).
    public var stagingDirectory: URL
    /// The clock; tests move it.
    public var clock: @Sendable () -> Date
    /// Where the engine's records go (label `engine` by default; nowhere unless a handler is given).
    public var logger: Logger

    /// Builds a configuration.
    public init(retry: RetryPolicy = RetryPolicy(), editWindow: TimeInterval = 15 * 60, deleteWindow: TimeInterval = 2 * 3600,
                pageSize: Int = 50, windowLimit: Int = 500, syncBatchSize: Int = 200, maxQueuedLiveChanges: Int = 10_000,
                typingDebounce: TimeInterval = 3,
                typingIdleTimeout: TimeInterval = 5, remoteTypingTimeout: TimeInterval = 8,
                stagingDirectory: URL = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-staging"),
                clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger = Logger(label: "engine")) {
        self.retry = retry
        self.editWindow = editWindow
        self.deleteWindow = deleteWindow
        self.pageSize = pageSize
        self.windowLimit = windowLimit
        self.syncBatchSize = syncBatchSize
        self.maxQueuedLiveChanges = maxQueuedLiveChanges
        self.typingDebounce = typingDebounce
        self.typingIdleTimeout = typingIdleTimeout
        self.remoteTypingTimeout = remoteTypingTimeout
        self.stagingDirectory = stagingDirectory
        self.clock = clock
        self.logger = logger
    }
}
