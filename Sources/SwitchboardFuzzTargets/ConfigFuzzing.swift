import Foundation
import SwitchboardConfig
import SwitchboardCore

/// The `switchboard bridge` config file and the `--from`/`--to` endpoint objects of `migrate`, parsed and checked.
enum ConfigFuzzing {
    static let name = "bridge-config"
    /// Where relative paths in the input are taken from; never read or written.
    static let base = URL(fileURLWithPath: "/fuzz/config")

    /// The input as a whole config and as one endpoint: every refusal is a `ConfigError` naming a field, and every
    /// accepted config keeps the rules the parser promises (unique pair names, distinct backends per pair, absolute
    /// store paths, known adapter kinds, URLs shown without credentials), the same on a second parse.
    static func run(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let json: JSONValue
        do {
            json = try AdapterEndpoint.parseJSON(text, path: "config")
        } catch let error as ConfigError {
            try expect(error.field == "config", name, "a syntax error names \(error.field), not the file")
            return
        }
        for needsSecrets in [true, false] {
            if let config = try refusedOrAccepted({ try BridgeConfigFile.parse(json, baseDirectory: base, needsSecrets: needsSecrets) }) {
                try check(config)
                let again = try BridgeConfigFile.parse(json, baseDirectory: base, needsSecrets: needsSecrets)
                try expect(again.pairs.map(\.definition) == config.pairs.map(\.definition), name, "a second parse differs")
            }
            if let endpoint = try refusedOrAccepted({
                try AdapterEndpoint.parse(json, path: "--from", baseDirectory: base, needsSecrets: needsSecrets)
            }) {
                try check(endpoint)
            }
        }
    }

    /// The value `parse` returns, or nil when it refused the input with a `ConfigError` naming a field; any other
    /// error is a finding.
    private static func refusedOrAccepted<T>(_ parse: () throws -> T) throws -> T? {
        do {
            return try parse()
        } catch let error as ConfigError {
            try expect(!error.field.isEmpty && !error.problem.isEmpty, name, "a refusal without a field or a reason: \(error)")
            return nil
        } catch {
            throw FuzzFailure(target: name, message: "refused with \(type(of: error)), not a ConfigError: \(error)")
        }
    }

    /// The promises of an accepted config.
    private static func check(_ config: BridgeConfigFile) throws {
        try expect(!config.pairs.isEmpty, name, "accepted without pairs")
        try expect(Set(config.pairs.map(\.name)).count == config.pairs.count, name, "two pairs share a name")
        try expect(config.leaseSeconds >= 1 && config.statusEverySeconds >= 0.1, name, "accepted intervals below the minimum")
        try expect(!config.worker.isEmpty, name, "accepted an empty worker name")
        if case .sqlite(let path) = config.store {
            try expect(path.hasPrefix("/"), name, "the store path \(path) is not absolute")
        }
        for pair in config.pairs {
            try expect((pair.a.fields["backend"] ?? pair.a.adapter) != (pair.b.fields["backend"] ?? pair.b.adapter), name,
                       "both sides of \(pair.name) use one backend ID")
            try check(pair.a)
            try check(pair.b)
        }
    }

    /// The promises of an accepted endpoint.
    private static func check(_ endpoint: AdapterEndpoint) throws {
        let known = try required(AdapterEndpoint.knownFields[endpoint.adapter], "accepted adapter kind \(endpoint.adapter)")
        try expect(endpoint.fields.keys.allSatisfy(known.contains), name, "accepted unknown fields \(endpoint.fields.keys.sorted())")
        try expect(["http", "https"].contains(endpoint.url.scheme ?? ""), name, "accepted URL \(endpoint.url)")
        let shown = endpoint.publicDescription
        try expect(!endpoint.publicURL.contains("@"), name, "the shown URL keeps credentials: \(endpoint.publicURL)")
        for key in AdapterEndpoint.secretFields {
            if let secret = endpoint.fields[key], secret.count >= 8 {
                try expect(!shown.contains(secret), name, "the description shows the \(key)")
            }
        }
        if endpoint.adapter != "socketio" {
            try expect(endpoint.conversation.rawValue == endpoint.conversation.rawValue.lowercased(), name,
                       "conversation \(endpoint.conversation) not normalised")
        }
        if let database = endpoint.fields["database"] {
            try expect(database.hasPrefix("/"), name, "the database path \(database) is not absolute")
        }
    }

    /// `value`, or a finding saying `what` when it is nil.
    private static func required<T>(_ value: T?, _ what: String) throws -> T {
        guard let value else { throw FuzzFailure(target: name, message: what) }
        return value
    }
}
