import Foundation
import SocketIOAdapter
import SocketIOProtocol
import SwitchboardCore
import SwitchboardEngine
import SwitchboardNet
import SwitchboardStore
import Testing
import TestSupport

/// The Socket adapter against a server that misbehaves on purpose (`HostileServer`): garbage, wrong JSON types,
/// huge and endless bodies, 429 with `Retry-After`, a Socket.IO connection that sends garbage frames and repeats
/// and reorders its events.
@Suite("Socket adapter against a hostile server", .serialized)
struct SocketIOHostilePeerTests {
    static let conversation = ConversationID("room-hostile")
    /// The answer limit the adapters here use (small, so an endless body is cut quickly).
    static let limit = 1 << 20

    static func adapter(_ url: URL, user: UserID = "alice") -> SocketIOAdapter {
        var configuration = SocketIOAdapter.Configuration(baseURL: url, token: "t", localUser: user)
        configuration.backend = "hostile"
        configuration.maximumResponseBytes = limit
        configuration.reconnectInitialDelay = .milliseconds(50)
        configuration.reconnectMaximumDelay = .milliseconds(200)
        return SocketIOAdapter(configuration: configuration)
    }

    /// A message object as WIRE.md sends it.
    static func message(_ id: Int, _ text: String, version: Int64, from sender: String = "bob") -> JSONValue {
        ["id": .string(String(id)), "conversationId": .string(conversation.rawValue), "senderId": .string(sender),
         "clientMessageId": .string("key-\(id)"), "text": .string(text),
         "createdAt": .string("2026-12-05T10:00:\(String(format: "%02d", id)).000Z"), "version": .int(version)]
    }

    @Test("garbage, wrong types, endless bodies and 429s end in clean, classified errors")
    func requestsUnderAHostileServer() async throws {
        try await HostileServer.with { hostile, url in
            let adapter = Self.adapter(url)
            let messages = "/conversations/\(Self.conversation.rawValue)/messages"

            hostile.on(.get, messages, times: 1, .garbage())
            let garbage = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            }
            #expect(garbage?.code == .transport && garbage?.isRetryable == true, "\(String(describing: garbage))")

            for wrong in [#"{"messages":"none"}"#, "[]", #""text""#] {
                hostile.on(.get, messages, times: 1, .json(wrong))
                let error = await #expect(throws: SwitchboardError.self, "\(wrong)") {
                    _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
                }
                #expect(error?.code == .transport && error?.isRetryable == true)
            }
            // Message objects with the wrong types are left out.
            hostile.on(.get, messages, times: 1,
                       .json(#"{"messages":[{"id":5,"conversationId":[],"senderId":{},"createdAt":true},7,null],"hasMore":"yes"}"#))
            let page = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            #expect(page.messages.isEmpty)
            hostile.on(.get, "\(messages)/count", times: 1, .json(#"{"count":"many"}"#))
            let count = await #expect(throws: SwitchboardError.self) { _ = try await adapter.messageCount(in: Self.conversation) }
            #expect(count?.code == .transport)

            hostile.on(.get, messages, times: 1, .endlessJSON())
            let endless = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            }
            #expect(endless?.code == .transport && endless?.isRetryable == true, "\(String(describing: endless))")
            #expect(endless?.message.contains("\(Self.limit)-byte limit") == true)
            #expect(await conditionHolds(within: .seconds(60)) { hostile.openStreams == 0 }, "the endless writer still runs")

            hostile.on(.post, messages, times: 1, .rateLimited(retryAfter: "5"))
            let prepared = try await adapter.prepare(
                OutgoingMessage(id: .make(), conversation: Self.conversation, sender: "alice", text: "limited", createdAt: Date()),
                noSend: false)
            let limited = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
            #expect(limited?.code == .transport && limited?.isRetryable == true && limited?.retryAfter == .seconds(5),
                    "\(String(describing: limited))")
            // A 200 whose body is not the message sent.
            hostile.on(.post, messages, times: 1, .json(#"{"id":1}"#))
            let odd = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
            #expect(odd?.code == .transport && odd?.isRetryable == true)

            hostile.on(.get, "/files", .endless(status: 200, headers: [:], chunk: Data(repeating: 9, count: 256 * 1024)))
            let remote = SwitchboardCore.Attachment(filename: "x.bin", mimeType: "application/octet-stream", byteCount: 10,
                                                    sha256: "", remoteLocation: url.appendingPathComponent("files/x").absoluteString,
                                                    upload: .uploaded)
            let download = await #expect(throws: SwitchboardError.self) { _ = try await adapter.download(remote) }
            #expect(download?.code == .transport && download?.isRetryable == true, "\(String(describing: download))")
            #expect(download?.message.contains("\(adapter.capabilities.maxAttachmentBytes)-byte limit") == true)
        }
    }

    @Test("a Socket.IO peer that sends garbage, then repeats and reorders events, leaves one row per message in order")
    func hostileSocket() async throws {
        try await HostileServer.with { hostile, url in
            hostile.on(.get, "/conversations", .json(#"{"messages":[],"hasMore":false}"#))
            let connections = SharedValue(0)
            hostile.webSocket(SocketIOProtocol.defaultPath) { connection in
                let attempt = connections.withLock { $0 += 1; return $0 }
                let open = "0" + EngineIOHandshake(sid: "s\(attempt)").json.serialized
                try? await connection.send(text: open)
                if attempt == 1 {
                    // Garbage first: unknown packet types, broken JSON, binary junk. The client drops the link.
                    for junk in ["9nonsense", "42[\"message\",{", "4{}", "\u{0}\u{1}"] { try? await connection.send(text: junk) }
                    try? await connection.send(binary: Data([0xFF, 0x00, 0x13]))
                }
                for await frame in connection.frames {
                    guard case .text(let text) = frame, text.hasPrefix("40") else { continue }
                    try? await connection.send(text: "4" + SocketIOPacket.connected(sid: "c\(attempt)").encoded)
                    let rows = (1...4).map { Self.message($0, "m\($0)", version: Int64($0)) }
                    let wrongTypes: JSONValue = ["id": 5, "conversationId": .string(Self.conversation.rawValue), "createdAt": 7]
                    // Wrong types, then the messages late, twice and early; m4 last marks the end.
                    for argument in [wrongTypes, rows[2], rows[0], rows[2], rows[1], rows[0], rows[3]] {
                        try? await connection.send(text: "4" + SocketIOPacket.event("message", [argument]).encoded)
                    }
                }
            }
            let (arrived, texts) = try await timelineTexts(of: Self.adapter(url), in: Self.conversation, until: "m4")
            #expect(arrived, "connections: \(connections.withLock { $0 })")
            #expect(texts == ["m1", "m2", "m3", "m4"], "timeline: \(texts)")
        }
    }
}
