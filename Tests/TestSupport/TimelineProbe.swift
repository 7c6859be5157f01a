import Foundation
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// Runs a `ChatClient` over `adapter` in a throw-away store, opens `conversation` and waits (at most `timeout`)
/// until a message with the text `last` is on its timeline; returns whether it came and the timeline's texts.
public func timelineTexts(of adapter: any ChatAdapter, in conversation: ConversationID, until last: String,
                          timeout: Duration = .seconds(20)) async throws -> (arrived: Bool, texts: [String]) {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("timeline-probe-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: root) }
    let store = try SQLiteStore(path: root.appendingPathComponent("client.sqlite").path)
    let client = ChatClient(adapter: adapter, store: store,
                            configuration: EngineConfiguration(stagingDirectory: root.appendingPathComponent("staging")))
    try await client.start()
    _ = try await client.open(conversation)
    let arrived = await conditionHolds(within: timeout) {
        ((try? await client.timeline(of: conversation)) ?? []).contains { $0.content.text == last }
    }
    let texts = try await client.timeline(of: conversation).map(\.content.text)
    await client.stop()
    return (arrived, texts)
}
