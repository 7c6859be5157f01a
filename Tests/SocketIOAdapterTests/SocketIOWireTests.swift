import Foundation
import SocketIOAdapter
import SwitchboardCore
import SwitchboardNet
import Testing
@testable import SocketIOAdapter

/// The adapter's translation of WIRE.md's JSON, without a server.
@Suite("Socket.IO adapter wire mapping")
struct SocketIOWireTests {
    static let object: JSONValue = [
        "id": "42", "conversationId": "c1", "clientMessageId": "key-1", "senderId": "alice", "text": "hi",
        "replyTo": "41", "attachments": [["url": "http://h/files/abc", "name": "a.png", "mimeType": "image/png", "size": 12,
                                          "sha256": .string(String(repeating: "ab", count: 32))]],
        "metadata": ["k": "v"], "createdAt": "2026-11-30T10:00:00.123Z", "editedAt": nil, "deletedAt": nil,
        "reactions": [["userId": "bob", "emoji": "👍", "at": "2026-11-30T10:00:01.000Z"]],
        "receipts": [["userId": "bob", "state": "read", "at": "2026-11-30T10:00:02.000Z"]], "version": 57,
    ]

    @Test("a message object maps to a RemoteMessage whose idempotency key is its clientMessageId")
    func messageMapping() throws {
        let message = try #require(SocketIOWire.message(Self.object))
        #expect(message.remoteID == "42")
        #expect(message.idempotencyKey == "key-1")
        #expect(message.replyTo == "41")
        #expect(message.metadata == ["k": "v"])
        #expect(message.attachments.map(\.filename) == ["a.png"])
        #expect(message.attachments.first?.remoteLocation == "http://h/files/abc")
        #expect(abs(message.sentAt.timeIntervalSince1970 - 1_796_032_800.123) < 0.0005)
        #expect(SocketIOWire.version(Self.object) == 57)
    }

    @Test("a refusal whose body ends in a newline (or spans lines) stays on the error's one line", arguments: [
        (404, "not found\n", "HTTP 404: not found"),
        (400, #"{"error":{"code":"invalid","message":"text\nmissing"}}"# + "\n", "HTTP 400 invalid: text missing"),
    ])
    func errorOnOneLine(status: Int, body: String, expected: String) {
        let error = SocketIOREST.error(for: HTTPResponse(status: status, body: Data(body.utf8)))
        #expect(error.message == expected)
        #expect(!error.description.contains("\n"))
    }

    @Test("a 401 is an authentication failure that no retry can fix: an unknown token stays unknown")
    func unauthorizedIsFinal() {
        let body = #"{"error":{"code":"unauthorized","message":"unknown bearer token"}}"#
        let error = SocketIOREST.error(for: HTTPResponse(status: 401, body: Data(body.utf8)))
        #expect(error.code == .unauthorized)
        #expect(!error.isRetryable)
    }

    @Test("RFC 3339 timestamps parse with and without fractions and offsets; malformed ones do not")
    func timestamps() {
        #expect(SocketIOTimestamp.parse("1970-01-01T00:00:00Z")?.timeIntervalSince1970 == 0)
        #expect(SocketIOTimestamp.parse("2000-03-01T01:00:00.5+01:00")?.timeIntervalSince1970 == 951_868_800.5)
        #expect(SocketIOTimestamp.parse("2026-11-30T10:00:00") == nil)
        #expect(SocketIOTimestamp.parse("2026-13-30T10:00:00Z") == nil)
        #expect(SocketIOTimestamp.parse("not a date") == nil)
    }

    @Test("standing reactions map to active changes, tombstones to removals, with no memory; a stale copy reports the message only")
    func reactionMapping() throws {
        let mapper = SocketIOChangeMapper(localUser: "carol")
        let first = try #require(mapper.changes(for: Self.object))
        #expect(first.changes.count == 3)  // message, 👍 active, read receipt
        let replaced = Self.copy(reactions: [["userId": "bob", "emoji": "❤️", "at": "2026-11-30T10:00:03Z"]],
                                 removed: [["userId": "bob", "emoji": "👍", "at": "2026-11-30T10:00:03Z"]], version: 60)
        #expect(Self.reactionChanges(mapper.changes(for: replaced)) == ["bob:👍:false", "bob:❤️:true"])
        let removal = try #require(Self.reactions(mapper.changes(for: replaced)).first)
        #expect(removal.at == SocketIOTimestamp.parse("2026-11-30T10:00:03Z"), "a removal carries the tombstone's time")
        // A fresh mapper (an app restart) reports the same: nothing is derived from memory.
        #expect(Self.reactionChanges(SocketIOChangeMapper(localUser: "carol").changes(for: replaced))
                == ["bob:👍:false", "bob:❤️:true"])
        let stale = try #require(mapper.changes(for: Self.object))
        #expect(stale.changes.count == 1)
        // A pair listed as standing and removed at once (not per WIRE.md) counts as standing.
        let both = Self.copy(reactions: [["userId": "bob", "emoji": "❤️", "at": "2026-11-30T10:00:04Z"]],
                             removed: [["userId": "bob", "emoji": "❤️", "at": "2026-11-30T10:00:03Z"]], version: 61)
        #expect(Self.reactionChanges(mapper.changes(for: both)) == ["bob:❤️:true"])
    }

