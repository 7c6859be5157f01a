import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
@testable import SocketIOServer

/// The REST endpoints of WIRE.md, end to end over real HTTP.
@Suite("Socket-style server REST")
struct RESTTests {
    @Test("register issues tokens; 409 for a taken user unless its token is presented; 401 without or with a bad token")
    func identityAndAuth() async throws {
        try await SocketIOHarness.with { harness in
            let token = try await harness.register("alice")
            #expect(token.count == 43, "32 bytes base64url without padding")
            #expect(!token.contains("+") && !token.contains("/") && !token.contains("="))
            let taken = try await harness.call(.post, "/auth/register", json: ["userId": "alice"])
            #expect(taken.status == 409)
            #expect(taken.body.errorCode == "conflict")
            let further = try await harness.call(.post, "/auth/register", json: ["userId": "alice"], token: token)
            #expect(further.status == 201)
            let second = try #require(further.body["token"] as? String)
            #expect(second != token)
            let bad = try await harness.call(.post, "/auth/register", json: ["userId": "bad id!"])
            #expect(bad.status == 400)
            #expect(bad.body.errorCode == "bad_request")
            #expect(try await harness.call(.post, "/auth/register", json: ["userId": String(repeating: "a", count: 129)]).status == 400)

            let missing = try await harness.call(.post, "/conversations", json: ["id": "c1", "members": []])
            #expect(missing.status == 401)
            #expect(missing.body.errorCode == "unauthorized")
            #expect(missing.body["error", "message"] is String)
            let wrong = try await harness.call(.post, "/conversations", json: ["id": "c1", "members": []], token: "nope")
            #expect(wrong.status == 401)
            #expect(try await harness.call(.get, "/conversations/c1/messages", token: "x" + token).status == 401)
            // Both tokens work.
            try await harness.createConversation("c1", members: [], token: second)
            #expect(try await harness.call(.get, "/conversations/c1", token: token).status == 200)
            // Only the hash is stored: neither the database nor its write-ahead log (where recent commits live) holds
            // a token, though they do hold the rows written alongside it.
            var stored = Data()
            for name in ["socketio.sqlite", "socketio.sqlite-wal"] {
                stored.append((try? Data(contentsOf: harness.directory.appendingPathComponent(name))) ?? Data())
            }
            #expect(stored.range(of: Data("alice".utf8)) != nil)
            for issued in [token, second] { #expect(stored.range(of: Data(issued.utf8)) == nil) }
        }
    }

    @Test("conversations: the caller is a member, 409 for a taken id, 404 for non-members, members can be added")
    func conversations() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            let carol = try await harness.register("carol")
            let created = try await harness.call(.post, "/conversations", json: ["id": "c1", "members": ["bob"]], token: alice)
            #expect(created.status == 201)
            #expect(created.body["members"] as? [String] == ["alice", "bob"])
            #expect((created.body["createdAt"] as? String)?.hasSuffix("Z") == true)
            #expect(try await harness.call(.post, "/conversations", json: ["id": "c1", "members": []], token: bob).status == 409)
            #expect(try await harness.call(.post, "/conversations", json: ["id": "c2", "members": ["ghost"]],
                                           token: bob).status == 400)
            let hidden = try await harness.call(.get, "/conversations/c1", token: carol)
            #expect(hidden.status == 404)
            #expect(hidden.body.errorCode == "not_found")
            #expect(try await harness.call(.get, "/conversations/c1/messages", token: carol).status == 404)
            #expect(try await harness.call(.post, "/conversations/c1/messages", json: ["clientMessageId": "x", "text": "hi"],
                                           token: carol).status == 404)
            #expect(try await harness.call(.post, "/conversations/c1/members", json: ["userIds": ["carol"]],
                                           token: carol).status == 404)
            let added = try await harness.call(.post, "/conversations/c1/members", json: ["userIds": ["carol"]], token: bob)
            #expect(added.status == 200)
            #expect(added.body["members"] as? [String] == ["alice", "bob", "carol"])
            #expect(try await harness.call(.get, "/conversations/c1", token: carol).status == 200)
            #expect(try await harness.call(.get, "/conversations/c1/nowhere", token: carol).body.errorCode == "not_found")
        }
    }

    @Test("messages/count: every message of the conversation, deleted ones included; members only")
    func messageCount() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), carol = try await harness.register("carol")
            try await harness.createConversation("c1", members: [], token: alice)
            try await harness.createConversation("c2", members: [], token: alice)
            #expect(try await harness.call(.get, "/conversations/c1/messages/count", token: alice).body["count"] as? Int == 0)
            var ids: [String] = []
            for index in 0..<4 {
                let sent = try await harness.call(.post, "/conversations/c1/messages",
                                                  json: ["clientMessageId": "k-\(index)", "text": "m\(index)"], token: alice)
                ids.append(try #require(sent.message["id"] as? String))
            }
            _ = try await harness.call(.post, "/conversations/c2/messages", json: ["clientMessageId": "k", "text": "x"], token: alice)
            #expect(try await harness.call(.delete, "/conversations/c1/messages/\(ids[1])", token: alice).status == 200)
            let counted = try await harness.call(.get, "/conversations/c1/messages/count", token: alice)
            #expect(counted.status == 200)
            #expect(counted.body["count"] as? Int == 4)
            #expect(try await harness.call(.get, "/conversations/c2/messages/count", token: alice).body["count"] as? Int == 1)
            #expect(try await harness.call(.get, "/conversations/c1/messages/count", token: carol).status == 404)
            #expect(try await harness.call(.get, "/conversations/c1/messages/count").status == 401)
        }
    }

    @Test("a repeated clientMessageId returns 200 with the same message, never a second row")
    func idempotentSend() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            let body: [String: Any] = ["clientMessageId": "k-1", "text": "hi", "metadata": ["k": "v"],
                                       "attachments": [["url": "http://x/a.png", "name": "a.png", "mimeType": "image/png",
                                                        "size": 12, "sha256": String(repeating: "ab", count: 32)]]]
            let first = try await harness.call(.post, "/conversations/c1/messages", json: body, token: alice)
            #expect(first.status == 201)
            let id = try #require(first.message["id"] as? String)
            #expect(first.message["clientMessageId"] as? String == "k-1")
            #expect(first.message["senderId"] as? String == "alice")
            #expect((first.message["version"] as? NSNumber)?.stringValue == id)
            #expect(first.message["metadata"] as? [String: String] == ["k": "v"])
            #expect((first.message["attachments"] as? [[String: Any]])?.first?["name"] as? String == "a.png")
            #expect(first.message["deletedAt"] is NSNull)
            let repeated = try await harness.call(.post, "/conversations/c1/messages", json: body, token: alice)
            #expect(repeated.status == 200)
            #expect(repeated.message["id"] as? String == id)
            // The stored message is found before the body is validated: a retry whose body now fails still gets it.
            for retry: [String: Any] in [["clientMessageId": "k-1"], ["clientMessageId": "k-1", "text": "x", "replyTo": "999999"]] {
                let stale = try await harness.call(.post, "/conversations/c1/messages", json: retry, token: alice)
                #expect(stale.status == 200, "\(retry.keys.sorted())")
                #expect(stale.message["id"] as? String == id)
            }
            // The same key from another sender is another message.
            let other = try await harness.call(.post, "/conversations/c1/messages", json: body, token: bob)
            #expect(other.status == 201)
            #expect(other.message["id"] as? String != id)
            // Concurrent repeats of a new key: one 201, the rest 200, all the same message.
            let replies = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        let reply = try await harness.call(.post, "/conversations/c1/messages", json: ["clientMessageId": "k-race", "text": "race"],
                                                       token: alice)
                        return (reply.status, reply.message["id"] as? String)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(replies.filter { $0.0 == 201 }.count == 1)
            #expect(replies.filter { $0.0 == 200 }.count == 5)
            #expect(Set(replies.map(\.1)).count == 1)
            let history = try await harness.history("c1", token: alice)
            #expect(history.ids.count == 3)
            // Validation.
            for bad: [String: Any] in [["text": "no key"], ["clientMessageId": "", "text": "x"],
                                       ["clientMessageId": "k-2"],
                                       ["clientMessageId": "k-3", "text": String(repeating: "x", count: 65_537)],
                                       ["clientMessageId": "k-4", "text": "x", "attachments": Array(repeating: ["url": "u"], count: 11)],
                                       ["clientMessageId": "k-5", "text": "x", "replyTo": "999999"],
                                       ["clientMessageId": "k-6", "text": "x", "metadata": "str"],
                                       // 43 characters but 129 UTF-8 bytes: the limit counts bytes.
                                       ["clientMessageId": String(repeating: "€", count: 43), "text": "x"]] {
                let reply = try await harness.call(.post, "/conversations/c1/messages", json: bad, token: alice)
                #expect(reply.status == 400, "\(bad.keys.sorted())")
                #expect(reply.body.errorCode == "bad_request")
            }
            let reply = try await harness.call(.post, "/conversations/c1/messages",
                                               json: ["clientMessageId": "k-7", "text": "re", "replyTo": id], token: bob)
            #expect(reply.status == 201)
            #expect(reply.message["replyTo"] as? String == id)
            let longKey = try await harness.call(.post, "/conversations/c1/messages",
                                                 json: ["clientMessageId": String(repeating: "é", count: 64), "text": "x"], token: bob)
            #expect(longKey.status == 201, "64 two-byte characters are 128 bytes")
            let malformed = try await harness.call(.post, "/conversations/c1/messages", raw: Data("{".utf8), token: alice)
            #expect(malformed.status == 400)
            let huge = try await harness.call(.post, "/conversations/c1/messages",
                                              raw: Data(repeating: 0x20, count: (1 << 20) + 1), token: alice)
            #expect(huge.status == 413)
            #expect(huge.body.errorCode == "too_large")
        }
    }

    @Test("history pages: newest page, messageId for older pages, afterMessageId by version including changes")
    func paging() async throws {
        try await SocketIOHarness.with(configure: { $0.pageSize = 3 }) { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            try await harness.createConversation("other", members: [], token: alice)
            var ids: [String] = []
            for index in 1...7 {
                ids.append(try #require(try await harness.send("c1", "m\(index)", token: alice)["id"] as? String))
                try await harness.send("other", "noise\(index)", token: alice)
            }
            #expect(ids.map { Int($0)! } == ids.map { Int($0)! }.sorted(), "ids grow with creation order")
            let newest = try await harness.history("c1", query: "?limit=100", token: bob)
            #expect(newest.texts == ["m5", "m6", "m7"], "oldest first; limit is ignored")
            #expect(newest.hasMore)
            let older = try await harness.history("c1", query: "?messageId=\(ids[4])", token: bob)
            #expect(older.texts == ["m2", "m3", "m4"])
            #expect(older.hasMore)
            let oldest = try await harness.history("c1", query: "?messageId=\(ids[1])", token: bob)
            #expect(oldest.texts == ["m1"])
            #expect(!oldest.hasMore)

            let after = try await harness.history("c1", query: "?afterMessageId=\(ids[3])", token: bob)
            #expect(after.texts == ["m5", "m6", "m7"])
            #expect(!after.hasMore)
            let all = try await harness.history("c1", query: "?afterMessageId=0", token: bob)
            #expect(all.texts == ["m1", "m2", "m3"])
            #expect(all.hasMore)

            // Changes to older messages appear after the position, ordered by their new version.
            let mark = try #require(after.versions.max())
            let edited = try await harness.call(.patch, "/conversations/c1/messages/\(ids[0])", json: ["text": "m1 edited"], token: alice)
            #expect(edited.status == 200)
            #expect(edited.message["editedAt"] is String)
            #expect(try await harness.call(.put, "/conversations/c1/messages/\(ids[2])/reaction", json: ["emoji": "👍"],
                                           token: bob).status == 200)
            #expect(try await harness.call(.delete, "/conversations/c1/messages/\(ids[1])", token: alice).status == 200)
            #expect(try await harness.call(.put, "/conversations/c1/messages/\(ids[3])/receipt", json: ["state": "read"],
                                           token: bob).status == 200)
            let changes = try await harness.history("c1", query: "?afterMessageId=\(mark)", token: bob)
            #expect(changes.ids == [ids[0], ids[2], ids[1]], "by version, a page of three")
            #expect(changes.versions == changes.versions.sorted())
            #expect(changes.versions.allSatisfy { $0 > mark })
            #expect(changes.hasMore)
            #expect(changes.texts == ["m1 edited", "m3", ""])
            #expect(changes.messages[2]["deletedAt"] is String)
            let rest = try await harness.history("c1", query: "?afterMessageId=\(changes.versions.last!)", token: bob)
            #expect(rest.ids == [ids[3]])
            #expect(!rest.hasMore)
            #expect((rest.messages[0]["receipts"] as? [[String: Any]])?.first?["state"] as? String == "read")

            #expect(try await harness.call(.get, "/conversations/c1/messages?messageId=abc", token: bob).status == 400)
            #expect(try await harness.call(.get, "/conversations/c1/messages?messageId=1&afterMessageId=1", token: bob).status == 400)
        }
    }

    @Test("edit and delete: sender only, within the configured windows; deleted messages cannot be edited")
    func windowsAndSenders() async throws {
        // Deadlines are taken from the server's own createdAt, so slow requests on a loaded machine cannot skew them.
        try await SocketIOHarness.with(configure: { $0.editWindow = .seconds(5); $0.deleteWindow = .seconds(10) }) { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            let firstMessage = try await harness.send("c1", "one", token: alice)
            let first = try #require(firstMessage["id"] as? String)
            let firstCreated = try serverTime(firstMessage["createdAt"])
            let second = try #require(try await harness.send("c1", "two", token: alice)["id"] as? String)

            let notSender = try await harness.call(.patch, "/conversations/c1/messages/\(first)", json: ["text": "mine"], token: bob)
            #expect(notSender.status == 403)
            #expect(notSender.body.errorCode == "not_sender")
            #expect(try await harness.call(.delete, "/conversations/c1/messages/\(first)", token: bob).body.errorCode == "not_sender")
            let edited = try await harness.call(.patch, "/conversations/c1/messages/\(first)", json: ["text": "one!"], token: alice)
            #expect(edited.status == 200)
            #expect(edited.message["text"] as? String == "one!")
            let emptied = try await harness.call(.patch, "/conversations/c1/messages/\(first)", json: ["text": ""], token: alice)
            #expect(emptied.status == 400, "a message without attachments cannot be edited to no text")
            #expect(emptied.body.errorCode == "bad_request")

            let deleted = try await harness.call(.delete, "/conversations/c1/messages/\(second)", token: alice)
            #expect(deleted.status == 200)
            #expect(deleted.message["text"] as? String == "")
            #expect((deleted.message["attachments"] as? [Any])?.isEmpty == true)
            let again = try await harness.call(.delete, "/conversations/c1/messages/\(second)", token: alice)
            #expect(again.status == 200)
            #expect((again.message["version"] as? NSNumber) == (deleted.message["version"] as? NSNumber), "no second change")
            let editDeleted = try await harness.call(.patch, "/conversations/c1/messages/\(second)", json: ["text": "x"], token: alice)
            #expect(editDeleted.status == 409)
            #expect(editDeleted.body.errorCode == "conflict")
            #expect(try await harness.call(.patch, "/conversations/c1/messages/999999", json: ["text": "x"], token: alice).status == 404)

            try await sleep(until: firstCreated.addingTimeInterval(5.2))
            let late = try await harness.call(.patch, "/conversations/c1/messages/\(first)", json: ["text": "late"], token: alice)
            #expect(late.status == 403)
            #expect(late.body.errorCode == "edit_window_closed")
            let thirdMessage = try await harness.send("c1", "three", token: alice)
            let third = try #require(thirdMessage["id"] as? String)
            try await sleep(until: try serverTime(thirdMessage["createdAt"]).addingTimeInterval(5.2))
            #expect(try await harness.call(.patch, "/conversations/c1/messages/\(third)", json: ["text": "x"],
                                           token: alice).body.errorCode == "edit_window_closed")
            #expect(try await harness.call(.delete, "/conversations/c1/messages/\(third)", token: alice).status == 200,
                    "the delete window is longer than the edit window")
            try await sleep(until: firstCreated.addingTimeInterval(10.2))
            let lateDelete = try await harness.call(.delete, "/conversations/c1/messages/\(first)", token: alice)
            #expect(lateDelete.status == 403)
            #expect(lateDelete.body.errorCode == "delete_window_closed")
            #expect(try await harness.call(.delete, "/conversations/c1/messages/\(second)", token: alice).status == 200,
                    "deleting a deleted message again still answers it")
        }
    }

    /// A `createdAt` value as a date.
    private func serverTime(_ value: Any?) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require((value as? String).flatMap { formatter.date(from: $0) }, "createdAt \(String(describing: value))")
    }

    /// Sleeps until `date` on the wall clock (the server's clock).
    private func sleep(until date: Date) async throws {
        let delay = date.timeIntervalSinceNow
        if delay > 0 { try await Task.sleep(for: .milliseconds(Int64(delay * 1000) + 1)) }
    }

    /// The path names the room; a message of another room, even one the caller belongs to, is not found there.
    @Test("edit, delete, reaction and receipt on a message of another room named in the path: 404, nothing changes")
    func crossRoomPathRefused() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            try await harness.createConversation("c2", members: ["bob"], token: alice)
            let message = try await harness.send("c2", "in c2", token: alice)
            let id = try #require(message["id"] as? String)
            let version = try #require(message["version"] as? NSNumber)
            let wrong = "/conversations/c1/messages/\(id)"
            let attempts: [(String, HTTPMethod, String, Any?, String)] = [
                ("edit", .patch, wrong, ["text": "moved"], alice),
                ("delete", .delete, wrong, nil, alice),
                ("reaction", .put, wrong + "/reaction", ["emoji": "👍"], bob),
                ("reaction removal", .delete, wrong + "/reaction", nil, bob),
                ("receipt", .put, wrong + "/receipt", ["state": "read"], bob),
            ]
            for (what, method, path, json, token) in attempts {
                let reply = try await harness.call(method, path, json: json, token: token)
                #expect(reply.status == 404, "\(what): \(reply.status) \(reply.body.object)")
            }
            let stored = try await harness.history("c2", token: bob).messages
            #expect(stored.count == 1)
            #expect(stored.first?["text"] as? String == "in c2")
            #expect(stored.first?["version"] as? NSNumber == version, "no change at all")
            #expect(stored.first?["editedAt"] == nil || stored.first?["editedAt"] is NSNull)
            #expect(stored.first?["deletedAt"] == nil || stored.first?["deletedAt"] is NSNull)
            #expect((stored.first?["reactions"] as? [Any])?.isEmpty ?? true)
            #expect((stored.first?["receipts"] as? [Any])?.isEmpty ?? true)
            #expect(try await harness.history("c1", token: bob).messages.isEmpty)
        }
    }

    @Test("one reaction per user, replaced on re-tap; receipts never step back")
    func reactionsAndReceipts() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            let id = try #require(try await harness.send("c1", "hi", token: alice)["id"] as? String)
            let path = "/conversations/c1/messages/\(id)"

            let thumbs = try await harness.call(.put, path + "/reaction", json: ["emoji": "👍"], token: bob)
            #expect(thumbs.status == 200)
            let v1 = try #require(thumbs.message["version"] as? NSNumber)
            let same = try await harness.call(.put, path + "/reaction", json: ["emoji": "👍"], token: bob)
            #expect(same.message["version"] as? NSNumber == v1, "the same emoji again is a no-op")
            let heart = try await harness.call(.put, path + "/reaction", json: ["emoji": "❤️"], token: bob)
            let reactions = try #require(heart.message["reactions"] as? [[String: Any]])
            #expect(reactions.count == 1)
            #expect(reactions.first?["emoji"] as? String == "❤️")
            #expect(reactions.first?["userId"] as? String == "bob")
            #expect((heart.message["version"] as? NSNumber)!.intValue > v1.intValue)
            _ = try await harness.call(.put, path + "/reaction", json: ["emoji": "😂"], token: alice)
            #expect((try await harness.history("c1", token: bob).messages[0]["reactions"] as? [Any])?.count == 2)
            let removed = try await harness.call(.delete, path + "/reaction", token: bob)
            #expect((removed.message["reactions"] as? [[String: Any]])?.map { $0["userId"] as? String } == ["alice"])
            let none = try await harness.call(.delete, path + "/reaction", token: bob)
            #expect(none.status == 200)
            #expect(none.message["version"] as? NSNumber == removed.message["version"] as? NSNumber)
            #expect(try await harness.call(.put, path + "/reaction", json: ["emoji": ""], token: bob).status == 400)

            let delivered = try await harness.call(.put, path + "/receipt", json: ["state": "delivered"], token: bob)
            #expect((delivered.message["receipts"] as? [[String: Any]])?.first?["state"] as? String == "delivered")
            let read = try await harness.call(.put, path + "/receipt", json: ["state": "read"], token: bob)
            let readVersion = try #require(read.message["version"] as? NSNumber)
            #expect((read.message["receipts"] as? [[String: Any]])?.first?["state"] as? String == "read")
            let back = try await harness.call(.put, path + "/receipt", json: ["state": "delivered"], token: bob)
            #expect(back.status == 200)
            #expect((back.message["receipts"] as? [[String: Any]])?.first?["state"] as? String == "read")
            #expect(back.message["version"] as? NSNumber == readVersion, "no step back, no version bump")
            #expect(try await harness.call(.put, path + "/receipt", json: ["state": "seen"], token: bob).status == 400)
        }
    }

    /// `userId:emoji` of every entry of a message's `removedReactions` (or `reactions`), in order.
    private func pairs(_ message: [String: Any], _ key: String = "removedReactions") -> [String] {
        (message[key] as? [[String: Any]] ?? []).map { "\($0["userId"] as? String ?? "?"):\($0["emoji"] as? String ?? "?")" }
    }

    @Test("replaced and removed reactions stay as tombstones with rising versions; re-adding revives; delta sync carries them")
    func reactionTombstones() async throws {
        try await SocketIOHarness.with { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("c1", members: ["bob"], token: alice)
            let id = try #require(try await harness.send("c1", "hi", token: alice)["id"] as? String)
            let path = "/conversations/c1/messages/\(id)/reaction"
            /// The `version` of a reply's message.
            func version(_ reply: Reply) -> Int { (reply.message["version"] as? NSNumber)?.intValue ?? -1 }

            let thumbs = try await harness.call(.put, path, json: ["emoji": "👍"], token: bob)
            #expect(pairs(thumbs.message) == [])
            let cursor = version(thumbs)
            let heart = try await harness.call(.put, path, json: ["emoji": "❤️"], token: bob)
            #expect(pairs(heart.message, "reactions") == ["bob:❤️"])
            #expect(pairs(heart.message) == ["bob:👍"], "a replaced emoji becomes a tombstone")
            let removedAt = try #require((heart.message["removedReactions"] as? [[String: Any]])?.first?["at"] as? String)
            #expect(removedAt.hasSuffix("Z") && removedAt.count == 24, "an RFC 3339 time with milliseconds: \(removedAt)")
            #expect(version(heart) > cursor)

            try await Task.sleep(for: .milliseconds(5))
            let removed = try await harness.call(.delete, path, token: bob)
            #expect(pairs(removed.message, "reactions") == [])
            #expect(pairs(removed.message) == ["bob:👍", "bob:❤️"], "a removed emoji becomes a tombstone")
            #expect(version(removed) > version(heart))
            let again = try await harness.call(.delete, path, token: bob)
            #expect(version(again) == version(removed), "removing nothing is a no-op")

            // The delta sync after the first reaction carries the latest state, tombstones included.
            let changed = try await harness.history("c1", query: "?afterMessageId=\(cursor)", token: alice)
            #expect(changed.ids == [id])
            #expect(changed.versions == [version(removed)])
            #expect(pairs(changed.messages[0]) == ["bob:👍", "bob:❤️"])

            let revived = try await harness.call(.put, path, json: ["emoji": "👍"], token: bob)
            #expect(pairs(revived.message, "reactions") == ["bob:👍"])
            #expect(pairs(revived.message) == ["bob:❤️"], "a re-added emoji leaves the tombstones")
            #expect(version(revived) > version(removed))
            let swapped = try await harness.call(.put, path, json: ["emoji": "❤️"], token: bob)
            #expect(pairs(swapped.message, "reactions") == ["bob:❤️"])
            #expect(pairs(swapped.message) == ["bob:👍"], "at most one tombstone per pair")
            #expect(version(swapped) > version(revived))
            let aliceThumbs = try await harness.call(.put, path, json: ["emoji": "👍"], token: alice)
            #expect(pairs(aliceThumbs.message, "reactions").sorted() == ["alice:👍", "bob:❤️"])
            #expect(pairs(aliceThumbs.message) == ["bob:👍"], "tombstones are per user")
            let final = try await harness.history("c1", query: "?afterMessageId=\(version(swapped))", token: alice)
            #expect(final.versions == [version(aliceThumbs)])
        }
    }

    @Test("uploads: digest checked, size limited, files served by random id only, traversal refused")
    func uploads() async throws {
        try await SocketIOHarness.with(configure: { $0.maxUploadSize = 1000 }) { harness in
            let alice = try await harness.register("alice")
            let bytes = Data("hello upload".utf8)
            let digest = Digest.sha256Hex(bytes)
            let mismatch = try await harness.call(.post, "/uploads", raw: bytes, token: alice,
                                                  headers: ["Content-Type": "text/plain", "X-Content-SHA256": String(repeating: "0", count: 64)])
            #expect(mismatch.status == 400)
            #expect(mismatch.body.errorCode == "digest_mismatch")
            #expect(try await harness.call(.post, "/uploads", raw: bytes, token: alice,
                                           headers: ["X-Content-SHA256": "nothex"]).status == 400)
            #expect(try await harness.call(.post, "/uploads", raw: bytes).status == 401)
            let large = try await harness.call(.post, "/uploads", raw: Data(count: 1001), token: alice)
            #expect(large.status == 413)
            #expect(large.body.errorCode == "too_large")

            let stored = try await harness.call(.post, "/uploads", raw: bytes, token: alice,
                                                headers: ["Content-Type": "text/plain", "X-Content-SHA256": digest.uppercased()])
            #expect(stored.status == 201)
            #expect(stored.body["sha256"] as? String == digest)
            #expect((stored.body["size"] as? NSNumber)?.intValue == bytes.count)
            let url = try #require(stored.body["url"] as? String)
            #expect(url.hasPrefix(harness.base.absoluteString + "/files/"))
            let id = String(url.dropFirst((harness.base.absoluteString + "/files/").count))
            #expect(id.count == 32)
            let fetched = try await harness.call(.get, "/files/\(id)", token: alice)
            #expect(fetched.status == 200)
            #expect(fetched.data == bytes)
            #expect(fetched.headers["Content-Type"] == "text/plain")
            #expect(fetched.headers["X-Content-Type-Options"] == "nosniff")
            #expect(fetched.headers["Content-Disposition"] == "attachment")
            #expect(try await harness.call(.get, "/files/\(id)").status == 401)
            let unknown = try await harness.call(.get, "/files/\(String(repeating: "0", count: 32))", token: alice)
            #expect(unknown.status == 404)
            #expect(unknown.body.errorCode == "not_found")
            for path in ["/files/socketio.sqlite", "/files/..%2Fsocketio.sqlite", "/files/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
                         "/files/../socketio.sqlite", "/files/uploads%2F\(id)", "/files/\(id.uppercased())", "/files/.upload-\(id)",
                         "/files/\(id)/x"] {
                let reply = try await harness.call(.get, path, token: alice)
                #expect(reply.status == 404, "\(path)")
                #expect(reply.data.range(of: Data("SQLite format".utf8)) == nil, "\(path)")
            }
        }
    }

    @Test("plain HTTP on /socket.io/ answers engine.io's 400 shapes: only WebSocket upgrades are served")
    func engineIORefusals() async throws {
        try await SocketIOHarness.with { harness in
            let polling = try await harness.call(.get, "/socket.io/?EIO=4&transport=polling")
            #expect(polling.status == 400)
            #expect(polling.body["code"] as? Int == 0)
            #expect(polling.body["message"] as? String == "Transport unknown")
            let none = try await harness.call(.post, "/socket.io/")
            #expect(none.status == 400)
            #expect(none.body["message"] as? String == "Transport unknown")
            let version = try await harness.call(.get, "/socket.io/?EIO=3&transport=websocket")
            #expect(version.status == 400)
            #expect(version.body["code"] as? Int == 5)
        }
    }

    @Test("the service answers without sockets, and a stopped server's store refuses politely")
    func serviceWithoutSockets() async throws {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try SocketIOStore(path: directory.appendingPathComponent("s.sqlite").path)
        let service = SocketIOService(configuration: SocketIOServerConfiguration(dataDirectory: directory), store: store,
                                      runner: BlockingRunner(label: "switchboard.socketio-server.store"))
        let response = await service.handle(HTTPServerRequest(method: .post, path: "/auth/register",
                                                              body: Data(#"{"userId":"a.b@c:d-e_f"}"#.utf8)))
        #expect(response.status == 201)
        store.close()
        let failed = await service.handle(HTTPServerRequest(method: .post, path: "/auth/register", body: Data(#"{"userId":"z"}"#.utf8)))
        #expect(failed.status == 500)
        guard case .data(let data) = failed.body else { Issue.record("expected a data body"); return }
        #expect(JSONBody(data).errorCode == "internal")
    }
}

/// The live hub: per-user fan-out with bounded buffers.
@Suite("Socket-style server live hub")
struct HubTests {
    @Test("events reach every listener of their recipients only; a listener that falls behind is ended, not starved")
    func fanOut() async {
        let hub = SocketIOEventHub(bufferLimit: 2)
        let alice = hub.add(userID: "alice"), alicePhone = hub.add(userID: "alice"), bob = hub.add(userID: "bob")
        #expect(hub.listenerCount == 3)
        hub.publish(SocketIOLiveEvent(name: "message", payload: ["n": 1]), to: ["alice"])
        hub.publish(SocketIOLiveEvent(name: "message", payload: ["n": 2]), to: ["alice", "bob"])
        var iterator = alicePhone.stream.makeAsyncIterator()
        #expect(await iterator.next()?.payload == ["n": 1])
        #expect(await iterator.next()?.payload == ["n": 2])
        hub.publish(SocketIOLiveEvent(name: "message", payload: ["n": 3]), to: ["alice"])
        #expect(alice.overflowed, "a third unread event overflows a buffer of two")
        #expect(!alicePhone.overflowed)
        #expect(!bob.overflowed)
        var drained: [JSONValue] = []
        for await event in alice.stream { drained.append(event.payload) }
        #expect(drained == [["n": 1], ["n": 2]], "the overflowed stream ends after what it holds")
        hub.remove(alice)
        hub.remove(alicePhone)
        #expect(hub.listenerCount == 1)
        hub.finishAll()
        #expect(hub.listenerCount == 0)
        var rest: [JSONValue] = []
        for await event in bob.stream { rest.append(event.payload) }
        #expect(rest == [["n": 2]])
    }
}

/// Pure helpers: timestamps and validation.
@Suite("Socket-style server helpers")
struct HelperTests {
    @Test("timestamps are RFC 3339 UTC with milliseconds")
    func timestamps() {
        #expect(SocketIOTime.format(ms: 0) == "1970-01-01T00:00:00.000Z")
        #expect(SocketIOTime.format(ms: 1_796_032_800_123) == "2026-11-30T10:00:00.123Z")
        #expect(SocketIOTime.format(ms: 951_782_400_000) == "2000-02-29T00:00:00.000Z")
        #expect(SocketIOTime.format(ms: -1) == "1969-12-31T23:59:59.999Z")
        let now = SocketIOTime.nowMs()
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = formatter.date(from: SocketIOTime.format(ms: now))
        #expect(parsed.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) } == now)
    }

    @Test("IDs are 1–128 characters of [A-Za-z0-9._@:-]")
    func ids() {
        #expect(SocketIOValidation.isValidID("alice"))
        #expect(SocketIOValidation.isValidID("a.b_c@d:e-f9"))
        #expect(!SocketIOValidation.isValidID(""))
        #expect(!SocketIOValidation.isValidID("a/b"))
        #expect(SocketIOValidation.isValidID(".."), "dots are allowed; IDs never reach the file system")
        #expect(!SocketIOValidation.isValidID("é"))
        #expect(!SocketIOValidation.isValidID(String(repeating: "x", count: 129)))
        #expect(SocketIOService.isFileID(String(repeating: "a", count: 32)))
        #expect(!SocketIOService.isFileID(String(repeating: "A", count: 32)))
        #expect(!SocketIOService.isFileID("../" + String(repeating: "a", count: 29)))
    }
}
