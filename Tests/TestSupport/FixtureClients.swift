import Foundation
import SwitchboardConformance
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

extension ConformanceFixture {
    /// A started `ChatClient` for `user` with the fixture's conversation open: its SQLite store and staging folder
    /// under `root`, retries quick and many (for tests that cut sockets), `syncBatchSize` changes per sync page.
    public func openedClient(_ user: UserID, under root: URL, syncBatchSize: Int) async throws -> ChatClient {
        let store = try SQLiteStore(path: root.appendingPathComponent("\(user).sqlite").path)
        let configuration = EngineConfiguration(retry: RetryPolicy(baseDelay: 0.02, maxDelay: 0.2, maxAttempts: 50, jitter: 0.2),
                                                syncBatchSize: syncBatchSize,
                                                stagingDirectory: root.appendingPathComponent("staging-\(user)"))
        let client = ChatClient(adapter: try await makeAdapter(user), store: store, configuration: configuration)
        try await client.start()
        _ = try await client.open(conversation)
        return client
    }
}
