import Foundation

/// The life of one server connection as a pure state machine: which phase it is in, which single deadline
/// applies, and what to do when it passes. The event loop feeds it events and carries out what it answers, so
/// every timing rule (slow heads, idle keep-alive, stuck handlers, stream heartbeats, silent WebSocket peers) is
/// tested without a socket.
struct HTTPConnectionMachine: Sendable {
    /// The time limits the machine applies.
    struct Timeouts: Sendable, Hashable {
        /// How long a request may take to arrive whole, counted from its first byte (or from accept).
        var request: Duration
        /// How long a kept-alive connection may wait for the next request's first byte.
        var keepAlive: Duration
        /// How long a handler may take to answer (`nil`: no limit).
        var handler: Duration?
        /// How often a silent WebSocket peer is pinged.
        var webSocketPing: Duration
        /// How long an error answer's unread body is drained before the socket closes.
        var linger: Duration
    }

    /// What the connection is doing.
    enum Phase: Hashable, Sendable {
        /// Waiting for the first byte of a request (the first one on the connection, or the next one).
        case waiting
        /// A request has begun arriving and is not complete.
        case receiving
        /// The handler runs; no response byte has been written.
        case handling
        /// A streamed response body is being written; `heartbeat` is its idle interval, if any.
        case streaming(heartbeat: Duration?)
        /// An upgraded WebSocket connection.
        case webSocket
        /// An error answer was written; unread request bytes are discarded until the peer closes or time runs out.
        case lingering
        /// Closed or closing: nothing more happens.
        case closed
    }

    /// What to do when the deadline passes.
    enum Expiry: Hashable, Sendable {
        /// Close the connection (idle too long, or a request too slow to arrive, or lingering over).
        case close
        /// Answer 503 and close: the handler took too long.
        case answerTimedOut
        /// Write the stream's heartbeat chunk, then re-arm.
        case heartbeat
        /// Ping the silent WebSocket peer, then re-arm.
        case ping
        /// Drop the WebSocket peer without a close frame: it stayed silent through `maxSilentPings` pings.
        case drop
        /// Nothing to do but re-arm (the WebSocket peer was heard from in this period).
        case rearm
    }

    /// How many pings in a row a silent WebSocket peer may leave unanswered before it is dropped.
    static let maxSilentPings = 5

    let timeouts: Timeouts
    /// The current phase.
    private(set) var phase = Phase.waiting
    /// Requests answered on this connection so far.
    private(set) var answered = 0
    private var silentPings = 0
    private var heardSinceTick = false

    /// A new connection's machine.
    init(timeouts: Timeouts) {
        self.timeouts = timeouts
    }

    /// The deadline for the current phase, measured from the moment the phase (or the last re-arm) began; `nil`
    /// when no timer should run.
    var deadline: (after: Duration, expiry: Expiry)? {
        switch phase {
        case .waiting: (answered == 0 ? timeouts.request : timeouts.keepAlive, .close)
        case .receiving: (timeouts.request, .close)
        case .handling: timeouts.handler.map { ($0, .answerTimedOut) }
        case .streaming(let heartbeat): heartbeat.map { ($0, .heartbeat) }
        case .webSocket: (timeouts.webSocketPing, .ping)
        case .lingering: (timeouts.linger, .close)
        case .closed: nil
        }
    }

    /// Request bytes arrived; returns whether the deadline must be re-armed (a request's clock starts once).
    mutating func bytesArrived() -> Bool {
        switch phase {
        case .waiting:
            phase = .receiving
            // The first request's clock started at accept and keeps running; a later one's starts now.
            return answered > 0
        case .webSocket:
            heardSinceTick = true
            silentPings = 0
            return false
        default:
            return false
        }
    }

    /// The request is complete: the handler starts.
    mutating func requestComplete() {
        guard phase == .waiting || phase == .receiving else { return }
        phase = .handling
    }

    /// The response head was written; with a streamed body the machine moves to `.streaming`.
    mutating func responseStarted(streamed: Bool, heartbeat: Duration?) {
        guard phase == .handling else { return }
        if streamed { phase = .streaming(heartbeat: heartbeat) }
    }

    /// The response is complete. Returns whether the connection stays open for another request.
    mutating func responseFinished(keepAlive: Bool) -> Bool {
        guard phase == .handling || isStreaming else { return false }
        answered += 1
        phase = keepAlive ? .waiting : .closed
        return keepAlive
    }

    /// The connection became a WebSocket.
    mutating func upgraded() {
        phase = .webSocket
        silentPings = 0
        heardSinceTick = false
    }

    /// An error answer was written and the unread request should be drained for a while.
    mutating func linger() {
        phase = .lingering
    }

    /// The connection is closed.
    mutating func closed() {
        phase = .closed
    }

    /// The deadline passed: what to do. For pings, the count of silent periods advances here.
    mutating func expired() -> Expiry? {
        guard let (_, expiry) = deadline else { return nil }
        switch expiry {
        case .ping:
            if heardSinceTick {
                heardSinceTick = false
                silentPings = 0
                return .rearm
            }
            silentPings += 1
            return silentPings > Self.maxSilentPings ? .drop : .ping
        case .close, .answerTimedOut, .drop:
            phase = .closed
            return expiry
        case .heartbeat, .rearm:
            return expiry
        }
    }

    private var isStreaming: Bool {
        if case .streaming = phase { return true }
        return false
    }
}
