import Foundation
import SwitchboardBridge
import SwitchboardCore

/// A parsed and checked `switchboard bridge` config file.
public struct BridgeConfigFile: Sendable {
    /// Where the store lives.
    public enum StoreLocation: Sendable, Equatable {
        /// A SQLite file (absolute path).
        case sqlite(String)
        /// A PostgreSQL URL and schema.
        case postgres(url: String, schema: String)
    }

    /// One configured pair.
    public struct Pair: Sendable {
        /// Its name (lease `bridge:pair:<name>`).
        public var name: String
        /// Side a.
        public var a: AdapterEndpoint
        /// Side b.
        public var b: AdapterEndpoint
    }

    /// The store.
    public var store: StoreLocation
    /// The worker's name.
    public var worker: String
    /// Lease TTL in seconds.
    public var leaseSeconds: TimeInterval
    /// Seconds between status lines.
    public var statusEverySeconds: TimeInterval
    /// The pairs.
    public var pairs: [Pair]

    /// The config field naming the store (for errors).
    public var storeField: String {
        switch store {
        case .sqlite: "store.sqlite"
        case .postgres: "store.postgres"
        }
    }

    /// The store for status lines, without credentials.
    public var storeDescription: String {
        switch store {
        case .sqlite(let path): "sqlite \(path)"
        case .postgres(_, let schema): "postgres (schema \(schema))"
        }
    }

    /// Refuses (with a `ConfigError` naming the field) a reloaded config `new` that changes what a running worker
    /// keeps until it restarts: its store, its name and its lease length.
    public func checkReload(to new: BridgeConfigFile) throws {
        let restart = "cannot change while the bridge runs; restart it for that"
        if new.store != store { throw ConfigError(new.storeField, "\(restart) (the running store is \(storeDescription))") }
        if new.worker != worker { throw ConfigError("worker", "\(restart) (running as \(worker))") }
        if new.leaseSeconds != leaseSeconds {
            throw ConfigError("leaseSeconds", "\(restart) (running with \(Self.secondsText(leaseSeconds)))")
        }
    }

