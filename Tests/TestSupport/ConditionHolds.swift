/// Polls `condition` until it holds (true) or `timeout` passes (false, so the caller's expectation fails): a test
/// waits for the event it needs, and the time bound only catches "never".
public func conditionHolds(within timeout: Duration = .seconds(30),
                           _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = TestTime.deadline(after: timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}
