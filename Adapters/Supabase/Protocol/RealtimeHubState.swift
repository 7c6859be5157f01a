import SwitchboardCore
import Foundation

/// The outcome of checking a socket or channel token.
public enum RealtimeTokenCheck: Sendable, Hashable {
    /// The token verified; these are its claims.
    case valid(JWTClaims)
    /// The token was refused; `reason` is sent to the client (never the token itself).
    case invalid(reason: String)
}

/// One frame the hub wants written to a socket.
public enum RealtimeOutboundFrame: Sendable, Hashable {
    /// A text frame (an encoded Phoenix message).
    case text(String)
    /// A binary frame (a V2 user broadcast, kind 0x04).
    case binary([UInt8])
    /// Close the socket with this code and reason.
    case close(code: UInt16, reason: String)
}

/// A frame addressed to one socket.
public struct RealtimeDelivery: Sendable, Hashable {
    /// The socket's id as given to `connect`.
    public var socket: Int
    /// What to write.
    public var frame: RealtimeOutboundFrame

    /// A delivery with both fields given.
    public init(socket: Int, frame: RealtimeOutboundFrame) {
        self.socket = socket
        self.frame = frame
    }
}

/// A joined channel that should receive a change, with the subscription ids it matched.
public struct RealtimeChangeTarget: Sendable, Hashable {
    /// The socket.
    public var socket: Int
    /// The channel topic, e.g. `realtime:room:42`.
    public var topic: String
    /// The ids of the channel's bindings the change matched.
    public var ids: [Int64]
    /// The channel's current claims (row-level security is checked as them).
    public var claims: JWTClaims
    /// The socket's serializer.
    public var version: PhoenixTextCodec.Version

    /// A target with every field given.
    public init(socket: Int, topic: String, ids: [Int64], claims: JWTClaims, version: PhoenixTextCodec.Version) {
        self.socket = socket
        self.topic = topic
        self.ids = ids
        self.claims = claims
        self.version = version
    }
}

/// Every socket, channel, subscription and presence of the realtime service: a pure state machine.
///
/// The server feeds it decoded input (`receive`), connects and disconnects, clock ticks and changes; it returns
/// the frames to write. It performs no I/O: token checks go through the injected `authenticate` closure and the
/// set of subscribable tables is given up front.
public struct RealtimeHubState: Sendable {
    /// Resource limits.
    public struct Limits: Sendable, Hashable {
        /// The largest text or binary frame accepted; bigger ones close the socket with 1009.
        public var maxFrameBytes = 1 << 20
        /// A socket silent (no heartbeat) this long is closed.
        public var heartbeatTimeout: TimeInterval = 60
        /// The most channels one socket may join.
        public var maxChannelsPerSocket = 100

        /// The defaults.
        public init() {}
    }

    /// One joined channel of a socket.
    private struct Channel: Sendable {
        var topic: String
        var name: String
        var joinRef: String?
        var isPrivate: Bool
        var token: String
        var claims: JWTClaims
        var selfBroadcast: Bool
        var ackBroadcast: Bool
        var presenceKey: String
        var presenceEnabled: Bool
        var subscriptions: [RealtimeSubscription]
        var presence: (ref: String, meta: [(key: String, value: JSONValue)])?
        var trackedPayload: JSONValue?
    }

    /// One connected socket and its channels.
    private struct Socket: Sendable {
        var version: PhoenixTextCodec.Version
        var apiKey: String?
        var lastHeartbeat: Date
        var channels: [String: Channel] = [:]
        var joinOrder: [String] = []
        var closing = false
    }

    /// The limits in force.
    public let limits: Limits
    private let knownTables: Set<RealtimeTableName>
    private let authenticate: @Sendable (String) -> RealtimeTokenCheck
    private let makePresenceKey: @Sendable () -> String
    private var sockets: [Int: Socket] = [:]
    private var refCounter: UInt64 = 0

    /// A state with no sockets; `knownTables` are the tables whose changes can be subscribed to.
    public init(knownTables: Set<RealtimeTableName>, limits: Limits = Limits(),
                makePresenceKey: @escaping @Sendable () -> String = { UUID().uuidString.lowercased() },
                authenticate: @escaping @Sendable (String) -> RealtimeTokenCheck) {
        self.knownTables = knownTables
        self.limits = limits
        self.makePresenceKey = makePresenceKey
        self.authenticate = authenticate
    }

