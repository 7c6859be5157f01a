/// Picks a handler by method and path prefix; pure, so it is tested without sockets.
///
/// A prefix matches whole path segments: `/api` matches `/api` and `/api/rooms` but not `/apix`; `/` matches
/// everything. The longest matching prefix wins. A route without a method (WebSockets) matches any method;
/// `HEAD` falls back to the `GET` route.
struct HTTPServerRouter<Handler: Sendable>: Sendable {
    /// The outcome of a lookup.
    enum Match {
        /// A route matched.
        case matched(Handler)
        /// Some route has the path, but not for this method; the methods it has, for `Allow`.
        case methodNotAllowed([HTTPMethod])
        /// No route has the path.
        case notFound
    }

    private struct Route: Sendable {
        var method: HTTPMethod?
        var prefix: String
        var handler: Handler
    }

    private var routes: [Route] = []

    /// Adds a route, replacing one with the same method and prefix.
    mutating func add(method: HTTPMethod?, prefix: String, handler: Handler) {
        let prefix = Self.normalize(prefix)
        routes.removeAll { $0.method == method && $0.prefix == prefix }
        routes.append(Route(method: method, prefix: prefix, handler: handler))
    }

    /// The handler for `method` on `path`.
    func match(method: HTTPMethod?, path: String) -> Match {
        let candidates = routes.filter { Self.prefix($0.prefix, matches: path) }
        guard !candidates.isEmpty else { return .notFound }
        func best(for method: HTTPMethod?) -> Route? {
            candidates.filter { $0.method == nil || $0.method == method }.max { $0.prefix.utf8.count < $1.prefix.utf8.count }
        }
        if let route = best(for: method) ?? (method == .head ? best(for: .get) : nil) {
            return .matched(route.handler)
        }
        var allowed: [HTTPMethod] = []
        for route in candidates {
            if let method = route.method, !allowed.contains(method) { allowed.append(method) }
        }
        if allowed.contains(.get) && !allowed.contains(.head) { allowed.append(.head) }
        return .methodNotAllowed(allowed)
    }

    /// Whether `prefix` covers `path` on a segment boundary.
    static func prefix(_ prefix: String, matches path: String) -> Bool {
        let pathBytes = Array(path.utf8), prefixBytes = Array(prefix.utf8)
        guard pathBytes.starts(with: prefixBytes) else { return false }
        if prefixBytes.last == UInt8(ascii: "/") || pathBytes.count == prefixBytes.count { return true }
        return pathBytes[prefixBytes.count] == UInt8(ascii: "/")
    }

    /// `api/` and `/api/` both become `/api`; the root stays `/`.
    static func normalize(_ prefix: String) -> String {
        var result = prefix.hasPrefix("/") ? prefix : "/" + prefix
        while result.count > 1 && result.hasSuffix("/") { result.removeLast() }
        return result
    }
}
