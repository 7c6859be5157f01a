import Foundation

/// A request the server received, fully read (body included) before the handler runs.
public struct HTTPServerRequest: Sendable {
    /// One `name=value` pair of the query string, percent-decoded (`+` reads as a space).
    public struct QueryItem: Sendable, Hashable {
        /// The decoded name.
        public var name: String
        /// The decoded value (empty for `?flag` or `?flag=`).
        public var value: String

        /// Makes an item.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The request method.
    public var method: HTTPMethod
    /// The percent-decoded path with dot segments removed, e.g. `/api/rooms`.
    public var path: String
    /// The query string exactly as sent, without the `?`; `nil` when the target had no `?`.
    public var rawQuery: String?
    /// The query items in order; repeated names are all kept.
    public var queryItems: [QueryItem]
    /// The request header fields.
    public var headers: HTTPHeaders
    /// The request body (already de-chunked).
    public var body: Data
    /// The peer's IP address, e.g. `127.0.0.1`.
    public var remoteAddress: String
    /// The peer's TCP port.
    public var remotePort: Int
    /// `1.1` or `1.0`.
    public var httpVersion: String

    /// Makes a request value (the server builds these; tests may too).
    public init(method: HTTPMethod, path: String, rawQuery: String? = nil, headers: HTTPHeaders = HTTPHeaders(),
                body: Data = Data(), remoteAddress: String = "127.0.0.1", remotePort: Int = 0, httpVersion: String = "1.1") {
        self.method = method
        self.path = path
        self.rawQuery = rawQuery
        self.queryItems = rawQuery.map(Self.parseQuery) ?? []
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort
        self.httpVersion = httpVersion
    }

    /// The first value of query item `name`.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive), nil when absent or empty.
    public var bearerToken: String? {
        guard let header = headers["Authorization"] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Every value of query item `name`, in order.
    public func queryValues(_ name: String) -> [String] {
        queryItems.filter { $0.name == name }.map(\.value)
    }

    /// Splits `a=1&b=x%20y&a=2` into items, decoding `%XX` and `+`; a malformed escape is kept as written.
    static func parseQuery(_ raw: String) -> [QueryItem] {
        raw.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decodeQueryComponent(pieces[0])
            let value = pieces.count > 1 ? decodeQueryComponent(pieces[1]) : ""
            return QueryItem(name: name, value: value)
        }
    }

    private static func decodeQueryComponent(_ component: Substring) -> String {
        let spaced = component.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
