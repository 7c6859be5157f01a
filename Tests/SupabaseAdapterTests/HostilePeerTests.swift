import Foundation
import SupabaseAdapter
import SupabaseProtocol
import SwitchboardCore
import SwitchboardEngine
import SwitchboardNet
import SwitchboardStore
import Testing
import TestSupport

/// The Supabase adapter against a server that misbehaves on purpose (`HostileServer`): garbage, wrong JSON types,
/// huge and endless bodies, 429 with `Retry-After`, realtime frames that are garbage, duplicated or out of order.
/// Every operation ends in a clean, correctly classified error or recovers; no answer is buffered past the limit.
@Suite("Supabase adapter against a hostile server", .serialized)
struct SupabaseHostilePeerTests {
    static let conversation = ConversationID("6f1c1d2e-3a4b-4c5d-8e6f-000000000001")
    /// The answer limit the adapters here use (small, so an endless body is cut quickly).
    static let limit = 1 << 20

    static func adapter(_ url: URL, user: UserID = "alice") -> SupabaseAdapter {
        var configuration = SupabaseAdapter.Configuration(baseURL: url, apiKey: "k", accessToken: "t", localUser: user)
        configuration.backend = "hostile"
        configuration.maximumResponseBytes = limit
        return SupabaseAdapter(configuration: configuration)
    }

    static func outgoing(_ text: String, from user: UserID = "alice") -> OutgoingMessage {
        OutgoingMessage(id: .make(), conversation: conversation, sender: user, text: text, createdAt: Date())
    }

    /// A message row as PostgREST and realtime send it.
    static func row(_ id: String, _ text: String, version: Int64, second: Int, sender: String = "bob") -> JSONValue {
        ["id": .string(id), "conversation_id": .string(conversation.rawValue), "sender_id": .string(sender),
         "body": .string(text), "created_at": .string("2026-12-05T10:00:\(String(format: "%02d", second)).000000+00:00"),
         "version": .int(version), "metadata": [:], "attachments": []]
    }

    @Test("garbage and wrong JSON types give retryable transport errors or skip the rows, never a crash")
    func garbageAndWrongTypes() async throws {
        try await HostileServer.with { hostile, url in
            let adapter = Self.adapter(url)
            hostile.on(.get, "/rest/v1/messages", times: 1, .garbage())
            let garbage = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            }
            #expect(garbage?.code == .transport && garbage?.isRetryable == true, "\(String(describing: garbage))")
            #expect(garbage?.message.contains("invalid JSON") == true)

            for wrong in ["\"a string\"", "42", "true", "null"] {
                hostile.on(.get, "/rest/v1/messages", times: 1, .json(wrong))
                let error = await #expect(throws: SwitchboardError.self, "a top level of \(wrong)") {
                    _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
                }
                #expect(error?.code == .transport && error?.isRetryable == true)
            }

