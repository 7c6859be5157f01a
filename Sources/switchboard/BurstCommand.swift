import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// Sends a burst through the engine into a journaled memory backend; the crash test kills it mid-way.
enum BurstCommand {
    static let conversation = ConversationID("burst")

    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, booleanFlags: ["resume"])
        try arguments.check(allowed: ["store", "journal", "count", "id-scheme", "resume"])
        guard let storePath = arguments.value("store"), let journalPath = arguments.value("journal") else {
            throw UsageError("burst needs --store PATH and --journal PATH")
        }
        guard let count = Int(arguments.value("count") ?? "200"), count >= 0 else {
            throw UsageError("--count must be a whole number")
        }
        let backend = try MemoryBackend(scheme: try parseScheme(arguments.value("id-scheme")),
                                        journal: URL(fileURLWithPath: journalPath))
        let alice = UserID("alice")
        if backend.members(of: conversation).isEmpty {
            try backend.createConversation(conversation, members: [alice, UserID("bob")])
        }
        let configuration = EngineConfiguration(retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.1, maxAttempts: 50))
        let client = ChatClient(adapter: backend.makeAdapter(for: alice), store: try SQLiteStore(path: storePath),
                                configuration: configuration)
        try await client.start()
        _ = try await client.open(conversation)
        if !arguments.has("resume") {
            for index in 0..<count {
                let message = try await client.send("burst \(index)", in: conversation)
                writeLine("prepared \(message.id)")
            }
        }
        let idle = await client.waitUntilIdle(timeout: 120)
        await client.stop()
        writeLine(idle ? "idle" : "not idle")
        return idle ? 0 : 1
    }
}
