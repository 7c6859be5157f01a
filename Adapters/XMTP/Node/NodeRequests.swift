import Foundation
import XMTPCodec

/// The parsed bodies of every endpoint; pure, so parsing and validation are tested without sockets.
enum NodeRequest {
    /// The group ID field `name` of `object`: base64 of exactly 16 bytes.
    static func groupID(_ object: NodeJSONObject, _ name: String = "group_id") throws(XMTPNodeError) -> XMTPNodeGroupID {
        guard let bytes = try object.bytes(name) else { throw .invalid("\(name) is required") }
        guard let id = XMTPNodeGroupID(bytes: bytes) else { throw .invalid("\(name) must be 16 bytes, got \(bytes.count)") }
        return id
    }

    /// Checks an inbox ID: 1…256 characters, no control characters or whitespace.
    static func inboxID(_ text: String, field: String) throws(XMTPNodeError) -> String {
        guard !text.isEmpty, text.count <= 256 else { throw .invalid("\(field) must be 1…256 characters") }
        guard !text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalid("\(field) must not contain whitespace or control characters")
        }
        return text
    }

    /// A list of inbox IDs (deduplicated, order kept).
    static func inboxIDs(_ object: NodeJSONObject, _ name: String, required: Bool) throws(XMTPNodeError) -> [String] {
        guard let list = try object.strings(name) else {
            if required { throw .invalid("\(name) is required") }
            return []
        }
        var seen = Set<String>(), out: [String] = []
        for text in list where seen.insert(try inboxID(text, field: name)).inserted { out.append(text) }
        return out
    }
}

/// `POST /mls/v1/send-group-messages`.
struct SendGroupMessagesRequest: Sendable, Hashable {
    /// The most messages one request may carry.
    static let maximumMessages = 1000

    /// The messages, in request order.
    var messages: [XMTPNodeMessageInput]

    /// Parses and validates: each `data` must decode as an `XMTPGroupEnvelope` and be at most `maxMessageSize` bytes.
    static func parse(_ body: Data, maxMessageSize: Int) throws(XMTPNodeError) -> SendGroupMessagesRequest {
        let object = try NodeJSONObject.body(body)
        guard let items = try object.objects("messages"), !items.isEmpty else { throw .invalid("messages must not be empty") }
        guard items.count <= maximumMessages else { throw .invalid("at most \(maximumMessages) messages per request") }
        var messages: [XMTPNodeMessageInput] = []
        for item in items {
            guard let v1 = try item.object("v1") else { throw .invalid("\(item.path).v1 is required") }
            guard let data = try v1.bytes("data"), !data.isEmpty else { throw .invalid("\(v1.path).data is required") }
            guard data.count <= maxMessageSize else {
                throw .invalid("\(v1.path).data is \(data.count) bytes; the limit is \(maxMessageSize) bytes")
            }
            let envelope: XMTPGroupEnvelope
            do {
                envelope = try XMTPGroupEnvelope.decode(data)
            } catch {
                throw .invalid("\(v1.path).data is not a group message envelope: \(error)")
            }
            guard let groupID = XMTPNodeGroupID(bytes: envelope.groupID) else { throw .invalid("\(v1.path).data has a bad group id") }
            messages.append(XMTPNodeMessageInput(groupID: groupID, data: data, senderHMAC: try v1.bytes("sender_hmac") ?? [],
                                                 shouldPush: try v1.bool("should_push") ?? false))
        }
        return SendGroupMessagesRequest(messages: messages)
    }
}

/// `POST /mls/v1/query-group-messages`.
struct QueryGroupMessagesRequest: Sendable, Hashable {
    /// The group.
    var groupID: XMTPNodeGroupID
    /// The page after the limit rules.
    var page: XMTPNodePage

    /// Parses `{"group_id":..,"paging_info":{"direction":..,"limit":..,"id_cursor":..}}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> QueryGroupMessagesRequest {
        let object = try NodeJSONObject.body(body)
        let groupID = try NodeRequest.groupID(object)
        let paging = try object.object("paging_info")
        let direction = try XMTPNodeDirection.parse(paging?.value("direction"))
        let limit = try paging?.uint64("limit") ?? 0
        let cursor = try paging?.uint64("id_cursor") ?? 0
        return QueryGroupMessagesRequest(groupID: groupID, page: XMTPNodePage(direction: direction, requestedLimit: limit, cursor: cursor))
    }
}

