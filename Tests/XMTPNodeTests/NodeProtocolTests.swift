import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
@testable import XMTPNode

/// Socket-free tests of request parsing, paging rules, the replay/live merge and error shapes.
@Suite("XMTP node protocol")
struct NodeProtocolTests {
    @Test("The JSON parser keeps 64-bit numbers, decodes escapes and rejects malformed input")
    func jsonParser() throws {
        let value = try NodeJSONObject.parse(Data(#"{"a":18446744073709551615,"b":"x\u00e9\ud83d\ude00\n","c":[true,null,-1.5e3]}"#.utf8))
        let object = try NodeJSONObject(value, path: "")
        #expect(try object.uint64("a") == UInt64.max)
        #expect(try object.string("b") == "xé😀\n")
        #expect(try object.array("c") == [.bool(true), .null, .number("-1.5e3")])
        for bad in ["{", "{\"a\":}", "[1,]", "{\"a\":1} x", "\"\\ud800\"", "{\"a\":01x}", String(repeating: "[", count: 100)] {
            #expect(throws: XMTPNodeError.self, "\(bad)") { try NodeJSONObject.parse(Data(bad.utf8)) }
        }
        let written = Data(JSONValue.object([("k", .string("q\"\\\u{01}"))]).serialized.utf8)
        #expect(String(decoding: written, as: UTF8.self) == #"{"k":"q\"\\\u0001"}"#)
    }

    @Test("Fields are found by snake_case or lowerCamelCase; uint64 accepts strings and numbers")
    func fieldNames() throws {
        let group = randomGroupID()
        let camel = try QueryGroupMessagesRequest.parse(Data("""
            {"groupId":"\(group.base64)","pagingInfo":{"direction":"DIRECTION_DESCENDING","limit":5,"idCursor":"42"}}
            """.utf8))
        #expect(camel.groupID == group)
        #expect(camel.page == XMTPNodePage(direction: .descending, requestedLimit: 5, cursor: 42))
        let snake = try QueryGroupMessagesRequest.parse(Data(#"{"group_id":"\#(group.base64)","paging_info":{"id_cursor":7}}"#.utf8))
        #expect(snake.page == XMTPNodePage(direction: .ascending, requestedLimit: 100, cursor: 7))
        // URL-safe base64 without padding is accepted too.
        let urlSafe = group.base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(try GetGroupRequest.parse(Data(#"{"group_id":"\#(urlSafe)"}"#.utf8)).groupID == group)
    }

    @Test("Malformed requests are INVALID_ARGUMENT with a message naming the field")
    func malformedRequests() throws {
        let group = randomGroupID()
        let cases: [(String, String)] = [
            ("not json", "malformed JSON"),
            (#"[]"#, "must be a JSON object"),
            (#"{"group_id":"!!!"}"#, "group_id is not valid base64"),
            (#"{"group_id":"AAAA"}"#, "group_id must be 16 bytes"),
            (#"{"group_id":"\#(group.base64)","paging_info":{"direction":"SIDEWAYS"}}"#, "direction"),
            (#"{"group_id":"\#(group.base64)","paging_info":{"id_cursor":"-1"}}"#, "id_cursor"),
        ]
        for (body, expected) in cases {
            do {
                _ = try QueryGroupMessagesRequest.parse(Data(body.utf8))
                Issue.record("\(body) parsed")
            } catch {
                #expect(error.code == .invalidArgument)
                #expect(error.message.contains(expected), "\(body): \(error.message)")
            }
        }
        #expect(throws: XMTPNodeError.self) { try SubscribeGroupMessagesRequest.parse(Data(#"{"filters":[]}"#.utf8)) }
        #expect(throws: XMTPNodeError.self) { try RegisterRequest.parse(Data(#"{"inbox_id":"a b"}"#.utf8)) }
        #expect(throws: XMTPNodeError.self) { try PresignRequest.parse(Data(#"{"content_digest":"zz","content_length":"1"}"#.utf8), maxSize: 10) }
        let digest = String(repeating: "AB", count: 32)
        #expect(throws: XMTPNodeError.self) {
            try PresignRequest.parse(Data(#"{"content_digest":"\#(digest)","content_length":"11"}"#.utf8), maxSize: 10)
        }
        #expect(try PresignRequest.parse(Data(#"{"content_digest":"\#(digest)","content_length":10}"#.utf8), maxSize: 10).contentDigest
            == digest.lowercased())
    }

    @Test("send-group-messages reads the group from the envelope and enforces the size limit")
    func sendParsing() throws {
        let group = randomGroupID()
        let data = envelope(group, Array("hi".utf8))
        let body = #"{"messages":[{"v1":{"data":"\#(Base64.encode(data))","sender_hmac":"AQI=","should_push":true}}]}"#
        let parsed = try SendGroupMessagesRequest.parse(Data(body.utf8), maxMessageSize: 1 << 20)
        #expect(parsed.messages == [XMTPNodeMessageInput(groupID: group, data: data, senderHMAC: [1, 2], shouldPush: true)])
        #expect(throws: XMTPNodeError.self) { try SendGroupMessagesRequest.parse(Data(body.utf8), maxMessageSize: data.count - 1) }
        let garbage = #"{"messages":[{"v1":{"data":"\#(Base64.encode([0xFF, 0xFF, 0xFF]))"}}]}"#
        do {
            _ = try SendGroupMessagesRequest.parse(Data(garbage.utf8), maxMessageSize: 1 << 20)
            Issue.record("garbage envelope parsed")
        } catch {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("not a group message envelope"))
        }
    }

    @Test("Subscribe filters naming one group twice keep the smaller cursor")
    func subscribeFilters() throws {
        let group = randomGroupID(), other = randomGroupID()
        let parsed = try SubscribeGroupMessagesRequest.parse(Data("""
            {"filters":[{"group_id":"\(group.base64)","id_cursor":"9"},{"group_id":"\(group.base64)","id_cursor":"4"},
            {"group_id":"\(other.base64)"}]}
            """.utf8))
        #expect(parsed.cursors == [group: 4, other: 0])
    }

    @Test("Paging: limit 0 → 100, capped at 100; ascending ids > cursor; descending ids < cursor, 0 = newest")
    func paging() {
        #expect(XMTPNodePage(direction: .ascending, requestedLimit: 0, cursor: 0).limit == 100)
        #expect(XMTPNodePage(direction: .ascending, requestedLimit: 5000, cursor: 0).limit == 100)
        #expect(XMTPNodePage(direction: .ascending, requestedLimit: 3, cursor: 0).limit == 3)
        let ids: [UInt64] = [5, 1, 9, 3, 7]
        #expect(XMTPNodePage(direction: .ascending, requestedLimit: 2, cursor: 3).select(from: ids) == [5, 7])
        #expect(XMTPNodePage(direction: .descending, requestedLimit: 2, cursor: 0).select(from: ids) == [9, 7])
        #expect(XMTPNodePage(direction: .descending, requestedLimit: 10, cursor: 5).select(from: ids) == [3, 1])
        let page = XMTPNodePage(direction: .ascending, requestedLimit: 10, cursor: 9)
        #expect(page.nextCursor(after: []) == 9, "an empty page echoes the cursor")
    }

    @Test("The merge drops replayed duplicates and older ids per group, and keeps everything new")
    func merge() {
        let a = randomGroupID(), b = randomGroupID()
        func message(_ id: UInt64, _ group: XMTPNodeGroupID) -> XMTPNodeStoredMessage {
            XMTPNodeStoredMessage(id: id, createdNs: id, groupID: group, data: [], senderHMAC: [], shouldPush: false)
        }
        var merge = SubscriptionMerge(cursors: [a: 10, b: 0])
        #expect(merge.admit([message(5, a), message(11, a), message(3, b), message(12, b)]).map(\.id) == [11, 3, 12])
        // Live copies of replayed messages are dropped; new ones pass.
        let liveCopyA = merge.admit(message(11, a)), liveCopyB = merge.admit(message(12, b))
        let fresh = merge.admit(message(13, a)), unfollowed = merge.admit(message(14, randomGroupID()))
        #expect(!liveCopyA && !liveCopyB)
        #expect(fresh)
        #expect(!unfollowed, "groups not followed are ignored")
        #expect(merge.highWater == [a: 13, b: 12])
    }

    @Test("Errors use the grpc-gateway shape and status")
    func errorShape() throws {
        let pairs: [(XMTPNodeError.Code, Int)] = [(.invalidArgument, 400), (.unauthenticated, 401), (.permissionDenied, 403),
                                                  (.notFound, 404), (.alreadyExists, 409)]
        for (code, status) in pairs {
            let response = NodeService.errorResponse(XMTPNodeError(code, "nope"))
            #expect(response.status == status)
            guard case .data(let data) = response.body else { Issue.record("not a data body"); continue }
            let body = JSONBody(data)
            #expect(body["code"] as? Int == code.rawValue)
            #expect(body["message"] as? String == "nope")
            #expect((body["details"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("A stored message encodes to the gateway's GroupMessage JSON (fixture)")
    func messageJSONFixture() throws {
        let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/query-group-messages-response.json")
        let expected = try String(contentsOf: fixture, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let group = XMTPNodeGroupID(bytes: Array(0..<16))!
        let message = XMTPNodeStoredMessage(id: 42, createdNs: 1_700_000_000_123_456_789, groupID: group, data: [1, 2, 3],
                                            senderHMAC: [4, 5], shouldPush: true)
        let page = XMTPNodePage(direction: .ascending, requestedLimit: 100, cursor: 41)
        let json = Data(JSONValue.object([("messages", .array([message.json])), ("paging_info", page.json(after: [message]))]).serialized.utf8)
        #expect(String(decoding: json, as: UTF8.self) == expected)
    }

    @Test("The byte writer of a stored message gives exactly its JSON value's text, and a stream line wraps it")
    func messageByteWriter() throws {
        let group = XMTPNodeGroupID(bytes: Array(0..<16))!
        let messages = [
            XMTPNodeStoredMessage(id: 42, createdNs: 1_700_000_000_123_456_789, groupID: group, data: [1, 2, 3],
                                  senderHMAC: [4, 5], shouldPush: true),
            XMTPNodeStoredMessage(id: .max, createdNs: 0, groupID: group, data: [], senderHMAC: [], shouldPush: false),
            XMTPNodeStoredMessage(id: 7, createdNs: 9, groupID: group, data: Array(0...255), senderHMAC: Array(repeating: 0xFF, count: 32),
                                  shouldPush: false),
        ]
        var groupBase64: [UInt8] = []
        Base64.append(group.bytes, to: &groupBase64)
        #expect(String(decoding: groupBase64, as: UTF8.self) == group.base64)
        for message in messages {
            var written: [UInt8] = []
            message.appendJSON(to: &written)
            #expect(String(decoding: written, as: UTF8.self) == message.json.serialized)
            var withGroup: [UInt8] = [0x20]
            message.appendJSON(to: &withGroup, groupBase64: groupBase64)
            #expect(withGroup == [0x20] + written)
            let line = String(decoding: message.streamLine, as: UTF8.self)
            #expect(line == JSONValue.object([("result", message.json)]).serialized + "\n")
        }
    }
}
