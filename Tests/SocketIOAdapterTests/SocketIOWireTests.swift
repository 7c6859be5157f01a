import Foundation
import SocketIOAdapter
import SwitchboardCore
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

    @Test("RFC 3339 timestamps parse with and without fractions and offsets; malformed ones do not")
    func timestamps() {
        #expect(SocketIOTimestamp.parse("1970-01-01T00:00:00Z")?.timeIntervalSince1970 == 0)
        #expect(SocketIOTimestamp.parse("2000-03-01T01:00:00.5+01:00")?.timeIntervalSince1970 == 951_868_800.5)
        #expect(SocketIOTimestamp.parse("2026-11-30T10:00:00") == nil)
        #expect(SocketIOTimestamp.parse("2026-13-30T10:00:00Z") == nil)
        #expect(SocketIOTimestamp.parse("not a date") == nil)
    }

    @Test("reaction sets become add/remove changes; a stale copy reports the message only")
    func reactionDiffs() throws {
        let mapper = SocketIOChangeMapper(localUser: "carol")
        let first = try #require(mapper.changes(for: Self.object))
        #expect(first.changes.count == 3)  // message, 👍 active, read receipt
        var replaced = Self.object
        if case .object(var members) = replaced {
            members = members.map { $0.key == "reactions" ? ($0.key, [["userId": "bob", "emoji": "❤️", "at": "2026-11-30T10:00:03Z"]])
                                                          : $0.key == "version" ? ($0.key, 60) : $0 }
            replaced = .object(members)
        }
        let second = try #require(mapper.changes(for: replaced))
        let reactions = second.changes.compactMap { change -> RemoteReaction? in
            if case .reaction(let reaction) = change { return reaction }
            return nil
        }
        #expect(reactions.map(\.symbol) == ["👍", "❤️"])
        #expect(reactions.map(\.isActive) == [false, true])
        let stale = try #require(mapper.changes(for: Self.object))
        #expect(stale.changes.count == 1)
    }

    /// `object` with `reactions` and `version` replaced.
    static func copy(reactions: JSONValue, version: Int64) -> JSONValue {
        guard case .object(let members) = object else { return object }
        return .object(members.map { member in
            switch member.key {
            case "reactions": (member.key, reactions)
            case "version": (member.key, .int(version))
            default: member
            }
        })
    }

    static func reactionChanges(_ mapped: (message: RemoteMessage, version: Int64, changes: [RemoteChange])?) -> [String] {
        (mapped?.changes ?? []).compactMap { change in
            if case .reaction(let reaction) = change { return "\(reaction.user):\(reaction.symbol):\(reaction.isActive)" }
            return nil
        }
    }

    @Test("the local user's own reaction echoes never undo a later tap; changes from elsewhere still arrive")
    func ownReactionEchoes() {
        let mapper = SocketIOChangeMapper(localUser: "alice")
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: [], version: 10))) == [])
        mapper.beginOwnWrite("c1", "42")
        let thumbs: JSONValue = [["userId": "alice", "emoji": "👍", "at": "2026-11-30T10:00:01Z"]]
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: thumbs, version: 11))) == [])
        mapper.endOwnWrite("c1", "42", answer: Self.copy(reactions: thumbs, version: 11))
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: thumbs, version: 11))) == [])
        let heart: JSONValue = [["userId": "alice", "emoji": "❤️", "at": "2026-11-30T10:00:02Z"]]
        #expect(Self.reactionChanges(mapper.changes(for: Self.copy(reactions: heart, version: 12)))
                == ["alice:👍:false", "alice:❤️:true"])
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
