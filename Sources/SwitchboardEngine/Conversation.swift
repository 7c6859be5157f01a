import Foundation
import SwitchboardCore

/// A handle on one open conversation: the calls an app's chat screen makes.
public struct Conversation: Sendable {
    /// The client that owns the conversation.
    public let client: ChatClient
    /// The conversation's ID on the backend.
    public let id: ConversationID

    /// Sends text (optionally replying, with attachments); the message is visible before any network call.
    @discardableResult
    public func send(_ text: String, replyTo: MessageID? = nil, attachments: [AttachmentSource] = [],
                     metadata: [String: String] = [:]) async throws -> Message {
        try await client.send(text, in: id, replyTo: replyTo, attachments: attachments, metadata: metadata)
    }

    /// Prepares a message; with `noSend` it is held until `publish(_:)` names it.
    @discardableResult
    public func prepare(_ text: String, replyTo: MessageID? = nil, attachments: [AttachmentSource] = [],
                        noSend: Bool) async throws -> Message {
        try await client.send(text, in: id, replyTo: replyTo, attachments: attachments, noSend: noSend)
    }

    /// Publishes one prepared message (idempotent).
    public func publish(_ message: MessageID) async throws { try await client.publish(message) }

    /// Publishes every queued message not held by noSend.
    public func publishAll() async { await client.publishAll() }

    /// Drops an unpublished message locally.
    public func discard(_ message: MessageID) async throws { try await client.discard(message) }

    /// Retries a failed message under the same ID.
    public func retry(_ message: MessageID) async throws { try await client.retry(message) }

    /// Edits one of the local user's messages.
    public func edit(_ message: MessageID, text: String) async throws { try await client.edit(message, text: text) }

    /// Deletes one of the local user's messages.
    public func delete(_ message: MessageID) async throws { try await client.delete(message) }

    /// Taps a reaction under the backend's policy.
    public func react(_ message: MessageID, symbol: String) async throws { try await client.react(message, symbol: symbol) }

    /// Marks a message read.
    public func markRead(_ message: MessageID) async throws { try await client.markRead(message) }

    /// Marks a message delivered.
    public func markDelivered(_ message: MessageID) async throws { try await client.markDelivered(message) }

    /// Says whether the local user is typing.
    public func setTyping(_ isTyping: Bool) async throws { try await client.setTyping(isTyping, in: id) }

    /// The in-memory window, oldest first.
    public func timeline() async throws -> [Message] { try await client.timeline(of: id) }

    /// Pages backwards; returns how many older messages were added.
    @discardableResult
    public func loadOlder() async throws -> Int { try await client.loadOlder(in: id) }

    /// Whether older messages may exist.
    public func hasOlder() async throws -> Bool { try await client.hasOlder(in: id) }

    /// Runs a delta sync now (for a return from background).
    public func synchronize() async throws { try await client.synchronize(id) }

    /// The ordered event stream, from now on.
    public func events() async throws -> AsyncStream<SequencedEvent> { try await client.events(in: id) }

    /// Closes the conversation (`ChatClient.close`): the live subscription ends, the event streams finish.
    public func close() async { await client.close(id) }
}
