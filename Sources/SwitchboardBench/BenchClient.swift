import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// Runs `body` with alice's started client on a fresh memory backend holding `conversation` (alice and bob), over
/// the SQLite store at `path`, and that conversation opened; stops the client once `body` returns.
func withBenchClient<T>(_ conversation: ConversationID, store path: String,
                        _ body: (ChatClient, Conversation) async throws -> T) async throws -> T {
    let backend = try MemoryBackend(scheme: .clientAssigned)
    try backend.createConversation(conversation, members: ["alice", "bob"])
    let store = try SQLiteStore(path: path)
    defer { store.close() }
    let client = ChatClient(adapter: backend.makeAdapter(for: "alice"), store: store)
    try await client.start()
    let handle = try await client.open(conversation)
    let result = try await body(client, handle)
    await client.stop()
    return result
}