    /// The ids of the connected sockets.
    public var socketIDs: [Int] { sockets.keys.sorted() }

    /// The topics `socket` has joined, in join order.
    public func joinedTopics(of socket: Int) -> [String] { sockets[socket]?.joinOrder ?? [] }

    // MARK: - Connection lifecycle

    /// Registers a socket; a present but invalid `apiKey` closes it at once (1008).
    public mutating func connect(socket: Int, version: PhoenixTextCodec.Version, apiKey: String?, now: Date) -> [RealtimeDelivery] {
        sockets[socket] = Socket(version: version, apiKey: apiKey, lastHeartbeat: now)
        if let apiKey, !apiKey.isEmpty, !apiKey.hasPrefix("sb_"), case .invalid(let reason) = authenticate(apiKey) {
            return closeSocket(socket, code: 1008, reason: String(reason.prefix(120)))
        }
        return []
    }

    /// Forgets a socket; its presences leave (a `presence_diff` to the others on each topic).
    public mutating func disconnect(socket: Int) -> [RealtimeDelivery] {
        guard let state = sockets.removeValue(forKey: socket) else { return [] }
        var out: [RealtimeDelivery] = []
        for topic in state.joinOrder {
            if let channel = state.channels[topic] { out += presenceLeave(channel) }
        }
        return out
    }

    /// Closes sockets silent past the heartbeat timeout and shuts channels whose token expired.
    public mutating func tick(now: Date) -> [RealtimeDelivery] {
        var out: [RealtimeDelivery] = []
        for id in sockets.keys.sorted() {
            guard let state = sockets[id], !state.closing else { continue }
            if now.timeIntervalSince(state.lastHeartbeat) > limits.heartbeatTimeout {
                out += closeSocket(id, code: 1000, reason: "heartbeat timeout")
                continue
            }
            for topic in state.joinOrder {
                guard let channel = state.channels[topic], let exp = channel.claims.exp, exp <= now else { continue }
                let seconds = Int(now.timeIntervalSince(exp))
                out += shutdownChannel(socket: id, topic: topic, message: "Token has expired \(seconds) seconds ago")
            }
        }
        return out
    }

    // MARK: - Input

    /// Handles one text frame from `socket`.
    public mutating func receive(socket: Int, text: String, now: Date) -> [RealtimeDelivery] {
        guard let state = sockets[socket], !state.closing else { return [] }
        guard text.utf8.count <= limits.maxFrameBytes else { return closeSocket(socket, code: 1009, reason: "message too big") }
        let message: PhoenixMessage
        do {
            message = try PhoenixTextCodec.decode(text, version: state.version)
        } catch {
            switch error {
            case .invalidJSON: return closeSocket(socket, code: 1007, reason: "invalid JSON")
            default: return closeSocket(socket, code: 1003, reason: "invalid message shape")
            }
        }
        return handle(socket: socket, message: message, now: now)
    }

    /// Handles one binary frame from `socket` (V2 user broadcast push, kind 0x03).
    public mutating func receive(socket: Int, binary: [UInt8], now: Date) -> [RealtimeDelivery] {
        guard let state = sockets[socket], !state.closing else { return [] }
        guard binary.count <= limits.maxFrameBytes else { return closeSocket(socket, code: 1009, reason: "message too big") }
        guard state.version == .v2, let push = try? PhoenixUserBroadcastPush.decode(binary) else {
            return closeSocket(socket, code: 1003, reason: "unsupported binary frame")
        }
        guard let channel = state.channels[push.topic] else {
            return [reply(socket, PhoenixMessage(joinRef: push.joinRef, ref: push.ref, topic: push.topic, event: "broadcast",
                                                 payload: [:]), status: "error", response: ["reason": "unmatched topic"])]
        }
        var out: [RealtimeDelivery] = []
        for recipient in recipients(of: channel, from: socket, includeSender: channel.selfBroadcast) {
            guard let version = sockets[recipient]?.version else { continue }
            switch version {
            case .v2:
                let frame = PhoenixUserBroadcast(topic: push.topic, userEvent: push.userEvent, metadata: nil,
                                                 encoding: push.encoding, payload: push.payload)
                if let bytes = try? frame.encode() { out.append(RealtimeDelivery(socket: recipient, frame: .binary(bytes))) }
            case .v1:
                // A JSON serializer client cannot take raw bytes: JSON payloads become a text broadcast, binary ones are dropped.
                guard let json = push.jsonPayload else { continue }
                let payload: JSONValue = ["type": "broadcast", "event": .string(push.userEvent), "payload": json]
                out.append(send(recipient, PhoenixMessage(joinRef: nil, ref: nil, topic: push.topic, event: "broadcast", payload: payload)))
            }
        }
        if channel.ackBroadcast {
            out.append(reply(socket, PhoenixMessage(joinRef: push.joinRef, ref: push.ref, topic: push.topic,
                                                    event: "broadcast", payload: [:])))
        }
        return out
    }

