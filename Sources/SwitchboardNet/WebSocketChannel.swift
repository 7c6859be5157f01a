import CCivetweb
import Foundation
import SwitchboardCore

/// A transport other than civetweb that carries a connection's bytes (the `wss://` client's TLS session, and
/// every connection of our own server).
protocol WebSocketByteSink: Sendable {
    /// Writes (or queues) encoded frames in full without waiting on the network; called by the reading side for
    /// its replies. `false` when the connection can no longer be written to.
    func write(_ bytes: Data) -> Bool
    /// Writes encoded frames for a Swift task, returning once they are on their way; `false` when the connection
    /// can no longer be written to.
    func send(_ bytes: Data) async -> Bool
}

extension WebSocketByteSink {
    /// A transport whose `write` may block runs it on a Dispatch thread, off the cooperative pool.
    func send(_ bytes: Data) async -> Bool {
        await CivetwebLibrary.offloaded { write(bytes) }
    }
}

/// One WebSocket connection's shared machinery, used by both `WebSocketConnection` (server) and `WebSocketClient`.
///
/// civetweb's thread calls `frameReceived` and `connectionEnded`; Swift tasks call `send`, `close` and `ping`.
/// The protocol rules live in `WebSocketStateMachine`, framing in `WebSocketFrameEncoder`. Frames civetweb's
/// thread must answer (pong, close echo, a failure's close frame) are written on that thread with its own
/// connection pointer; frames from Swift are written on a Dispatch thread while holding `connection`, which
/// `connectionEnded` clears, so no write can reach a connection civetweb has recycled or freed.
final class WebSocketChannel: Sendable {
    /// Which side of the connection we are (clients mask their frames).
    enum Role: Sendable {
        case server, client
    }

    private struct PendingPing {
        var payload: Data
        var answered: CivetwebCompletion
    }

    private struct Pings {
        var counter: UInt64 = 0
        var pending: [(id: UInt64, ping: PendingPing)] = []
        var answeredIDs: Set<UInt64> = []
    }

    let role: Role
    /// How many received messages may wait for the reader (nil: no limit).
    let maxUnreadMessages: Int?
    /// Incoming messages, ending with a `.close` frame (which may be missing after a cut-off for falling behind).
    let frames: AsyncStream<WebSocketFrame>
    /// Fires when civetweb has left the read loop (the peer's close arrived, the connection failed or dropped).
    let ended = CivetwebCompletion()
    private let continuation: AsyncStream<WebSocketFrame>.Continuation
    private let machine: Locked<WebSocketStateMachine>
    private let connection = Locked<CivetwebHandle?>(nil)
    private let sink = Locked<(any WebSocketByteSink)?>(nil)
    private let pings = Locked(Pings())

    /// A channel; with `maxUnreadMessages`, a peer that gets that many messages ahead of the reader is cut off
    /// with 1008 instead of growing the queue without bound.
    init(role: Role, maxMessageSize: Int, maxUnreadMessages: Int? = nil) {
        self.role = role
        self.maxUnreadMessages = maxUnreadMessages.map { max(1, $0) }
        let policy: AsyncStream<WebSocketFrame>.Continuation.BufferingPolicy =
            self.maxUnreadMessages.map { .bufferingOldest($0) } ?? .unbounded
        (frames, continuation) = AsyncStream.makeStream(of: WebSocketFrame.self, bufferingPolicy: policy)
        machine = Locked(WebSocketStateMachine(maxMessageSize: maxMessageSize))
    }

    /// Queues `frames` for the reader; false when the queue was full (the caller then ends the connection).
    private func deliver(_ frames: [WebSocketFrame]) -> Bool {
        for frame in frames {
            if case .dropped = continuation.yield(frame) { return false }
        }
        return true
    }

    /// The close reason when the reader falls `maxUnreadMessages` behind.
    private var backlogReason: String { "more than \(maxUnreadMessages ?? 0) messages unread" }

