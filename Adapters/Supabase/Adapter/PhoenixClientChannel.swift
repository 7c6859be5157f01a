import SwitchboardCore
import Foundation
import SupabaseProtocol

/// The client side of one Phoenix channel over one socket, as a pure state machine (no sockets, no clocks).
///
/// The driver feeds it inputs (socket opened or closed, frames received, clock ticks, a new token) and carries
/// out the outputs (open the socket, send frames, close it, wait before reconnecting). It joins on every open,
/// sends a heartbeat every `heartbeatInterval` and treats an unanswered one as a dead socket, rejoins after any
/// channel error, and backs off exponentially with jitter — forever — between attempts.
public struct PhoenixClientChannel: Sendable {
    /// Timing and identity of the channel.
    public struct Configuration: Sendable {
        /// The channel topic, e.g. `realtime:conversation:<id>`.
        public var topic: String
        /// Seconds between heartbeats (Supabase clients use 25).
        public var heartbeatInterval: Double = 25
        /// Seconds a join may take before the attempt counts as failed.
        public var joinTimeout: Double = 10
        /// First reconnect delay in seconds.
        public var backoffBase: Double = 0.05
        /// Longest reconnect delay in seconds.
        public var backoffCap: Double = 10

        /// A configuration for `topic` with the default timings.
        public init(topic: String) {
            self.topic = topic
        }
    }

    /// Where the channel is.
    public enum Phase: Sendable, Hashable {
        /// No socket; waiting to (re)connect.
        case disconnected
        /// The driver is opening the socket.
        case connecting
        /// `phx_join` sent, no reply yet.
        case joining
        /// Joined: changes flow.
        case joined
        /// Stopped for good.
        case stopped
    }

    /// Something the driver tells the machine.
    public enum Input: Sendable {
        /// Start (or restart after `stopped` is not possible): ask for a socket.
        case start
        /// The socket is open.
        case socketOpened
        /// The socket closed or could not open.
        case socketClosed(reason: String)
        /// A decoded frame arrived.
        case received(PhoenixMessage)
        /// The clock advanced to `now` (seconds, monotonic).
        case tick(now: Double)
        /// The access token changed (refresh); joined channels are told with `access_token`.
        case tokenChanged(String)
        /// The reconnect delay passed.
        case reconnectDue
        /// Stop for good: leave and close.
        case stop
    }

    /// Something the machine asks the driver to do or to report.
    public enum Output: Sendable, Equatable {
        /// Open the socket.
        case openSocket
        /// Send this frame.
        case send(PhoenixMessage)
        /// Close the socket (the driver reports `socketClosed` afterwards).
        case closeSocket(reason: String)
        /// Wait this many seconds, then input `reconnectDue`.
        case scheduleReconnect(after: Double)
        /// The channel is joined (first time or again): the adapter runs a delta sync now.
        case joined(response: JSONValue)
        /// The channel is down; it reconnects on its own.
        case disconnected(reason: String)
        /// A channel event for the adapter (postgres_changes, broadcast, presence, system).
        case event(PhoenixMessage)
    }

    /// The configuration.
    public let configuration: Configuration
    /// The current phase.
    public private(set) var phase: Phase = .disconnected
    /// Failed attempts since the last successful join (drives the backoff).
    public private(set) var failedAttempts = 0
    /// Successful joins so far.
    public private(set) var joinCount = 0

    private var joinPayload: JSONValue
    private var token: String?
    private var nextRef = 0
    private var joinRef: String?
    private var pendingHeartbeat: String?
    private var lastHeartbeat: Double?
    private var joinSentAt: Double?
    private var now: Double = 0
    private let random: @Sendable () -> Double

    /// A channel for `configuration`, joining with `joinPayload` (its `access_token` is replaced by the current
    /// token); `random` gives numbers in 0..<1 for the jitter (inject a fixed one in tests).
    public init(configuration: Configuration, joinPayload: JSONValue, token: String?,
                random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.configuration = configuration
        self.joinPayload = joinPayload
        self.token = token
        self.random = random
    }

    /// Whether a frame may be sent on the channel now.
    public var isJoined: Bool { phase == .joined }

    /// The ref of the current join (frames pushed on the channel carry it).
    public var currentJoinRef: String? { joinRef }

    /// Makes a push on the channel (broadcast, presence) if joined; nil otherwise.
    public mutating func push(event: String, payload: JSONValue) -> PhoenixMessage? {
        guard phase == .joined else { return nil }
        return PhoenixMessage(joinRef: joinRef, ref: makeRef(), topic: configuration.topic, event: event, payload: payload)
    }