    /// Routes one decoded message by topic and event.
    private mutating func handle(socket: Int, message: PhoenixMessage, now: Date) -> [RealtimeDelivery] {
        if message.topic == "phoenix" {
            guard message.event == "heartbeat" else { return [] }
            sockets[socket]?.lastHeartbeat = now
            return [reply(socket, message)]
        }
        if message.event == "phx_join" { return join(socket: socket, message: message, now: now) }
        guard let channel = sockets[socket]?.channels[message.topic] else {
            return message.ref == nil ? [] : [reply(socket, message, status: "error", response: ["reason": "unmatched topic"])]
        }
        switch message.event {
        case "phx_leave":
            var out = [reply(socket, message)]
            out += removeChannel(socket: socket, topic: message.topic)
            out.append(send(socket, PhoenixMessage(joinRef: channel.joinRef, ref: channel.joinRef, topic: message.topic,
                                                   event: "phx_close", payload: [:])))
            return out
        case "broadcast":
            return broadcast(socket: socket, channel: channel, message: message)
        case "presence":
            return presence(socket: socket, channel: channel, message: message)
        case "access_token":
            return accessToken(socket: socket, channel: channel, message: message)
        default:
            return []
        }
    }

    // MARK: - Join

    /// `phx_join`: token check, bindings, reply, system message, presence state.
    private mutating func join(socket: Int, message: PhoenixMessage, now: Date) -> [RealtimeDelivery] {
        guard message.topic.hasPrefix("realtime:") else {
            return [reply(socket, message, status: "error", response: ["reason": "unmatched topic"])]
        }
        var out: [RealtimeDelivery] = []
        if let existing = sockets[socket]?.channels[message.topic] {
            // Phoenix closes the previous channel on a duplicate join.
            out += removeChannel(socket: socket, topic: message.topic)
            out.append(send(socket, PhoenixMessage(joinRef: existing.joinRef, ref: existing.joinRef, topic: message.topic,
                                                   event: "phx_close", payload: [:])))
        }
        if (sockets[socket]?.channels.count ?? 0) >= limits.maxChannelsPerSocket {
            return out + [reply(socket, message, status: "error", response: ["reason": "ChannelRateLimitReached: Too many channels"])]
        }
        let payload = message.payload.objectValue ?? [:]
        let config = payload["config"]?.objectValue ?? [:]
        let token = payload["access_token"]?.stringValue ?? payload["user_token"]?.stringValue ?? sockets[socket]?.apiKey
        guard let token, !token.isEmpty else {
            return out + [reply(socket, message, status: "error", response: ["reason": "Unauthorized: no access token was provided"])]
        }
        let claims: JWTClaims
        switch authenticate(token) {
        case .valid(let verified): claims = verified
        case .invalid(let reason): return out + [reply(socket, message, status: "error", response: ["reason": .string(reason)])]
        }
        let broadcast = config["broadcast"]?.objectValue ?? [:]
        let presence = config["presence"]?.objectValue ?? [:]
        let key = presence["key"]?.stringValue ?? ""
        let bindings = (config["postgres_changes"]?.arrayValue ?? []).filter { $0.objectValue != nil }
        var subscriptions: [RealtimeSubscription] = []
        var subscribeError: String?
        for binding in bindings {
            do {
                let subscription = try RealtimeSubscription(params: binding)
                if subscription.table != "*", subscription.schema != "*",
                   !knownTables.contains(RealtimeTableName(schema: subscription.schema, table: subscription.table)) {
                    subscribeError = subscribeError ?? "Unable to subscribe to changes with given parameters. Please check Realtime is enabled for the given connect parameters: [\(subscription.logDescription)]"
                }
                subscriptions.append(subscription)
            } catch {
                subscribeError = subscribeError ?? error.message
            }
        }
        let name = String(message.topic.dropFirst("realtime:".count))
        let channel = Channel(topic: message.topic, name: name, joinRef: message.joinRef,
                              isPrivate: config["private"]?.boolValue ?? false, token: token, claims: claims,
                              selfBroadcast: broadcast["self"]?.boolValue ?? false,
                              ackBroadcast: broadcast["ack"]?.boolValue ?? false,
                              presenceKey: key.isEmpty ? makePresenceKey() : key,
                              presenceEnabled: presence["enabled"]?.boolValue ?? false,
                              subscriptions: subscribeError == nil ? subscriptions : [], presence: nil, trackedPayload: nil)
        sockets[socket]?.channels[message.topic] = channel
        sockets[socket]?.joinOrder.append(message.topic)
        let replyBindings: [JSONValue] = bindings.map { binding in
            let members = binding.members ?? []
            return .object(members.filter { $0.key != "id" } + [(key: "id", value: .int(RealtimeSubscription.id(of: binding)))])
        }
        out.append(reply(socket, message, response: ["postgres_changes": .array(replyBindings)]))
        if !bindings.isEmpty {
            let status: JSONValue = subscribeError == nil ? "ok" : "error"
            out.append(send(socket, systemMessage(topic: message.topic, joinRef: message.joinRef, extension: "postgres_changes", status: status,
                                                  message: subscribeError ?? "Subscribed to PostgreSQL", channel: name)))
        }
        if channel.presenceEnabled {
            out.append(send(socket, PhoenixMessage(joinRef: message.joinRef, ref: nil, topic: message.topic, event: "presence_state",
                                                   payload: presenceState(of: channel))))
        }
        return out
    }