    /// Reads and checks the file at `path`; every mistake is a `ConfigError` naming the field.
    /// With `needsSecrets` false (a command that never signs in) secrets in unset environment variables are not
    /// required.
    public static func load(path: String, needsSecrets: Bool = true) throws -> BridgeConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigError("config", "cannot read \(path)") }
        let json = try AdapterEndpoint.parseJSON(String(decoding: data, as: UTF8.self), path: "config")
        let base = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent()
        return try parse(json, baseDirectory: base, needsSecrets: needsSecrets)
    }

    /// Checks a parsed config; relative paths are taken from `baseDirectory`.
    public static func parse(_ json: JSONValue, baseDirectory: URL, needsSecrets: Bool = true) throws -> BridgeConfigFile {
        guard let object = json.objectValue else { throw ConfigError("config", "must be a JSON object") }
        let known: Set<String> = ["store", "worker", "leaseSeconds", "statusEverySeconds", "pairs"]
        for key in object.keys.sorted() where !known.contains(key) {
            throw ConfigError(key, "unknown field (expected \(known.sorted().joined(separator: ", ")))")
        }
        let store = try parseStore(object["store"], baseDirectory: baseDirectory)
        var worker = BridgeWorkerConfiguration.defaultWorkerName
        if let value = object["worker"] {
            guard let text = value.stringValue, !text.isEmpty else { throw ConfigError("worker", "must be a non-empty string") }
            worker = try AdapterEndpoint.resolve(text, path: "worker")
        }
        let leaseSeconds = try seconds(object["leaseSeconds"], field: "leaseSeconds", default: 15, minimum: 1)
        let statusEvery = try seconds(object["statusEverySeconds"], field: "statusEverySeconds", default: 5, minimum: 0.1)
        guard let pairsValue = object["pairs"] else { throw ConfigError("pairs", "is required") }
        guard let pairsArray = pairsValue.arrayValue, !pairsArray.isEmpty else {
            throw ConfigError("pairs", "must be a non-empty array")
        }
        var pairs: [Pair] = []
        var names = Set<String>()
        for (index, element) in pairsArray.enumerated() {
            let path = "pairs[\(index)]"
            guard let pair = element.objectValue else { throw ConfigError(path, "must be an object") }
            for key in pair.keys.sorted() where !["name", "a", "b"].contains(key) {
                throw ConfigError("\(path).\(key)", "unknown field (expected name, a, b)")
            }
            guard let name = pair["name"]?.stringValue, !name.isEmpty else {
                throw ConfigError("\(path).name", "is required (a non-empty string)")
            }
            guard names.insert(name).inserted else { throw ConfigError("\(path).name", "'\(name)' names another pair too") }
            guard let aValue = pair["a"] else { throw ConfigError("\(path).a", "is required") }
            guard let bValue = pair["b"] else { throw ConfigError("\(path).b", "is required") }
            let a = try AdapterEndpoint.parse(aValue, path: "\(path).a", baseDirectory: baseDirectory, needsSecrets: needsSecrets)
            let b = try AdapterEndpoint.parse(bValue, path: "\(path).b", baseDirectory: baseDirectory, needsSecrets: needsSecrets)
            let backendA = a.fields["backend"] ?? a.adapter, backendB = b.fields["backend"] ?? b.adapter
            guard backendA != backendB else {
                throw ConfigError("\(path).b.backend", "both sides use backend ID \(backendA); set \"backend\" on one side")
            }
            if a.adapter == "xmtp", b.adapter == "xmtp", a.fields["database"] == b.fields["database"] {
                throw ConfigError("\(path).b.database", "both sides use the same local database")
            }
            pairs.append(Pair(name: name, a: a, b: b))
        }
        return BridgeConfigFile(store: store, worker: worker, leaseSeconds: leaseSeconds, statusEverySeconds: statusEvery,
                                pairs: pairs)
    }

    /// Parses `store`.
    private static func parseStore(_ value: JSONValue?, baseDirectory: URL) throws -> StoreLocation {
        guard let value else { throw ConfigError("store", "is required ({\"sqlite\": PATH} or {\"postgres\": URL})") }
        guard let object = value.objectValue else { throw ConfigError("store", "must be an object: {\"sqlite\": PATH} or {\"postgres\": URL}") }
        for key in object.keys.sorted() where !["sqlite", "postgres", "schema"].contains(key) {
            throw ConfigError("store.\(key)", "unknown field (expected sqlite, or postgres with an optional schema)")
        }
        switch (object["sqlite"], object["postgres"]) {
        case (.some(let sqlite), nil):
            guard object["schema"] == nil else { throw ConfigError("store.schema", "only applies to a postgres store") }
            guard let text = sqlite.stringValue, !text.isEmpty else { throw ConfigError("store.sqlite", "must be a file path") }
            let path = try AdapterEndpoint.resolve(text, path: "store.sqlite")
            return .sqlite(path.hasPrefix("/") ? path : baseDirectory.appendingPathComponent(path).path)
        case (nil, .some(let postgres)):
            guard let text = postgres.stringValue, !text.isEmpty else {
                throw ConfigError("store.postgres", "must be a connection URL (or env:NAME)")
            }
            let url = try AdapterEndpoint.resolve(text, path: "store.postgres")
            guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") || url.contains("=") else {
                throw ConfigError("store.postgres", "must be a postgres:// URL or a libpq connection string")
            }
            var schema = "switchboard"
            if let value = object["schema"] {
                guard let text = value.stringValue,
                      text.range(of: "^[A-Za-z_][A-Za-z0-9_]{0,62}$", options: .regularExpression) != nil else {
                    throw ConfigError("store.schema", "must be a plain identifier (letters, digits, _)")
                }
                schema = text
            }
            return .postgres(url: url, schema: schema)
        case (.some, .some):
            throw ConfigError("store", "give either sqlite or postgres, not both")
        case (nil, nil):
            throw ConfigError("store", "needs sqlite (a file path) or postgres (a URL)")
        }
    }

    /// A positive number of seconds (`default` when absent).
    private static func seconds(_ value: JSONValue?, field: String, default fallback: TimeInterval,
                                minimum: TimeInterval) throws -> TimeInterval {
        guard let value else { return fallback }
        guard let number = value.doubleValue, number.isFinite else { throw ConfigError(field, "must be a number of seconds") }
        guard number >= minimum else { throw ConfigError(field, "must be at least \(minimum) (got \(number))") }
        return number
    }

    /// `15s`, `2.5s`.
    public static func secondsText(_ value: TimeInterval) -> String {
        value == value.rounded() ? "\(Int(value))s" : String(format: "%.1fs", value)
    }
}

extension BridgeConfigFile.Pair {
    /// A digest of everything that defines the pair (both endpoints, secrets included), so that a reload restarts
    /// the pair when any of it changes; never shown.
    public var definition: String {
        var text = ""
        for (side, endpoint) in [("a", a), ("b", b)] {
            text += "\(side)\u{0}\(endpoint.adapter)\u{0}\(endpoint.url.absoluteString)\u{0}\(endpoint.conversation.rawValue)\u{0}"
                + "\(endpoint.user.rawValue)\u{0}"
            for key in endpoint.fields.keys.sorted() { text += "\(key)\u{0}\(endpoint.fields[key] ?? "")\u{0}" }
        }
        return Digest.sha256Hex(Array(text.utf8))
    }

    /// `side a: socketio at http://127.0.0.1:8080, conversation room.1; side b: …` (no secrets).
    public var sidesDescription: String {
        "side a: \(a.publicDescription); side b: \(b.publicDescription)"
    }
}
