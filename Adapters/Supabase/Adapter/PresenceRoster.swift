import SwitchboardCore
import SupabaseProtocol

/// Who is online on a channel, from Phoenix presence: `presence_state` replaces, `presence_diff` adjusts.
///
/// A key (a user) may be present from several sockets (devices); each presence has its own `phx_ref`, and the
/// key is online while at least one remains.
public struct PresenceRoster: Sendable, Equatable {
    private var refs: [String: Set<String>] = [:]

    /// An empty roster.
    public init() {}

    /// The keys with at least one presence.
    public var online: Set<String> { Set(refs.filter { !$0.value.isEmpty }.keys) }

    /// Replaces the roster with a `presence_state` payload `{key: {metas: [{phx_ref, ...}]}}`.
    public mutating func applyState(_ payload: JSONValue) {
        refs = [:]
        for (key, entry) in payload.members ?? [] {
            refs[key] = Set(Self.refs(in: entry))
        }
    }

    /// Applies a `presence_diff` payload `{joins: {...}, leaves: {...}}` (leaves first, then joins).
    public mutating func applyDiff(_ payload: JSONValue) {
        for (key, entry) in payload["leaves"]?.members ?? [] {
            refs[key]?.subtract(Self.refs(in: entry))
            if refs[key]?.isEmpty == true { refs[key] = nil }
        }
        for (key, entry) in payload["joins"]?.members ?? [] {
            refs[key, default: []].formUnion(Self.refs(in: entry))
        }
    }

    private static func refs(in entry: JSONValue) -> [String] {
        (entry["metas"]?.arrayValue ?? []).map { $0["phx_ref"]?.stringValue ?? $0.serialized }
    }
}