    /// A `system` message `{extension, status, message, channel}`.
    private func systemMessage(topic: String, joinRef: String?, extension name: String, status: JSONValue, message: String,
                               channel: String) -> PhoenixMessage {
        PhoenixMessage(joinRef: joinRef, ref: nil, topic: topic, event: "system",
                       payload: ["extension": .string(name), "status": status, "message": .string(message),
                                 "channel": .string(channel)])
    }

    // MARK: - Broadcast, presence, token refresh

    /// `broadcast`: relays the payload to the topic (sender only with `self`), acks with `ack`.
    private func broadcast(socket: Int, channel: Channel, message: PhoenixMessage) -> [RealtimeDelivery] {
        guard message.payload.objectValue != nil else {
            return message.ref == nil ? [] : [reply(socket, message, status: "error", response: ["reason": "broadcast payload must be an object"])]
        }
        let relay = PhoenixMessage(joinRef: nil, ref: nil, topic: message.topic, event: "broadcast", payload: message.payload)
        var out = recipients(of: channel, from: socket, includeSender: channel.selfBroadcast).map { send($0, relay) }
        if channel.ackBroadcast { out.append(reply(socket, message)) }
        return out
    }

    /// A broadcast sent through the REST API (`POST /realtime/v1/api/broadcast`), from no socket: `payload` goes to
    /// every socket joined to `topic` (the full `realtime:…` topic) with the same privacy. A JSON payload goes as
    /// a text `broadcast` to every socket; a binary one as a V2 user-broadcast frame to V2 sockets only (a JSON
    /// serializer client cannot take raw bytes).
    public func serverBroadcast(topic: String, isPrivate: Bool, event: String, json: JSONValue?, binary: [UInt8]?) -> [RealtimeDelivery] {
        var out: [RealtimeDelivery] = []
        for id in sockets.keys.sorted() {
            guard let socket = sockets[id], !socket.closing, let joined = socket.channels[topic], joined.isPrivate == isPrivate else { continue }
            if let json {
                let payload: JSONValue = ["type": "broadcast", "event": .string(event), "payload": json]
                out.append(send(id, PhoenixMessage(joinRef: nil, ref: nil, topic: topic, event: "broadcast", payload: payload)))
            } else if let binary, socket.version == .v2,
                      let bytes = try? PhoenixUserBroadcast(topic: topic, userEvent: event, encoding: .binary, payload: binary).encode() {
                out.append(RealtimeDelivery(socket: id, frame: .binary(bytes)))
            }
        }
        return out
    }

