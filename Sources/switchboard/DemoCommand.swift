import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore

/// Prints the engine's timeline as it changes, with times relative to the start of a section.
actor TimelinePrinter {
    private var start = Date()
    private var lastShown: [MessageID: String] = [:]
    private var names: [UserID: String] = [:]

    func section(_ title: String) {
        start = Date()
        writeLine("\n\(title)")
    }

    func note(_ text: String) {
        writeLine(String(format: "  %+7.3fs  %@", Date().timeIntervalSince(start), text))
    }

    func show(_ event: SequencedEvent, as viewer: String) {
        switch event.event {
        case .messageUpserted(let message), .contentEdited(let message), .deleted(let message):
            let files = message.content.attachments.map { "\($0.filename)[\($0.upload)]" }.joined(separator: " ")
            let line = "\(viewer.padding(toLength: 5, withPad: " ", startingAt: 0)) \(Self.quote(message))  \(message.delivery)\(files.isEmpty ? "" : "  " + files)"
            guard lastShown[message.id] != line else { return }
            lastShown[message.id] = line
            note(line)
        case .removed(let id):
            note("\(viewer) removed \(id.rawValue.prefix(8))")
        case .reactionsChanged(let message):
            note("\(viewer) reactions on \(Self.quote(message).trimmingCharacters(in: .whitespaces)): \(message.reactions.map(\.symbol).joined())")
        case .receiptChanged(let message, let receipt):
            note("\(viewer) sees \(receipt.user)'s \(receipt.state.rawValue) receipt on \(Self.quote(message).trimmingCharacters(in: .whitespaces))")
        case .typingChanged(let user, let isTyping):
            note("\(viewer) sees \(user) \(isTyping ? "typing…" : "stopped typing")")
        case .syncStateChanged:
            break
        }
    }

    static func quote(_ message: Message) -> String {
        let text = message.content.text.isEmpty ? "(\(message.content.attachments.count) attachment(s))" : "\"\(message.content.text)\""
        return "\(message.id.rawValue.prefix(8)) \(text)".padding(toLength: 40, withPad: " ", startingAt: 0)
    }
}

