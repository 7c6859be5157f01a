import Foundation
import Synchronization
import SocketIOProtocol
import SwitchboardCore

/// One `liveEvents` stream: a `SocketIOClient` whose events for one conversation become `AdapterEvent`s, with
/// the injected delivery faults (cuts, offline, duplicates, swapped pairs) applied at this boundary.
final class SocketIOLiveStream: Sendable {
    /// The Socket.IO client (also used to send typing).
    let client: SocketIOClient
    /// The subscribed conversation.
    let conversation: ConversationID
    private let localUser: UserID
    private let mapper: SocketIOChangeMapper
    private let faults: AdapterFaults?
    private let state = Mutex<(pump: Task<Void, Never>?, observer: UUID?)>((nil, nil))

    /// The server events that carry a full message object.
    static let messageEvents: Set<String> = ["message", "message:edited", "message:deleted", "message:reaction",
                                             "message:receipt"]

    /// A stream for `conversation` over `client`.
    init(client: SocketIOClient, conversation: ConversationID, localUser: UserID, mapper: SocketIOChangeMapper,
         faults: AdapterFaults?) {
        self.client = client
        self.conversation = conversation
        self.localUser = localUser
        self.mapper = mapper
        self.faults = faults
    }

    /// Starts the client and the pump that yields into `continuation`.
    func start(_ continuation: AsyncStream<AdapterEvent>.Continuation) {
        let client = self.client
        let observer = faults.map { faults in
            faults.addDropObserver { [weak faults] in
                Task { if await client.dropConnection() { faults?.recordCut() } }
            }
        }
        let pump = Task { [self] in await self.pump(into: continuation) }
        state.withLock { $0 = (pump, observer) }
        Task { await client.start() }
    }

    /// Stops the client (closing its socket) and the pump.
    func stop() async {
        let (pump, observer) = state.withLock { state in
            defer { state = (nil, nil) }
            return state
        }
        if let observer { faults?.removeObserver(observer) }
        await client.stop()
        await pump?.value
    }

    private func pump(into continuation: AsyncStream<AdapterEvent>.Continuation) async {
        var wasConnected = false
        var held: [AdapterEvent]?
        func deliver(_ events: [AdapterEvent]) {
            if faults?.reordersDeliveries == true {
                if let first = held {
                    held = nil
                    for event in events { continuation.yield(event) }
                    for event in first { continuation.yield(event) }
                } else {
                    held = events
                }
                return
            }
            if let first = held {
                held = nil
                for event in first { continuation.yield(event) }
            }
            for event in events { continuation.yield(event) }
            if faults?.duplicatesDeliveries == true { for event in events { continuation.yield(event) } }
        }
        for await event in client.events {
            switch event {
            case .connected:
                if let first = held {
                    held = nil
                    for event in first { continuation.yield(event) }
                }
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
                    deliver(mapped.changes.map(AdapterEvent.change))
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
