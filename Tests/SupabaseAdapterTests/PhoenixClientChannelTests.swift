import SupabaseAdapter
import SupabaseProtocol
import Testing

/// The client channel machine: join, heartbeat, rejoin with backoff, token refresh, stale frames.
@Suite("Phoenix client channel")
struct PhoenixClientChannelTests {
    private let topic = "realtime:conversation:c1"

    private func machine(random: Double = 1) -> PhoenixClientChannel {
        var configuration = PhoenixClientChannel.Configuration(topic: topic)
        configuration.backoffBase = 1
        configuration.backoffCap = 8
        return PhoenixClientChannel(configuration: configuration,
                                    joinPayload: ["config": ["postgres_changes": []], "access_token": "old"],
                                    token: "t1", random: { random })
    }

    private func sentFrames(_ outputs: [PhoenixClientChannel.Output]) -> [PhoenixMessage] {
        outputs.compactMap { if case .send(let message) = $0 { return message } else { return nil } }
    }

    private func joined(_ channel: inout PhoenixClientChannel) throws -> PhoenixMessage {
        #expect(channel.handle(.start) == [.openSocket])
        let join = try #require(sentFrames(channel.handle(.socketOpened)).first)
        let reply = PhoenixMessage.reply(to: join, response: ["postgres_changes": []])
        #expect(channel.handle(.received(reply)) == [.joined(response: ["postgres_changes": []])])
        return join
    }

    @Test("joins on open with the current token and reports joined on the ok reply")
    func joinsWithToken() throws {
        var channel = machine()
        let join = try joined(&channel)
        #expect(join.event == "phx_join")
        #expect(join.topic == topic)
        #expect(join.joinRef == join.ref)
        #expect(join.payload["access_token"] == "t1")
        #expect(channel.phase == .joined)
        #expect(channel.joinCount == 1)
    }

    @Test("heartbeats every interval; an unanswered heartbeat closes the socket and schedules a reconnect")
    func heartbeat() throws {
        var channel = machine()
        _ = try joined(&channel)
        #expect(channel.handle(.tick(now: 10)).isEmpty)
        let beat = try #require(sentFrames(channel.handle(.tick(now: 25))).first)
        #expect(beat.topic == "phoenix" && beat.event == "heartbeat")
        #expect(channel.handle(.received(PhoenixMessage.reply(to: beat))).isEmpty)
        let second = try #require(sentFrames(channel.handle(.tick(now: 50))).first)
        #expect(second.ref != beat.ref)
        let outputs = channel.handle(.tick(now: 75))
        #expect(outputs.contains { if case .closeSocket = $0 { true } else { false } })
        #expect(outputs.contains { if case .disconnected = $0 { true } else { false } })
        #expect(outputs.contains(.scheduleReconnect(after: 1)))
        #expect(channel.phase == .disconnected)
    }

    @Test("reconnect delays grow exponentially to the cap, with jitter, and reset after a join")
    func backoff() throws {
        var channel = machine(random: 1)
        _ = channel.handle(.start)
        var delays: [Double] = []
        for _ in 0..<6 {
            let outputs = channel.handle(.socketClosed(reason: "refused"))
            for case .scheduleReconnect(let delay) in outputs { delays.append(delay) }
            #expect(channel.handle(.reconnectDue) == [.openSocket])
        }
        #expect(delays == [1, 2, 4, 8, 8, 8])
        let join = try #require(sentFrames(channel.handle(.socketOpened)).first)
        _ = channel.handle(.received(PhoenixMessage.reply(to: join)))
        #expect(channel.failedAttempts == 0)
        let jittered = machine(random: 0)
        #expect(jittered.backoff(attempts: 3) == 4)
    }

    @Test("a refused join, phx_error, phx_close or a system error all lead to a rejoin; the rejoin gets a new join ref")
    func rejoins() throws {
        for event in ["refused", "phx_error", "phx_close", "system"] {
            var channel = machine()
            let first = try joined(&channel)
            let frame: PhoenixMessage
            switch event {
            case "refused": frame = PhoenixMessage(joinRef: first.joinRef, ref: nil, topic: topic, event: "phx_error", payload: [:])
            case "system": frame = PhoenixMessage(joinRef: first.joinRef, ref: nil, topic: topic, event: "system",
                                                  payload: ["status": "error", "message": "Token has expired"])
            default: frame = PhoenixMessage(joinRef: first.joinRef, ref: nil, topic: topic, event: event, payload: [:])
            }
            let outputs = channel.handle(.received(frame))
            #expect(outputs.contains { if case .disconnected = $0 { true } else { false } }, "\(event)")
            #expect(channel.handle(.reconnectDue) == [.openSocket])
            let second = try #require(sentFrames(channel.handle(.socketOpened)).first)
            #expect(second.joinRef != first.joinRef)
            // A late frame of the first join is ignored.
            #expect(channel.handle(.received(PhoenixMessage(joinRef: first.joinRef, ref: nil, topic: topic,
                                                            event: "postgres_changes", payload: [:]))).isEmpty)
        }
        var refused = machine()
        _ = refused.handle(.start)
        let join = try #require(sentFrames(refused.handle(.socketOpened)).first)
        let outputs = refused.handle(.received(PhoenixMessage.reply(to: join, status: "error", response: ["reason": "bad filter"])))
        #expect(outputs.contains(.closeSocket(reason: "join refused: bad filter")))
    }

    @Test("a join that gets no reply in time counts as a failed attempt")
    func joinTimeout() throws {
        var channel = machine()
        _ = channel.handle(.start)
        _ = channel.handle(.socketOpened)
        #expect(channel.handle(.tick(now: 5)).isEmpty)
        let outputs = channel.handle(.tick(now: 10))
        #expect(outputs.contains(.closeSocket(reason: "join timed out")))
        #expect(channel.phase == .disconnected)
    }

    @Test("events flow only while joined; a token refresh is pushed as access_token; stop leaves and closes")
    func eventsTokenStop() throws {
        var channel = machine()
        let join = try joined(&channel)
        let change = PhoenixMessage(joinRef: join.joinRef, ref: nil, topic: topic, event: "postgres_changes", payload: ["ids": [1]])
        #expect(channel.handle(.received(change)) == [.event(change)])
        let refresh = sentFrames(channel.handle(.tokenChanged("t2")))
        #expect(refresh.first?.event == "access_token")
        #expect(refresh.first?.payload["access_token"] == "t2")
        let push = channel.push(event: "broadcast", payload: ["type": "broadcast"])
        #expect(push?.joinRef == join.joinRef)
        let stop = channel.handle(.stop)
        #expect(sentFrames(stop).first?.event == "phx_leave")
        #expect(stop.last == .closeSocket(reason: "stopped"))
        #expect(channel.handle(.socketClosed(reason: "closed")).isEmpty)
        let late = channel.push(event: "broadcast", payload: [:])
        #expect(late == nil)
    }
}