enum DemoCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, booleanFlags: ["memory", "keep"])
        try arguments.check(allowed: ["data-dir", "memory", "keep"])
        if !arguments.has("memory") { return try await BridgeDemoCommand.run(arguments) }
        let directory = URL(fileURLWithPath: arguments.value("data-dir")
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-demo-\(UUID().uuidString)").path)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let storePath = directory.appendingPathComponent("alice.sqlite").path
        try? FileManager.default.removeItem(atPath: storePath)

        let backend = try MemoryBackend(scheme: .clientAssigned)
        let room = ConversationID("demo-room")
        let alice = UserID("alice"), bob = UserID("bob")
        try backend.createConversation(room, members: [alice, bob])
        backend.faults.publishDelay = .milliseconds(40)

        let configuration = EngineConfiguration(retry: RetryPolicy(baseDelay: 0.05, maxDelay: 0.4, maxAttempts: 4),
                                                stagingDirectory: directory.appendingPathComponent("staging"))
        let printer = TimelinePrinter()
        writeLine("Switchboard demo — the engine on the in-memory backend (store: \(storePath))")

        var aliceClient = ChatClient(adapter: backend.makeAdapter(for: alice), store: try SQLiteStore(path: storePath),
                                     configuration: configuration)
        let bobClient = ChatClient(adapter: backend.makeAdapter(for: bob), store: try SQLiteStore(path: ":memory:"),
                                   configuration: configuration)
        try await aliceClient.start()
        try await bobClient.start()
        var aliceRoom = try await aliceClient.open(room)
        let bobRoom = try await bobClient.open(room)
        var watchers = [watch(aliceRoom, as: "alice", printer), watch(bobRoom, as: "bob", printer)]

        await printer.section("1. Optimistic send — visible at once, before the network answers (40 ms publish delay)")
        let hello = try await aliceRoom.send("Hi Bob! Lunch today?")
        await printer.note("send() returned: \(hello.delivery) — already on screen")
        try await waitUntil { try await bobClient.message(hello.id) != nil }
        try await bobRoom.markRead(hello.id)
        try await waitUntil { try await aliceClient.message(hello.id)?.delivery == .read }

        await printer.section("2. Failure and retry — two failed publishes, retried under the same MessageID")
        backend.faults.publishDelay = .zero
        backend.faults.failNextPublishes(2)
        let flaky = try await aliceRoom.send("Sending over a bad network")
        try await waitUntil { try await aliceClient.message(flaky.id)?.delivery.isPublished == true }
        await printer.note("backend holds \(backend.faults.messages(in: room).filter { $0.remoteMessage.text == flaky.content.text }.count) copy — no duplicate")
        await printer.note("now the network is down for good: the attempt limit is reached")
        backend.faults.setOffline(alice, true)
        let doomed = try await aliceRoom.send("This one will fail first")
        try await waitUntil { try await aliceClient.message(doomed.id)?.delivery.isFailed == true }
        backend.faults.setOffline(alice, false)
        await printer.note("network back; the user taps retry")
        try await aliceRoom.retry(doomed.id)
        try await waitUntil { try await aliceClient.message(doomed.id)?.delivery.isPublished == true }

        await printer.section("3. Three attachments, one fails — the message goes with two, a failed placeholder keeps one")
        backend.faults.failUploads(named: "receipt.pdf")
        let album = try await aliceRoom.send("Photos from the trip", attachments: [
            .data(Data(repeating: 0xA1, count: 300_000), filename: "beach.jpg", mimeType: "image/jpeg"),
            .data(Data(repeating: 0xB2, count: 120_000), filename: "receipt.pdf", mimeType: "application/pdf"),
            .data(Data(repeating: 0xC3, count: 200_000), filename: "sunset.jpg", mimeType: "image/jpeg"),
        ])
        try await waitUntil { try await aliceClient.message(album.id)?.delivery.isPublished == true }
        try await waitUntil { try await bobClient.message(album.id) != nil }
        let placeholder = try await aliceClient.timeline(of: room).first { $0.content.metadata["switchboard.splitFrom"] == album.id.rawValue }
        if let placeholder {
            backend.faults.stopFailingUploads(named: "receipt.pdf")
            await printer.note("upload service recovered; the user retries the placeholder")
            try await aliceRoom.retry(placeholder.id)
            try await waitUntil { try await aliceClient.message(placeholder.id)?.delivery.isPublished == true }
        }

        await printer.section("4. Restart — the app dies with messages in flight; they come back in their state and go out once")
        backend.faults.setOffline(alice, true)
        let inFlight1 = try await aliceRoom.send("Written in a tunnel")
        let inFlight2 = try await aliceRoom.send("Still in the tunnel")
        let draft = try await aliceRoom.prepare("A draft I have not sent yet", noSend: true)
        try await Task.sleep(for: .milliseconds(100))
        for watcher in watchers { watcher.cancel() }
        await aliceClient.stop()
        await printer.note("── app killed; store reopened from disk ──")
        aliceClient = ChatClient(adapter: backend.makeAdapter(for: alice), store: try SQLiteStore(path: storePath),
                                 configuration: configuration)
        try await aliceClient.start()
        for id in [inFlight1.id, inFlight2.id, draft.id] {
            if let restored = try await aliceClient.message(id) {
                await printer.note("restored  \(TimelinePrinter.quote(restored))  \(restored.delivery)")
            }
        }
        backend.faults.setOffline(alice, false)
        aliceRoom = try await aliceClient.open(room)
        watchers = [watch(aliceRoom, as: "alice", printer)]
        try await waitUntil {
            let first = try await aliceClient.message(inFlight1.id)?.delivery.isPublished == true
            let second = try await aliceClient.message(inFlight2.id)?.delivery.isPublished == true
            return first && second
        }
        try await aliceRoom.publish(draft.id)
        try await waitUntil { try await bobClient.message(draft.id) != nil }
        try await Task.sleep(for: .milliseconds(50))
        for watcher in watchers { watcher.cancel() }

        writeLine("\nFinal timeline as Bob sees it:")
        for message in try await bobClient.timeline(of: room) {
            let files = message.content.attachments.map(\.filename).joined(separator: ", ")
            writeLine("  \(message.sender.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)) \(message.content.text)\(files.isEmpty ? "" : "  [\(files)]")")
        }
        let serverCopies = backend.faults.messages(in: room).count
        let bobCount = try await bobClient.store.read { tx in try tx.messageCount(in: room) }
        writeLine("\nBackend rows: \(serverCopies); Bob's rows: \(bobCount); every message exactly once.")
        await aliceClient.stop()
        await bobClient.stop()
        if arguments.value("data-dir") == nil, !arguments.has("keep") { try? FileManager.default.removeItem(at: directory) }
        if arguments.has("keep") { writeLine("\nkept \(directory.path)") }
        return serverCopies == bobCount ? 0 : 1
    }

    static func watch(_ conversation: Conversation, as name: String, _ printer: TimelinePrinter) -> Task<Void, Never> {
        Task {
            guard let events = try? await conversation.events() else { return }
            for await event in events { await printer.show(event, as: name) }
        }
    }

    static func waitUntil(timeout: TimeInterval = 15, _ condition: () async throws -> Bool) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw SwitchboardError(.transport, "demo step timed out")
    }
}
