import SwitchboardCore

/// A value behind a lock that escaping closures (handlers, scripts, tasks) and the test share.
public final class SharedValue<Value: Sendable>: Sendable {
    private let value: Locked<Value>

    /// A shared `value`.
    public init(_ value: Value) { self.value = Locked(value) }

    /// Runs `body` with the value, under the lock.
    public func withLock<Result>(_ body: (inout Value) -> Result) -> Result { value.withLock { body(&$0) } }

    /// The value now.
    public var current: Value { value.withLock { $0 } }
}