    /// Whether messages may still be sent.
    var isOpen: Bool { machine.withLock { $0.canSend } }

    /// Records the civetweb connection that Swift-side writes go to.
    func attach(_ pointer: OpaquePointer) {
        connection.withLock { $0 = CivetwebHandle(pointer: pointer) }
    }

    /// Records the non-civetweb transport that all writes go to (instead of `attach(_:)`).
    func attach(sink newSink: any WebSocketByteSink) {
        sink.withLock { $0 = newSink }
    }

    // MARK: A read loop of our own (the TLS client's thread)

    /// One frame from our own read loop; replies go through the attached sink. Returns whether to keep reading.
    func frameReceived(bits: UInt8, payload: Data) -> Bool {
        let reaction = machine.withLock { $0.frameReceived(bits: bits, payload: payload) }
        if let reply = reaction.reply { _ = writeToSink(reply) }
        guard deliver(reaction.deliver) else {
            failFromReader(code: .policyViolation, reason: backlogReason)
            return false
        }
        if let pong = reaction.pong { pongReceived(pong) }
        return reaction.keepReading
    }

    /// The byte stream could not be framed: send a close frame with `code` if still open (the stream then ends with 1006).
    func failFromReader(code: WebSocketCloseCode, reason: String) {
        if let frame = machine.withLock({ $0.closeRequested(code: code, reason: reason) }) { _ = writeToSink(frame) }
    }

    private func writeToSink(_ frame: WebSocketOutgoingFrame) -> Bool {
        guard let sink = sink.withLock({ $0 }) else { return false }
        return sink.write(encode(frame))
    }

    // MARK: civetweb's thread

    /// One frame from civetweb's read loop; returns whether to keep reading.
    func frameReceived(on pointer: OpaquePointer, bits: Int32, payload: UnsafeMutablePointer<CChar>?,
                       length: Int) -> Bool {
        let data = payload.map { Data(bytes: $0, count: length) } ?? Data()
        let reaction = machine.withLock { $0.frameReceived(bits: UInt8(truncatingIfNeeded: bits), payload: data) }
        if let reply = reaction.reply { _ = write(reply, on: pointer) }
        guard deliver(reaction.deliver) else {
            closeNow(on: pointer, code: .policyViolation, reason: backlogReason)
            return false
        }
        if let pong = reaction.pong { pongReceived(pong) }
        return reaction.keepReading
    }

    /// Starts the closing handshake from civetweb's own thread (no Swift-side write lock needed there).
    func closeNow(on pointer: OpaquePointer, code: WebSocketCloseCode, reason: String) {
        if let frame = machine.withLock({ $0.closeRequested(code: code, reason: reason) }) {
            _ = write(frame, on: pointer)
        }
    }

    /// civetweb left the read loop: no more writes, the stream ends, pending pings fail.
    func connectionEnded() {
        connection.withLock { $0 = nil }
        sink.withLock { $0 = nil }
        if let frame = machine.withLock({ $0.connectionEnded() }) { continuation.yield(frame) }
        continuation.finish()
        let waiting = pings.withLock { pings -> [CivetwebCompletion] in
            defer { pings.pending.removeAll() }
            return pings.pending.map(\.ping.answered)
        }
        for completion in waiting { completion.complete() }
        ended.complete()
    }

    // MARK: Swift side

    /// Sends a text or binary message.
    func send(opcode: UInt8, payload: Data) async throws {
        guard isOpen else { throw WebSocketError(.connectionClosed, "the connection is closing or closed") }
        try await write(WebSocketOutgoingFrame(opcode: opcode, payload: payload))
    }

    /// Sends several text or binary messages, in order, as one write (one system call for the lot).
    func send(messages: [(opcode: UInt8, payload: Data)]) async throws {
        guard isOpen else { throw WebSocketError(.connectionClosed, "the connection is closing or closed") }
        guard !messages.isEmpty else { return }
        try await write(messages.map { WebSocketOutgoingFrame(opcode: $0.opcode, payload: $0.payload) })
    }

