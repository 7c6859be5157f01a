import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
import XMTPAdapter
import XMTPCrypto

/// The XMTP adapter against a node that misbehaves on purpose (`HostileServer`): garbage, wrong JSON types, huge
/// and endless bodies and lines, 429 with `Retry-After`, a subscription that repeats and reorders envelopes.
@Suite("XMTP adapter against a hostile node", .serialized)
struct XMTPHostilePeerTests {
    /// The answer limit the adapters here use (small, so an endless body is cut quickly).
    static let limit = 1 << 20

    /// An adapter for `user` at `url` on a fresh database in `directory`, with `secret` for every group.
    static func adapter(_ url: URL, user: UserID = "alice", token: String = "t", in directory: URL,
                        secret: [UInt8]) throws -> XMTPAdapter {
        var configuration = XMTPAdapter.Configuration(baseURL: url, inboxID: user, token: token,
                                                      databasePath: directory.appendingPathComponent("\(user)-\(UUID().uuidString).sqlite").path,
                                                      groupSecret: { _ in secret })
        configuration.maximumResponseBytes = limit
        return try XMTPAdapter(configuration: configuration)
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-hostile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("garbage, wrong types, endless bodies and 429s end in clean, classified errors")
    func requestsUnderAHostileNode() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try await HostileServer.with { hostile, url in
            let adapter = try Self.adapter(url, in: directory, secret: try SecureRandom.bytes(32))
            let conversation = ConversationID(Digest.hex(try SecureRandom.bytes(16)))
            let query = "/mls/v1/query-group-messages"

            hostile.on(.post, query, times: 1, .garbage())
            let garbage = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: conversation, before: nil, limit: 10)
            }
            #expect(garbage?.code == .transport && garbage?.isRetryable == true, "\(String(describing: garbage))")

            // Wrong types: not an array of envelopes, envelopes without readable fields; nothing is stored.
            for wrong in [#"{"messages":"many"}"#, #"{"messages":[{"v1":{"id":5,"created_ns":[],"data":7}},3,null]}"#, "[]"] {
                hostile.on(.post, query, times: 1, .json(wrong))
                let page = try await adapter.history(in: conversation, before: nil, limit: 10)
                #expect(page.messages.isEmpty, "\(wrong)")
            }