/// `POST /mls/v1/subscribe-group-messages`.
struct SubscribeGroupMessagesRequest: Sendable, Hashable {
    /// The most filters one subscription may hold.
    static let maximumFilters = 500

    /// Each group and the cursor after which to replay (a group listed twice keeps the smaller cursor).
    var cursors: [XMTPNodeGroupID: UInt64]

    /// Parses `{"filters":[{"group_id":..,"id_cursor":".."}]}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> SubscribeGroupMessagesRequest {
        let object = try NodeJSONObject.body(body)
        guard let filters = try object.objects("filters"), !filters.isEmpty else { throw .invalid("filters must not be empty") }
        guard filters.count <= maximumFilters else { throw .invalid("at most \(maximumFilters) filters per subscription") }
        var cursors: [XMTPNodeGroupID: UInt64] = [:]
        for filter in filters {
            let groupID = try NodeRequest.groupID(filter)
            let cursor = try filter.uint64("id_cursor") ?? 0
            cursors[groupID] = min(cursors[groupID] ?? cursor, cursor)
        }
        return SubscribeGroupMessagesRequest(cursors: cursors)
    }
}

/// `POST /identity/v1/register`.
struct RegisterRequest: Sendable, Hashable {
    /// The inbox to register.
    var inboxID: String

    /// Parses `{"inbox_id":".."}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> RegisterRequest {
        let object = try NodeJSONObject.body(body)
        guard let inboxID = try object.string("inbox_id") else { throw .invalid("inbox_id is required") }
        return RegisterRequest(inboxID: try NodeRequest.inboxID(inboxID, field: "inbox_id"))
    }
}

/// `POST /mls/v1/create-group`.
struct CreateGroupRequest: Sendable, Hashable {
    /// The new group.
    var groupID: XMTPNodeGroupID
    /// Members besides the creator.
    var members: [String]

    /// Parses `{"group_id":..,"members":[..]}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> CreateGroupRequest {
        let object = try NodeJSONObject.body(body)
        return CreateGroupRequest(groupID: try NodeRequest.groupID(object),
                                  members: try NodeRequest.inboxIDs(object, "members", required: false))
    }
}

/// `POST /mls/v1/add-members` and `/mls/v1/remove-members`.
struct GroupMembersRequest: Sendable, Hashable {
    /// The group.
    var groupID: XMTPNodeGroupID
    /// The inboxes to add or remove.
    var inboxIDs: [String]

    /// Parses `{"group_id":..,"inbox_ids":[..]}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> GroupMembersRequest {
        let object = try NodeJSONObject.body(body)
        let groupID = try NodeRequest.groupID(object)
        let ids = try NodeRequest.inboxIDs(object, "inbox_ids", required: true)
        guard !ids.isEmpty else { throw .invalid("inbox_ids must not be empty") }
        return GroupMembersRequest(groupID: groupID, inboxIDs: ids)
    }
}

/// `POST /mls/v1/get-group`.
struct GetGroupRequest: Sendable, Hashable {
    /// The group.
    var groupID: XMTPNodeGroupID

    /// Parses `{"group_id":..}`.
    static func parse(_ body: Data) throws(XMTPNodeError) -> GetGroupRequest {
        GetGroupRequest(groupID: try NodeRequest.groupID(try NodeJSONObject.body(body)))
    }
}

/// `POST /upload/v1/presign`.
struct PresignRequest: Sendable, Hashable {
    /// The lowercase hex SHA-256 of the (encrypted) bytes.
    var contentDigest: String
    /// The announced size in bytes.
    var contentLength: UInt64

    /// Parses `{"content_digest":hex,"content_length":".."}`; the length must be within `maxSize`.
    static func parse(_ body: Data, maxSize: Int) throws(XMTPNodeError) -> PresignRequest {
        let object = try NodeJSONObject.body(body)
        guard let digest = try object.string("content_digest") else { throw .invalid("content_digest is required") }
        guard NodeHex.isDigest(digest) else { throw .invalid("content_digest must be 64 hex characters (SHA-256)") }
        guard let length = try object.uint64("content_length") else { throw .invalid("content_length is required") }
        guard length <= UInt64(maxSize) else {
            throw .invalid("content_length \(length) exceeds the upload limit of \(maxSize) bytes")
        }
        return PresignRequest(contentDigest: digest.lowercased(), contentLength: length)
    }
}