    /// `object` with `reactions`, `removedReactions` and `version` replaced.
    static func copy(reactions: JSONValue, removed: JSONValue = [], version: Int64) -> JSONValue {
        guard case .object(let members) = object else { return object }
        return .object(members.map { member in
            switch member.key {
            case "reactions": (member.key, reactions)
            case "version": (member.key, .int(version))
            default: member
            }
        } + [(key: "removedReactions", value: removed)])
    }

    /// The reaction changes of a mapped copy.
    static func reactions(_ mapped: (message: RemoteMessage, version: Int64, changes: [RemoteChange])?) -> [RemoteReaction] {
        (mapped?.changes ?? []).compactMap { change in
            if case .reaction(let reaction) = change { return reaction }
            return nil
        }
    }

    /// The reaction changes of a mapped copy as `user:symbol:isActive`.
    static func reactionChanges(_ mapped: (message: RemoteMessage, version: Int64, changes: [RemoteChange])?) -> [String] {
        reactions(mapped).map { "\($0.user):\($0.symbol):\($0.isActive)" }
    }

    @Test("the local user's own reaction echoes never undo a later tap; changes from elsewhere still arrive")
    func ownReactionEchoes() {
        let mapper = SocketIOChangeMapper(localUser: "alice")
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: [], version: 10))) == [])
        mapper.beginOwnWrite("c1", "42")
        let thumbs: JSONValue = [["userId": "alice", "emoji": "👍", "at": "2026-11-30T10:00:01Z"]]
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: thumbs, version: 11))) == [],
                "nothing of alice's while her write is in flight")
        mapper.endOwnWrite("c1", "42", answer: Self.copy(reactions: thumbs, version: 11))
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: thumbs, version: 11))) == [],
                "the echo of her own write")
        // Bob reacts later; the copy still shows alice's 👍 from her answer, which a later tap of hers may have
        // replaced already in the engine: only bob's change is reported.
        let withBob: JSONValue = [["userId": "alice", "emoji": "👍", "at": "2026-11-30T10:00:01Z"],
                                  ["userId": "bob", "emoji": "😂", "at": "2026-11-30T10:00:05Z"]]
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: withBob, version: 13))) == ["bob:😂:true"])
        // Alice's other device replaces 👍 with ❤️: newer than her last answer, so it is reported.
        let elsewhere: JSONValue = [["userId": "bob", "emoji": "😂", "at": "2026-11-30T10:00:05Z"],
                                    ["userId": "alice", "emoji": "❤️", "at": "2026-11-30T10:00:06Z"]]
        let replaced = Self.copy(reactions: elsewhere, removed: [["userId": "alice", "emoji": "👍", "at": "2026-11-30T10:00:06Z"]],
                                 version: 14)
        #expect(Self.reactionChanges(mapper.changes(for: replaced)) == ["alice:👍:false", "bob:😂:true", "alice:❤️:true"])
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: thumbs, version: 11))) == [],
                "a late copy older than one seen")
        // After a restart (a fresh mapper) alice's own pairs are reported like anyone's.
        #expect(Self.reactionChanges(SocketIOChangeMapper(localUser: "alice").changes(for: replaced))
                == ["alice:👍:false", "bob:😂:true", "alice:❤️:true"])
    }

    @Test("prepare encodes the POST body with the MessageID as clientMessageId and no backend ID yet")
    func prepareBody() async throws {
        let adapter = SocketIOAdapter(configuration: .init(baseURL: URL(string: "http://127.0.0.1:9")!, token: "t",
                                                           localUser: "alice"))
        let message = OutgoingMessage(id: "m-1", conversation: "room.1", sender: "alice", text: "hello", replyTo: "7",
                                      metadata: ["a": "b"], createdAt: Date())
        let prepared = try await adapter.prepare(message, noSend: false)
        #expect(prepared.remoteID == nil)
        let body = try #require(JSONValue.parseOrNil(prepared.payload))
        #expect(body == ["clientMessageId": "m-1", "text": "hello", "replyTo": "7", "metadata": ["a": "b"]])
        #expect(adapter.capabilities.idScheme == .serverAssigned)
        #expect(adapter.reactionPolicy == .onePerUser)
        await #expect(throws: SwitchboardError.self) {
            try await adapter.prepare(OutgoingMessage(id: "m-2", conversation: "bad room", sender: "alice", text: "x",
                                                      createdAt: Date()), noSend: false)
        }
    }
}