    /// Sends a close frame unless one was sent already or the connection ended; does not wait for the answer.
    func close(code: WebSocketCloseCode, reason: String) async {
        guard let frame = machine.withLock({ $0.closeRequested(code: code, reason: reason) }) else { return }
        try? await write(frame)
    }

    /// Sends a ping and waits for the matching pong (an answer to a later ping also counts).
    func ping(payload: Data?, timeout: Duration) async throws {
        guard isOpen else { throw WebSocketError(.connectionClosed, "the connection is closing or closed") }
        let (id, payload, answered) = pings.withLock { pings -> (UInt64, Data, CivetwebCompletion) in
            pings.counter += 1
            let payload = payload ?? Data("ping-\(pings.counter)".utf8)
            let answered = CivetwebCompletion()
            pings.pending.append((pings.counter, PendingPing(payload: payload, answered: answered)))
            return (pings.counter, payload, answered)
        }
        guard payload.count <= 125 else {
            forgetPing(id)
            throw WebSocketError(.payloadTooLarge, "a ping payload holds at most 125 bytes")
        }
        do {
            try await write(WebSocketOutgoingFrame(opcode: WebSocketOpcode.ping, payload: payload))
        } catch {
            forgetPing(id)
            throw error
        }
        let inTime = await answered.wait(timeout: timeout)
        let wasAnswered = pings.withLock { $0.answeredIDs.remove(id) != nil }
        forgetPing(id)
        if wasAnswered { return }
        if !inTime { throw WebSocketError(.timedOut, "no pong within \(timeout)") }
        throw WebSocketError(.connectionClosed, "the connection ended before the pong arrived")
    }

    private func forgetPing(_ id: UInt64) {
        pings.withLock { pings in
            pings.pending.removeAll { $0.id == id }
            pings.answeredIDs.remove(id)
        }
    }

    private func pongReceived(_ payload: Data) {
        let answered = pings.withLock { pings -> [CivetwebCompletion] in
            guard let index = pings.pending.firstIndex(where: { $0.ping.payload == payload }) else { return [] }
            let resolved = pings.pending[...index]
            pings.pending.removeFirst(index + 1)
            for entry in resolved { pings.answeredIDs.insert(entry.id) }
            return resolved.map(\.ping.answered)
        }
        for completion in answered { completion.complete() }
    }

    private func write(_ frame: WebSocketOutgoingFrame) async throws {
        try await write([frame])
    }

    /// Writes `frames` back to back in one buffer (from Swift: on a Dispatch thread, under the connection lock).
    private func write(_ frames: [WebSocketOutgoingFrame]) async throws {
        var bytes = Data()
        for frame in frames { bytes.append(encode(frame)) }
        let written: Bool
        if let sink = sink.withLock({ $0 }) {
            written = await sink.send(bytes)
        } else {
            written = await CivetwebLibrary.offloaded { [self, bytes] in
                connection.withLock { handle -> Bool in
                    guard let handle else { return false }
                    return write(bytes, on: handle.pointer)
                }
            }
        }
        guard written else { throw WebSocketError(.connectionClosed, "the connection is closed") }
    }

    private func write(_ frame: WebSocketOutgoingFrame, on pointer: OpaquePointer) -> Bool {
        write(encode(frame), on: pointer)
    }

    private func write(_ bytes: Data, on pointer: OpaquePointer) -> Bool {
        // The same per-connection lock civetweb's own WebSocket writers take, so frames never interleave.
        mg_lock_connection(pointer)
        defer { mg_unlock_connection(pointer) }
        return bytes.withUnsafeBytes { mg_write(pointer, $0.baseAddress, $0.count) } == bytes.count
    }

    /// Wire bytes for `frame`; a client masks with a fresh random key per frame.
    private func encode(_ frame: WebSocketOutgoingFrame) -> Data {
        WebSocketFrameEncoder.encode(frame, maskingKey: role == .client ? UInt32.random(in: 1...UInt32.max) : nil)
    }
}