            hostile.on(.post, query, times: 1, .endlessJSON())
            let endless = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: conversation, before: nil, limit: 10)
            }
            #expect(endless?.code == .transport && endless?.isRetryable == true, "\(String(describing: endless))")
            #expect(endless?.message.contains("\(Self.limit)-byte limit") == true)
            #expect(await conditionHolds(within: .seconds(60)) { hostile.openStreams == 0 }, "the endless writer still runs")

            hostile.on(.post, "/mls/v1/send-group-messages", times: 1, .rateLimited(retryAfter: "4"))
            let prepared = try await adapter.prepare(
                OutgoingMessage(id: .make(), conversation: conversation, sender: "alice", text: "limited", createdAt: Date()),
                noSend: false)
            let limited = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
            #expect(limited?.code == .transport && limited?.isRetryable == true && limited?.retryAfter == .seconds(4),
                    "\(String(describing: limited))")
            hostile.on(.post, query, times: 1, .rateLimited(retryAfter: "2"))
            let queried = await #expect(throws: SwitchboardError.self) { _ = try await adapter.latestCursor(in: conversation) }
            #expect(queried?.isRetryable == true && queried?.retryAfter == .seconds(2))

            // A download URL comes from a remote message: its answer is cut at the largest attachment payload.
            hostile.on(.get, "/files", .endless(status: 200, headers: [:], chunk: Data(repeating: 3, count: 256 * 1024)))
            let remote = SwitchboardCore.Attachment(filename: "x.bin", mimeType: "application/octet-stream", byteCount: 10,
                                                    sha256: "", remoteLocation: url.appendingPathComponent("files/x").absoluteString,
                                                    upload: .uploaded)
            let download = await #expect(throws: SwitchboardError.self) { _ = try await adapter.download(remote) }
            #expect(download?.code == .transport && download?.isRetryable == true, "\(String(describing: download))")
            #expect(download?.message.contains("byte limit") == true)
        }
    }

    @Test("a subscription that repeats, reorders, garbles and never ends its lines yields each message once, and recovers")
    func hostileSubscription() async throws {
        // Real envelopes, from a real node: alice sends three messages there.
        let node = try await TestNode.start()
        let group = try await TestGroup.make(on: node)
        let texts = ["one", "two", "three", "four"]
        do {
            let alice = try group.adapter(group.alice)
            for text in texts {
                _ = try await alice.publish(try await alice.prepare(group.outgoing(text, from: group.alice), noSend: false))
            }
        }
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Authorization", "Bearer \(group.tokens[group.bob]!)")
        let body: JSONValue = ["group_id": .string(Data(group.groupID).base64EncodedString()),
                               "paging_info": ["direction": "DIRECTION_ASCENDING", "limit": 100, "id_cursor": "0"]]
        let answer = try await HTTPClient().send(HTTPRequest(method: .post,
                                                             url: node.baseURL.appendingPathComponent("mls/v1/query-group-messages"),
                                                             headers: headers, body: Data(body.serialized.utf8)))
        let envelopes = JSONValue.parseOrNil(answer.body)?["messages"]?.arrayValue ?? []
        await node.stop()
        defer { group.cleanUp() }
        try #require(envelopes.count == texts.count)
        func line(_ envelope: JSONValue) -> String { JSONValue.object([(key: "result", value: envelope)]).serialized }

        try await HostileServer.with { hostile, url in
            hostile.on(.post, "/mls/v1/query-group-messages", .json(#"{"messages":[]}"#))
            // First subscription: a line that never ends (cut at the limit, then the stream resubscribes).
            hostile.on(.post, "/mls/v1/subscribe-group-messages", times: 1,
                       .endless(status: 200, headers: [:], chunk: Data(repeating: UInt8(ascii: "x"), count: 64 * 1024)))
            // Second: a 429 asking for a short wait.
            hostile.on(.post, "/mls/v1/subscribe-group-messages", times: 1, .rateLimited(retryAfter: "1"))
            // Then garbage lines, wrong types, and the envelopes late, twice and early, the fourth last (it marks the
            // end: lines are handled in order); then the stream stays open.
            let lines = ["not json", #"{"result":{"v1":{"id":"x"}}}"#, #"{"result":7}"#, line(envelopes[2]), line(envelopes[0]),
                         line(envelopes[2]), line(envelopes[1]), line(envelopes[0]), line(envelopes[3])]
            let script = Data((lines.joined(separator: "\n") + "\n").utf8)
            hostile.on(.post, "/mls/v1/subscribe-group-messages",
                       .holding(status: 200, headers: [:], body: script, heartbeat: Data("\n".utf8), interval: .milliseconds(200)))

            let bob = try Self.adapter(url, user: group.bob, token: group.tokens[group.bob]!, in: group.directory,
                                       secret: group.secret)
            let events = SharedValue<[AdapterEvent]>([])
            let task = Task { for await event in bob.liveEvents(in: group.conversation) { events.withLock { $0.append(event) } } }
            defer { task.cancel() }
            func messages() -> [String] {
                events.withLock { $0.compactMap { if case .change(.message(let m)) = $0 { m.text } else { nil } } }
            }
            let arrived = await conditionHolds(within: .seconds(30)) { messages().contains("four") }
            #expect(arrived, "messages so far: \(messages())")
            // "four" came last: every repeated envelope before it was read by then, and none was yielded twice.
            #expect(messages().sorted() == texts.sorted(), "yielded: \(messages())")
            let reasons = events.withLock { $0.compactMap { if case .connection(.disconnected(let reason)) = $0 { reason } else { nil } } }
            #expect(reasons.contains { $0.contains("\(Self.limit)-byte limit") }, "disconnects: \(reasons)")
            #expect(hostile.requestCount("/mls/v1/subscribe-group-messages") >= 3)
        }
    }
}