    /// `presence` track/untrack: updates the meta and sends `presence_diff` to the topic.
    private mutating func presence(socket: Int, channel: Channel, message: PhoenixMessage) -> [RealtimeDelivery] {
        let payload = message.payload.objectValue ?? [:]
        switch payload["event"]?.stringValue?.lowercased() {
        case "track"?:
            let tracked = payload["payload"] ?? [:]
            guard let members = tracked.members else {
                return [reply(socket, message, status: "error", response: ["reason": "Presence track payload must be a map"])]
            }
            if channel.trackedPayload == tracked { return [reply(socket, message)] }
            refCounter += 1
            let ref = Self.presenceRef(refCounter)
            var joinedMeta: [(key: String, value: JSONValue)] = [(key: "phx_ref", value: .string(ref))]
            if let previous = channel.presence { joinedMeta.append((key: "phx_ref_prev", value: .string(previous.ref))) }
            joinedMeta += members.filter { $0.key != "phx_ref" && $0.key != "phx_ref_prev" }
            var updated = channel
            updated.presence = (ref: ref, meta: joinedMeta)
            updated.trackedPayload = tracked
            updated.presenceEnabled = true
            sockets[socket]?.channels[channel.topic] = updated
            let joins: JSONValue = .object([(key: channel.presenceKey, value: Self.metas(joinedMeta))])
            var leaves: JSONValue = .object([])
            if let previous = channel.presence {
                leaves = .object([(key: channel.presenceKey, value: Self.metas(previous.meta))])
            }
            var out = [reply(socket, message)]
            out += presenceDiff(on: updated, joins: joins, leaves: leaves)
            return out
        case "untrack"?:
            var out = [reply(socket, message)]
            out += presenceLeave(channel)
            sockets[socket]?.channels[channel.topic]?.presence = nil
            sockets[socket]?.channels[channel.topic]?.trackedPayload = nil
            return out
        default:
            return [reply(socket, message, status: "error", response: [:])]
        }
    }

    /// `access_token`: adopts a valid token, shuts the channel on an invalid one.
    private mutating func accessToken(socket: Int, channel: Channel, message: PhoenixMessage) -> [RealtimeDelivery] {
        guard let token = message.payload["access_token"]?.stringValue, token != channel.token, !token.hasPrefix("sb_") else {
            return []
        }
        switch authenticate(token) {
        case .valid(let claims):
            sockets[socket]?.channels[channel.topic]?.token = token
            sockets[socket]?.channels[channel.topic]?.claims = claims
            return []
        case .invalid(let reason):
            return shutdownChannel(socket: socket, topic: channel.topic, message: reason)
        }
    }

    /// Real-server `shutdown_response`: a `system` error, then the channel closes (`phx_close`).
    private mutating func shutdownChannel(socket: Int, topic: String, message: String) -> [RealtimeDelivery] {
        guard let channel = sockets[socket]?.channels[topic] else { return [] }
        var out = [send(socket, systemMessage(topic: topic, joinRef: channel.joinRef, extension: "system", status: "error", message: message,
                                              channel: channel.name))]
        out += removeChannel(socket: socket, topic: topic)
        out.append(send(socket, PhoenixMessage(joinRef: channel.joinRef, ref: channel.joinRef, topic: topic,
                                               event: "phx_close", payload: [:])))
        return out
    }

    /// Drops a channel, announcing its presence leaving.
    private mutating func removeChannel(socket: Int, topic: String) -> [RealtimeDelivery] {
        guard let channel = sockets[socket]?.channels.removeValue(forKey: topic) else { return [] }
        sockets[socket]?.joinOrder.removeAll { $0 == topic }
        return presenceLeave(channel)
    }

    /// The `presence_diff` announcing that `channel`'s presence left.
    private func presenceLeave(_ channel: Channel) -> [RealtimeDelivery] {
        guard let presence = channel.presence else { return [] }
        let leaves: JSONValue = .object([(key: channel.presenceKey, value: Self.metas(presence.meta))])
        return presenceDiff(on: channel, joins: .object([]), leaves: leaves)
    }

    /// A `presence_diff` to every socket on the channel's topic.
    private func presenceDiff(on channel: Channel, joins: JSONValue, leaves: JSONValue) -> [RealtimeDelivery] {
        let diff = PhoenixMessage(joinRef: nil, ref: nil, topic: channel.topic, event: "presence_diff",
                                  payload: ["joins": joins, "leaves": leaves])
        return members(of: channel).map { send($0, diff) }
    }