            // Rows whose columns have the wrong types are not messages: they are left out, and the cursor of a
            // delta sync does not move past a row without a readable version.
            hostile.on(.get, "/rest/v1/messages", times: 1,
                       .json(#"[{"id":5,"conversation_id":[],"sender_id":{},"body":7,"created_at":true,"version":"x"}]"#))
            hostile.on(.get, "/rest/v1/reactions", .json(#"[{"message_id":1,"version":"nope"}]"#))
            hostile.on(.get, "/rest/v1/receipts", .json("[]"))
            let page = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            #expect(page.messages.isEmpty && page.olderCursor == nil)
            hostile.on(.get, "/rest/v1/messages", .json(#"[{"id":"x","version":"9"},{"version":3.5}]"#))
            let batch = try await adapter.changes(in: Self.conversation, after: Cursor("v:0,0,0"), limit: 10)
            #expect(batch.changes.isEmpty)
            #expect(batch.cursor == Cursor("v:0,0,0"))

            // An answer of the right shape but the wrong type where the adapter needs a value.
            hostile.on(.post, "/storage/v1/object/upload/sign", .json(#"{"url":5}"#))
            let file = Data("hello".utf8)
            let attachment = SwitchboardCore.Attachment(filename: "a.txt", mimeType: "text/plain", byteCount: Int64(file.count),
                                        sha256: Digest.sha256Hex(file))
            let upload = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.upload(attachment, data: file, in: Self.conversation) { _ in }
            }
            #expect(upload?.code == .transport && upload?.isRetryable == true)
        }
    }

    @Test("an endless body is cut at the adapter's limit: a retryable error that says so, and the stream stops")
    func endlessBody() async throws {
        try await HostileServer.with { hostile, url in
            let adapter = Self.adapter(url)
            hostile.on(.get, "/rest/v1/messages", .endlessJSON())
            let started = ContinuousClock.now
            let error = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            }
            #expect(started.duration(to: .now) < .seconds(20), "cut well before the request timeout")
            #expect(error?.code == .transport && error?.isRetryable == true, "\(String(describing: error))")
            #expect(error?.message.contains("\(Self.limit)-byte limit") == true, "\(String(describing: error))")
            // The client closed the connection: the server's writer fails soon, having written little past the limit
            // (what the sockets' buffers held).
            #expect(await conditionHolds(within: .seconds(60)) { hostile.openStreams == 0 }, "the endless writer still runs")
            #expect(hostile.streamedBytes < 64 * Self.limit, "the server wrote \(hostile.streamedBytes) bytes")

            // A complete but oversized answer (with Content-Length) is cut the same way.
            hostile.on(.post, "/rest/v1/messages", .json("[\"" + String(repeating: "y", count: 2 * Self.limit) + "\"]"))
            let prepared = try await adapter.prepare(Self.outgoing("big answer"), noSend: false)
            let huge = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
            #expect(huge?.code == .transport && huge?.isRetryable == true)
            #expect(huge?.message.contains("limit") == true)

            // A download is cut at the largest attachment the adapter accepts.
            hostile.on(.get, "/storage/v1/object", .endless(status: 200, headers: [:], chunk: Data(repeating: 1, count: 256 * 1024)))
            let remote = SwitchboardCore.Attachment(filename: "x.bin", mimeType: "application/octet-stream", byteCount: 10,
                                    sha256: "", remoteLocation: "attachments/x.bin", upload: .uploaded)
            let download = await #expect(throws: SwitchboardError.self) { _ = try await adapter.download(remote) }
            #expect(download?.message.contains("\(adapter.capabilities.maxAttachmentBytes)-byte limit") == true,
                    "\(String(describing: download))")
        }
    }

    @Test("429 with Retry-After is a retryable transport error carrying the delay, in both forms")
    func rateLimitClassified() async throws {
        try await HostileServer.with { hostile, url in
            let adapter = Self.adapter(url)
            hostile.on(.post, "/rest/v1/messages", times: 1, .rateLimited(retryAfter: "7"))
            let prepared = try await adapter.prepare(Self.outgoing("limited"), noSend: false)
            let seconds = await #expect(throws: SwitchboardError.self) { _ = try await adapter.publish(prepared) }
            #expect(seconds?.code == .transport && seconds?.isRetryable == true)
            #expect(seconds?.retryAfter == .seconds(7))

            let date = Date().addingTimeInterval(30)
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
            hostile.on(.get, "/rest/v1/messages", times: 1, .rateLimited(retryAfter: formatter.string(from: date)))
            let dated = await #expect(throws: SwitchboardError.self) {
                _ = try await adapter.history(in: Self.conversation, before: nil, limit: 10)
            }
            #expect(dated?.isRetryable == true)
            #expect(dated.flatMap(\.retryAfter).map { $0 > .seconds(25) && $0 <= .seconds(31) } == true,
                    "\(String(describing: dated?.retryAfter))")

            // Storage and auth answers too.
            hostile.on(.get, "/storage/v1/object", times: 1, .rateLimited(retryAfter: "3"))
            let remote = SwitchboardCore.Attachment(filename: "x.bin", mimeType: "application/octet-stream", byteCount: 10,
                                    sha256: "", remoteLocation: "attachments/x.bin", upload: .uploaded)
            let download = await #expect(throws: SwitchboardError.self) { _ = try await adapter.download(remote) }
            #expect(download?.isRetryable == true && download?.retryAfter == .seconds(3))
            hostile.on(.post, "/storage/v1/bucket", times: 1, .rateLimited(retryAfter: "2"))
            let service = SupabaseServiceClient(baseURL: url, serviceToken: "s")
            let bucket = await #expect(throws: SwitchboardError.self) { try await service.ensureBucket("attachments") }
            #expect(bucket?.code == .transport && bucket?.isRetryable == true && bucket?.retryAfter == .seconds(2))
        }
    }

    @Test("the engine waits out a 429's Retry-After, then publishes once")
    func engineHonoursRetryAfter() async throws {
        try await HostileServer.with { hostile, url in
            let published = SharedValue<[String]>([])
            hostile.on(.post, "/rest/v1/messages", times: 1, .rateLimited(retryAfter: "1"))
            hostile.on(.post, "/rest/v1/messages", .handler { request in
                let rows = JSONValue.parseOrNil(request.body)
                let row = rows?.arrayValue?.first ?? rows
                let id = row?["id"]?.stringValue ?? ""
                published.withLock { $0.append(id) }
                let answer: JSONValue = [["id": .string(id), "created_at": "2026-12-05T10:00:00.000000+00:00"]]
                return .json(Data(answer.serialized.utf8), status: 201)
            })
            hostile.on(.get, "/rest/v1", .json("[]"))
            let root = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-supabase-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: root) }
            let store = try SQLiteStore(path: root.appendingPathComponent("alice.sqlite").path)
            let configuration = EngineConfiguration(retry: RetryPolicy(baseDelay: 0.01, maxDelay: 0.05, maxAttempts: 5, jitter: 0),
                                                    stagingDirectory: root.appendingPathComponent("staging"))
            let client = ChatClient(adapter: Self.adapter(url), store: store, configuration: configuration)
            try await client.start()
            _ = try await client.open(Self.conversation)
            let started = ContinuousClock.now
            let message = try await client.send("after the limit", in: Self.conversation)
            let sent = await conditionHolds(within: .seconds(20)) {
                (try? await client.message(message.id))?.delivery.isPublished == true
            }
            let waited = started.duration(to: .now)
            await client.stop()
            #expect(sent, "the message was never published")
            #expect(waited >= .seconds(1), "published after \(waited), before the server's Retry-After of 1 s")
            #expect(published.withLock { $0 } == [SupabaseRows.rowID(for: message.id)], "one publish after the 429")
            #expect(hostile.requestCount("/rest/v1/messages") >= 2)
        }
    }

    @Test("realtime garbage, duplicated and out-of-order events leave one row per message, in server order")
    func realtimeDuplicatesAndDisorder() async throws {
        try await HostileServer.with { hostile, url in
            hostile.on(.get, "/rest/v1", .json("[]"))
            let ids = (0..<4).map { _ in UUID().uuidString.lowercased() }
            let rows = (0..<4).map { Self.row(ids[$0], "m\($0 + 1)", version: Int64($0 + 1), second: $0 + 1) }
            hostile.webSocket("/realtime/v1/websocket") { connection in
                for await frame in connection.frames {
                    guard case .text(let text) = frame, let push = try? PhoenixTextCodec.decode(text, version: .v2),
                          push.event == "phx_join" else { continue }
                    try? await connection.send(text: PhoenixTextCodec.encode(PhoenixMessage.reply(to: push), version: .v2))
                    func change(_ row: JSONValue) -> String {
                        let payload: JSONValue = ["ids": [1], "data": ["table": "messages", "type": "INSERT", "schema": "public",
                                                                       "record": row, "commit_timestamp": "2026-12-05T10:00:00Z"]]
                        return PhoenixTextCodec.encode(PhoenixMessage(joinRef: nil, ref: nil, topic: push.topic,
                                                                      event: "postgres_changes", payload: payload), version: .v2)
                    }
                    // Wrong types inside a well-formed frame, an unknown table, then the rows: late, twice, early;
                    // the last one, m4, marks the end (events of one stream are handled in order).
                    let wrongTypes: JSONValue = ["id": 5, "conversation_id": [], "created_at": true]
                    for text in [change(wrongTypes), change(["table": "nope"]), change(rows[2]), change(rows[0]),
                                 change(rows[2]), change(rows[1]), change(rows[0]), change(rows[3])] {
                        try? await connection.send(text: text)
                    }
                }
            }
            let (arrived, texts) = try await timelineTexts(of: Self.adapter(url), in: Self.conversation, until: "m4")
            #expect(arrived)
            #expect(texts == ["m1", "m2", "m3", "m4"], "timeline: \(texts)")
        }
    }
}