    /// Advances the machine by one input and returns what the driver must do, in order.
    public mutating func handle(_ input: Input) -> [Output] {
        switch input {
        case .start:
            guard phase == .disconnected else { return [] }
            phase = .connecting
            return [.openSocket]
        case .socketOpened:
            guard phase == .connecting else { return [] }
            return sendJoin()
        case .socketClosed(let reason):
            return lost(reason: reason, closeSocket: false)
        case .reconnectDue:
            guard phase == .disconnected else { return [] }
            phase = .connecting
            return [.openSocket]
        case .tokenChanged(let newToken):
            token = newToken
            guard phase == .joined else { return [] }
            return [.send(PhoenixMessage(joinRef: joinRef, ref: makeRef(), topic: configuration.topic,
                                         event: "access_token", payload: ["access_token": .string(newToken)]))]
        case .tick(let time):
            now = time
            return tick()
        case .received(let message):
            return receive(message)
        case .stop:
            let wasOpen = phase == .joining || phase == .joined || phase == .connecting
            var outputs: [Output] = []
            if phase == .joined {
                outputs.append(.send(PhoenixMessage(joinRef: joinRef, ref: makeRef(), topic: configuration.topic,
                                                    event: "phx_leave", payload: [:])))
            }
            phase = .stopped
            if wasOpen { outputs.append(.closeSocket(reason: "stopped")) }
            return outputs
        }
    }

    /// The reconnect delay after `attempts` failures: exponential, capped, with 50–100 % jitter.
    public func backoff(attempts: Int) -> Double {
        let exponential = configuration.backoffBase * pow(2, Double(min(attempts, 30)))
        return min(configuration.backoffCap, exponential) * (0.5 + 0.5 * random())
    }

    private mutating func makeRef() -> String {
        nextRef += 1
        return String(nextRef)
    }

    private mutating func sendJoin() -> [Output] {
        phase = .joining
        let ref = makeRef()
        joinRef = ref
        joinSentAt = now
        pendingHeartbeat = nil
        lastHeartbeat = now
        var payload = joinPayload.members ?? []
        payload.removeAll { $0.key == "access_token" }
        if let token { payload.append((key: "access_token", value: .string(token))) }
        return [.send(PhoenixMessage(joinRef: ref, ref: ref, topic: configuration.topic, event: "phx_join",
                                     payload: .object(payload)))]
    }

    private mutating func lost(reason: String, closeSocket: Bool) -> [Output] {
        guard phase != .stopped, phase != .disconnected else { return [] }
        let wasJoined = phase == .joined
        phase = .disconnected
        joinRef = nil
        pendingHeartbeat = nil
        joinSentAt = nil
        let delay = backoff(attempts: failedAttempts)
        failedAttempts += 1
        var outputs: [Output] = []
        if closeSocket { outputs.append(.closeSocket(reason: reason)) }
        if wasJoined { outputs.append(.disconnected(reason: reason)) }
        outputs.append(.scheduleReconnect(after: delay))
        return outputs
    }

    private mutating func tick() -> [Output] {
        switch phase {
        case .joining:
            if let sent = joinSentAt, now - sent >= configuration.joinTimeout {
                return lost(reason: "join timed out", closeSocket: true)
            }
            return heartbeatIfDue()
        case .joined:
            return heartbeatIfDue()
        default:
            return []
        }
    }

    private mutating func heartbeatIfDue() -> [Output] {
        guard let last = lastHeartbeat, now - last >= configuration.heartbeatInterval else { return [] }
        if pendingHeartbeat != nil {
            return lost(reason: "heartbeat not answered within \(Int(configuration.heartbeatInterval)) s", closeSocket: true)
        }
        let ref = makeRef()
        pendingHeartbeat = ref
        lastHeartbeat = now
        return [.send(PhoenixMessage(joinRef: nil, ref: ref, topic: "phoenix", event: "heartbeat", payload: [:]))]
    }

    private mutating func receive(_ message: PhoenixMessage) -> [Output] {
        guard phase == .joining || phase == .joined else { return [] }
        if message.topic == "phoenix" {
            if message.event == "phx_reply", message.ref != nil, message.ref == pendingHeartbeat { pendingHeartbeat = nil }
            return []
        }
        guard message.topic == configuration.topic else { return [] }
        // Frames of an earlier join of this topic (a stale reply or event) are ignored.
        if let ref = message.joinRef, let joinRef, ref != joinRef { return [] }
        switch message.event {
        case "phx_reply" where phase == .joining && message.ref == joinRef:
            if message.payload["status"]?.stringValue == "ok" {
                phase = .joined
                failedAttempts = 0
                joinCount += 1
                joinSentAt = nil
                return [.joined(response: message.payload["response"] ?? [:])]
            }
            let reason = message.payload["response"]?["reason"]?.stringValue ?? "join refused"
            return lost(reason: "join refused: \(reason)", closeSocket: true)
        case "phx_error":
            return lost(reason: "channel error", closeSocket: true)
        case "phx_close":
            return lost(reason: "channel closed by the server", closeSocket: true)
        case "system" where message.payload["status"]?.stringValue == "error":
            let text = message.payload["message"]?.stringValue ?? "system error"
            return lost(reason: text, closeSocket: true)
        default:
            return phase == .joined ? [.event(message)] : []
        }
    }
}
