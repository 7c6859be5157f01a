import SwitchboardCore
/// The order of a query (`xmtp.mls.api.v1.SortDirection`).
public enum XMTPNodeDirection: String, Sendable, Hashable {
    /// Oldest first: ids greater than the cursor.
    case ascending = "DIRECTION_ASCENDING"
    /// Newest first: ids less than the cursor (cursor 0: from the newest).
    case descending = "DIRECTION_DESCENDING"

    /// Parses a direction name or enum number; unspecified (absent, `DIRECTION_UNSPECIFIED`, 0) reads as ascending.
    static func parse(_ value: JSONValue?) throws(XMTPNodeError) -> XMTPNodeDirection {
        switch value {
        case nil, .string("DIRECTION_UNSPECIFIED"), .number("0"), .string("DIRECTION_ASCENDING"), .number("1"):
            return .ascending
        case .string("DIRECTION_DESCENDING"), .number("2"):
            return .descending
        default:
            throw .invalid("paging_info.direction must be DIRECTION_ASCENDING or DIRECTION_DESCENDING")
        }
    }
}

/// A query page request after the node's rules were applied: limit 1…100 (0 or absent: 100).
public struct XMTPNodePage: Sendable, Hashable {
    /// The most messages a page holds.
    public static let maximumLimit = 100

    /// The order.
    public var direction: XMTPNodeDirection
    /// How many messages at most (already clamped).
    public var limit: Int
    /// Ascending: return ids > cursor; descending: ids < cursor, 0 meaning no upper bound.
    public var cursor: UInt64

    /// Applies the limit rules to a requested page.
    public init(direction: XMTPNodeDirection, requestedLimit: UInt64, cursor: UInt64) {
        self.direction = direction
        self.limit = requestedLimit == 0 ? Self.maximumLimit : Int(min(requestedLimit, UInt64(Self.maximumLimit)))
        self.cursor = cursor
    }

    /// Whether message `id` lies on this page's side of the cursor.
    public func admits(_ id: UInt64) -> Bool {
        switch direction {
        case .ascending: id > cursor
        case .descending: cursor == 0 || id < cursor
        }
    }

    /// Selects this page from `ids` (any order): the `limit` ids nearest the cursor, in the page's order.
    /// The reference the SQL stores are tested against.
    public func select(from ids: [UInt64]) -> [UInt64] {
        let admitted = ids.filter(admits)
        switch direction {
        case .ascending: return Array(admitted.sorted().prefix(limit))
        case .descending: return Array(admitted.sorted(by: >).prefix(limit))
        }
    }

    /// The cursor to answer: the last returned id, or the request's cursor when the page is empty.
    public func nextCursor(after messages: [XMTPNodeStoredMessage]) -> UInt64 { messages.last?.id ?? cursor }

    /// `{"direction":..,"limit":..,"id_cursor":".."}` for the response.
    func json(after messages: [XMTPNodeStoredMessage]) -> JSONValue {
        .object([
            ("direction", .string(direction.rawValue)),
            ("limit", .number(String(limit))),
            ("id_cursor", .string(String(nextCursor(after: messages)))),
        ])
    }
}
