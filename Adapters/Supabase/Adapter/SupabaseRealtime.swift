import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// One conversation's live connection: drives a `PhoenixClientChannel` over a WebSocket (v2 serializer) and
/// turns channel events into `AdapterEvent`s. Reconnects forever until stopped.
actor SupabaseRealtime {
    private let url: URL
    private let conversation: ConversationID
    private let localUser: UserID
    private let tokens: SupabaseTokenSource
    private var pushedToken: String?
    private var lastTokenCheck: Double = 0
    private var roster = PresenceRoster()
    private let continuation: AsyncStream<AdapterEvent>.Continuation
    private var machine: PhoenixClientChannel
    private var socket: WebSocketClient?
    private var generation = 0
    private var tasks: [Task<Void, Never>] = []
    private let started = ContinuousClock.now

    /// A live connection for `conversation` at the realtime `url`, yielding into `continuation`; with
    /// `skippingOwnMessages` its messages are subscribed without the local user's own.
    init(url: URL, conversation: ConversationID, localUser: UserID, skippingOwnMessages: Bool = false,
         tokens: SupabaseTokenSource, continuation: AsyncStream<AdapterEvent>.Continuation) {
        self.tokens = tokens
        self.url = url
        self.conversation = conversation
        self.localUser = localUser
        self.continuation = continuation
        let inConversation = "conversation_id=eq.\(conversation.rawValue)"
        let othersOnly = inConversation + ",sender_id=neq." + SupabaseRows.quotedFilterValue(localUser.rawValue)
        let changes: [JSONValue] = ["messages", "reactions", "receipts"].map { table in
            let filter = skippingOwnMessages && table == "messages" ? othersOnly : inConversation
            return ["event": "*", "schema": "public", "table": .string(table), "filter": .string(filter)]
        }
        // `presence.enabled`, as supabase-js sends it for a channel with presence listeners: the join's reply is
        // followed by `presence_state`, so members who tracked before this join are known, not only later diffs.
        let payload: JSONValue = ["config": ["broadcast": ["self": false, "ack": false],
                                             "presence": ["key": .string(localUser.rawValue), "enabled": true],
                                             "postgres_changes": .array(changes), "private": false]]
        machine = PhoenixClientChannel(configuration: .init(topic: "realtime:conversation:\(conversation.rawValue)"),
                                       joinPayload: payload, token: nil)
    }

    /// Starts connecting and the clock that drives heartbeats.
    func start() async {
        let token = await tokens.current()
        pushedToken = token
        perform(machine.handle(.tokenChanged(token)))
        perform(machine.handle(.start))
        tasks.append(Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(250))
                await self?.tick()
            }
        })
    }

    /// Leaves the channel, closes the socket and stops reconnecting.
    func stop() async {
        perform(machine.handle(.stop))
        for task in tasks { task.cancel() }
        tasks = []
        let socket = self.socket
        self.socket = nil
        await socket?.close()
    }

    /// Pushes a refreshed token to the channel (and uses it for later joins).
    func updateToken(_ token: String) {
        pushedToken = token
        perform(machine.handle(.tokenChanged(token)))
    }

    /// The users present on the channel now.
    func onlineUsers() -> Set<UserID> { Set(roster.online.map(UserID.init)) }

    /// Broadcasts a typing indicator to the conversation's other members; dropped while not joined.
    func sendTyping(_ isTyping: Bool) {
        let payload: JSONValue = ["type": "broadcast", "event": "typing",
                                  "payload": ["user_id": .string(localUser.rawValue), "typing": .bool(isTyping)]]
        if let message = machine.push(event: "broadcast", payload: payload) { perform([.send(message)]) }
    }

    private func tick() async {
        let elapsed = started.duration(to: .now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        if machine.phase == .joined, seconds - lastTokenCheck >= 1 {
            lastTokenCheck = seconds
            let token = await tokens.current()
            if token != pushedToken { updateToken(token) }
        }
        perform(machine.handle(.tick(now: seconds)))
    }

    private func perform(_ outputs: [PhoenixClientChannel.Output]) {
        for output in outputs {
            switch output {
            case .openSocket:
                open()
            case .send(let message):
                guard let socket else { continue }
                let text = PhoenixTextCodec.encode(message, version: .v2)
                Task { try? await socket.send(text: text) }
            case .closeSocket(let reason):
                generation += 1
                let socket = self.socket
                self.socket = nil
                Task { await socket?.close(code: .normalClosure, reason: String(reason.prefix(100))) }
            case .scheduleReconnect(let delay):
                tasks.append(Task { [weak self] in
                    try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
                    await self?.reconnectDue()
                })
                tasks.removeAll { $0.isCancelled }
            case .joined:
                roster = PresenceRoster()
                let track: JSONValue = ["type": "presence", "event": "track",
                                        "payload": ["user_id": .string(localUser.rawValue),
                                                    "online_at": .string(SupabaseTimestamp.format(Date()))]]
                if let message = machine.push(event: "presence", payload: track) { perform([.send(message)]) }
                continuation.yield(.connection(.connected))
            case .disconnected(let reason):
                roster = PresenceRoster()
                continuation.yield(.connection(.disconnected(reason: reason)))
                let lowered = reason.lowercased()
                if lowered.contains("token") || lowered.contains("jwt") {
                    Task { [tokens] in _ = try? await tokens.refresh() }
                }
            case .event(let message):
                handleEvent(message)
            }
        }
    }

    private func reconnectDue() async {
        let token = await tokens.current()
        pushedToken = token
        perform(machine.handle(.tokenChanged(token)))
        perform(machine.handle(.reconnectDue))
    }

    private func open() {
        generation += 1
        let current = generation
        let client = WebSocketClient()
        socket = client
        let url = self.url
        tasks.append(Task { [weak self] in
            do {
                try await client.connect(url: url)
            } catch {
                await self?.socketEnded(generation: current, reason: "connect failed: \(error)")
                return
            }
            await self?.socketOpened(generation: current)
            for await frame in client.frames {
                switch frame {
                case .text(let text):
                    await self?.received(text, generation: current)
                case .binary:
                    continue
                case .close(let code, let reason):
                    await self?.socketEnded(generation: current, reason: "closed \(code) \(reason)")
                    return
                }
            }
            await self?.socketEnded(generation: current, reason: "stream ended")
        })
    }

    private func socketOpened(generation: Int) {
        guard generation == self.generation else { return }
        perform(machine.handle(.socketOpened))
    }

    private func socketEnded(generation: Int, reason: String) {
        guard generation == self.generation else { return }
        socket = nil
        perform(machine.handle(.socketClosed(reason: reason)))
    }

    private func received(_ text: String, generation: Int) {
        guard generation == self.generation else { return }
        guard let message = try? PhoenixTextCodec.decode(text, version: .v2) else {
            // A frame we cannot read: resynchronise by reconnecting (the rejoin runs a delta sync).
            perform(machine.handle(.socketClosed(reason: "malformed frame")))
            let socket = self.socket
            self.socket = nil
            self.generation += 1
            Task { await socket?.close(code: .protocolError, reason: "malformed frame") }
            return
        }
        perform(machine.handle(.received(message)))
    }

    private func handleEvent(_ message: PhoenixMessage) {
        switch message.event {
        case "postgres_changes":
            let data = message.payload["data"] ?? .null
            guard let table = data["table"]?.stringValue, let type = data["type"]?.stringValue,
                  type == "INSERT" || type == "UPDATE", let record = data["record"],
                  let change = SupabaseRows.change(table: table, row: record) else { return }
            continuation.yield(.change(change))
        case "presence_state":
            roster.applyState(message.payload)
        case "presence_diff":
            roster.applyDiff(message.payload)
        case "broadcast":
            guard message.payload["event"]?.stringValue == "typing",
                  let user = message.payload["payload"]?["user_id"]?.stringValue, user != localUser.rawValue else { return }
            let isTyping = message.payload["payload"]?["typing"]?.boolValue ?? false
            continuation.yield(.typing(conversation: conversation, user: UserID(user), isTyping: isTyping))
        default:
            return
        }
    }
}