    /// The `presence_state` payload of the channel's topic.
    private func presenceState(of channel: Channel) -> JSONValue {
        var order: [String] = []
        var metas: [String: [JSONValue]] = [:]
        for id in sockets.keys.sorted() {
            guard let state = sockets[id] else { continue }
            for topic in state.joinOrder {
                guard let other = state.channels[topic], other.topic == channel.topic, other.isPrivate == channel.isPrivate,
                      let presence = other.presence else { continue }
                if metas[other.presenceKey] == nil { order.append(other.presenceKey) }
                let meta = presence.meta.filter { $0.key != "phx_ref_prev" }
                metas[other.presenceKey, default: []].append(.object(meta))
            }
        }
        return .object(order.map { (key: $0, value: ["metas": .array(metas[$0] ?? [])]) })
    }

    /// Sockets joined to the same topic (same privacy) as `channel`, in id order.
    private func members(of channel: Channel) -> [Int] {
        sockets.keys.sorted().filter { id in
            guard let other = sockets[id], !other.closing, let joined = other.channels[channel.topic] else { return false }
            return joined.isPrivate == channel.isPrivate
        }
    }

    /// The topic's sockets, without the sender unless `includeSender`.
    private func recipients(of channel: Channel, from socket: Int, includeSender: Bool) -> [Int] {
        members(of: channel).filter { includeSender || $0 != socket }
    }

    // MARK: - Changes

    /// Whether a joined channel of an open socket has a `postgres_changes` binding naming `table` (wildcards
    /// included): the change feed builds no change for a table nobody listens to, like the real service.
    public func hasSubscription(covering table: RealtimeTableName) -> Bool {
        sockets.values.contains { socket in
            !socket.closing && socket.channels.values.contains { channel in
                channel.subscriptions.contains { $0.covers(table) }
            }
        }
    }

    /// The joined channels whose bindings match `change`, with the ids matched (row-level security not yet applied).
    public func targets(for change: RealtimeChange) -> [RealtimeChangeTarget] {
        var out: [RealtimeChangeTarget] = []
        for id in sockets.keys.sorted() {
            guard let state = sockets[id], !state.closing else { continue }
            for topic in state.joinOrder {
                guard let channel = state.channels[topic] else { continue }
                var ids: [Int64] = []
                for subscription in channel.subscriptions where subscription.matches(change) && !ids.contains(subscription.id) {
                    ids.append(subscription.id)
                }
                if !ids.isEmpty {
                    out.append(RealtimeChangeTarget(socket: id, topic: topic, ids: ids, claims: channel.claims, version: state.version))
                }
            }
        }
        return out
    }

    /// The `postgres_changes` frame delivering `change` to `target`.
    public static func changeDelivery(_ change: RealtimeChange, to target: RealtimeChangeTarget) -> RealtimeDelivery {
        let message = PhoenixMessage(joinRef: nil, ref: nil, topic: target.topic, event: "postgres_changes",
                                     payload: change.payload(ids: target.ids))
        return RealtimeDelivery(socket: target.socket, frame: .text(PhoenixTextCodec.encode(message, version: target.version)))
    }

    // MARK: - Encoding helpers

    /// Encodes `message` for `socket`'s serializer.
    private func send(_ socket: Int, _ message: PhoenixMessage) -> RealtimeDelivery {
        let version = sockets[socket]?.version ?? .v1
        return RealtimeDelivery(socket: socket, frame: .text(PhoenixTextCodec.encode(message, version: version)))
    }

    /// A `phx_reply` to `message`.
    private func reply(_ socket: Int, _ message: PhoenixMessage, status: String = "ok",
                       response: JSONValue = .object([])) -> RealtimeDelivery {
        send(socket, PhoenixMessage.reply(to: message, status: status, response: response))
    }

    /// Marks the socket closing and asks the server to close it.
    private mutating func closeSocket(_ socket: Int, code: UInt16, reason: String) -> [RealtimeDelivery] {
        sockets[socket]?.closing = true
        return [RealtimeDelivery(socket: socket, frame: .close(code: code, reason: reason))]
    }

    /// `{"metas": [meta]}`.
    private static func metas(_ meta: [(key: String, value: JSONValue)]) -> JSONValue {
        .object([(key: "metas", value: .array([.object(meta)]))])
    }

    /// A Phoenix-style presence ref: short, unique within this state.
    private static func presenceRef(_ counter: UInt64) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var value = counter, text = ""
        repeat {
            text.append(alphabet[Int(value % 64)])
            value /= 64
        } while value > 0
        return "F" + String(repeating: "A", count: max(0, 10 - text.count)) + String(text.reversed())
    }
}
