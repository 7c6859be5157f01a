/// The `Prefer` header options PostgREST understands (unknown ones are ignored, as with `handling=lenient`).
public struct PostgRESTPreferences: Sendable, Equatable {
    /// `return=` — what a mutation answers with.
    public enum Return: String, Sendable, Equatable {
        /// Rows as a JSON array.
        case representation
        /// Empty body (the default).
        case minimal
        /// Headers only (e.g. `Location`).
        case headersOnly = "headers-only"
    }

    /// `count=` — how the total is computed.
    public enum Count: String, Sendable, Equatable {
        /// Exact `count(*)`.
        case exact
        /// Planner estimate (treated as exact by this server).
        case planned
        /// Exact up to a limit, estimate beyond (treated as exact by this server).
        case estimated
    }

    /// `resolution=` — upsert conflict behaviour.
    public enum Resolution: String, Sendable, Equatable {
        /// `ON CONFLICT DO NOTHING`.
        case ignoreDuplicates = "ignore-duplicates"
        /// `ON CONFLICT DO UPDATE`.
        case mergeDuplicates = "merge-duplicates"
    }

    /// Requested return mode, nil when not given.
    public var returnMode: Return?
    /// Requested count mode, nil when not given.
    public var count: Count?
    /// Requested upsert resolution, nil when not given.
    public var resolution: Resolution?

    /// Creates preferences.
    public init(returnMode: Return? = nil, count: Count? = nil, resolution: Resolution? = nil) {
        self.returnMode = returnMode
        self.count = count
        self.resolution = resolution
    }

    /// Parses every `Prefer` header value (comma-separated items, several headers allowed; first value wins).
    public static func parse(headerValues: [String]) -> PostgRESTPreferences {
        var prefs = PostgRESTPreferences()
        for header in headerValues {
            for raw in header.split(separator: ",") {
                let item = raw.trimmingSpaces()
                guard let eq = item.firstIndex(of: "=") else { continue }
                let key = item[..<eq].trimmingSpaces()
                let value = item[item.index(after: eq)...].trimmingSpaces()
                switch key {
                case "return": prefs.returnMode = prefs.returnMode ?? Return(rawValue: value)
                case "count": prefs.count = prefs.count ?? Count(rawValue: value)
                case "resolution": prefs.resolution = prefs.resolution ?? Resolution(rawValue: value)
                default: continue
                }
            }
        }
        return prefs
    }
}

extension StringProtocol {
    /// The text without leading/trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" { s.removeLast() }
        return String(s)
    }
}
