import Foundation
import SocketIOProtocol
import SwitchboardCore

/// One `liveEvents` stream: a `SocketIOClient` whose events for one conversation become `AdapterEvent`s.
final class SocketIOLiveStream: Sendable {
    /// The Socket.IO client (also used to send typing).
    let client: SocketIOClient
    /// The subscribed conversation.
    let conversation: ConversationID
    private let localUser: UserID
    private let mapper: SocketIOChangeMapper
    private let pumpTask = Locked<Task<Void, Never>?>(nil)

    /// The server events that carry a full message object.
    static let messageEvents: Set<String> = ["message", "message:edited", "message:deleted", "message:reaction",
                                             "message:receipt"]

    /// A stream for `conversation` over `client`.
    init(client: SocketIOClient, conversation: ConversationID, localUser: UserID, mapper: SocketIOChangeMapper) {
        self.client = client
        self.conversation = conversation
        self.localUser = localUser
        self.mapper = mapper
    }

    /// Starts the client and the pump that yields into `continuation`.
    func start(_ continuation: AsyncStream<AdapterEvent>.Continuation) {
        let client = self.client
        let task = Task { [self] in await self.pump(into: continuation) }
        pumpTask.withLock { $0 = task }
        Task { await client.start() }
    }

    /// Stops the client (closing its socket) and the pump.
    func stop() async {
        let task = pumpTask.withLock { pump in
            defer { pump = nil }
            return pump
        }
        await client.stop()
        await task?.value
    }

    private func pump(into continuation: AsyncStream<AdapterEvent>.Continuation) async {
        var wasConnected = false
        for await event in client.events {
            switch event {
            case .connected:
                wasConnected = true
                continuation.yield(.connection(.connected))
            case .connectError(let message, _):
                if wasConnected { continuation.yield(.connection(.disconnected(reason: "connect_error: \(message)"))) }
                wasConnected = false
            case .disconnected(let reason):
                if wasConnected { continuation.yield(.connection(.disconnected(reason: reason))) }
                wasConnected = false
            case .event(let event):
                if event.ackID != nil { try? await client.ack(event) }
                let argument = event.arguments.first ?? .null
                if Self.messageEvents.contains(event.name) {
                    guard argument["conversationId"]?.stringValue == conversation.rawValue,
                          let mapped = mapper.changes(for: argument) else { continue }
                    for change in mapped.changes { continuation.yield(.change(change)) }
                } else if event.name == "typing" {
                    guard argument["conversationId"]?.stringValue == conversation.rawValue,
                          let user = argument["userId"]?.stringValue, user != localUser.rawValue else { continue }
                    continuation.yield(.typing(conversation: conversation, user: UserID(user),
                                               isTyping: argument["typing"]?.boolValue ?? false))
                }
            }
        }
    }
}
