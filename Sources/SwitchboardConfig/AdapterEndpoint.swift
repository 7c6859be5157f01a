import Foundation
import SocketIOProtocol
import SwitchboardCore

/// One side of a bridge or migration as the config file (or `--from`/`--to` JSON) names it, with credentials.
///
/// ```json
/// {"adapter": "supabase", "url": "http://127.0.0.1:54321", "conversation": "<uuid>",
///  "apiKey": "env:SB_ANON_KEY", "accessToken": "env:SB_BRIDGE_TOKEN", "user": "bridge"}
/// {"adapter": "supabase", "url": "http://127.0.0.1:54321", "conversation": "<uuid>",
///  "apiKey": "env:SB_ANON_KEY", "email": "bridge@example.com", "password": "env:SB_BRIDGE_PASSWORD"}
/// {"adapter": "xmtp", "url": "http://127.0.0.1:5556", "conversation": "<32 hex: group id>",
///  "inbox": "bridge", "token": "env:XMTP_TOKEN", "groupSecret": "env:XMTP_GROUP_SECRET",
///  "database": "bridge-xmtp.sqlite"}
/// {"adapter": "socketio", "url": "http://127.0.0.1:8080", "conversation": "room.1",
///  "user": "bridge", "token": "env:SIO_BRIDGE_TOKEN"}
/// ```
/// `supabase` signs in either with `accessToken` (a JWT whose `sub` is `user`) or with `email` and `password`
/// through `/auth/v1` (the user is then the account's ID; access tokens are refreshed before they expire).
/// `socketio` fields: `url` (the server's base URL), `conversation` (its ID, 1–128 of `[A-Za-z0-9._@:-]`, case
/// kept), `user` (the account the token belongs to), `token` (its bearer token from `POST /auth/register`),
/// optional `backend` (the backend ID in ID mappings, default `socketio`).
/// Each kind takes only its own fields (`knownFields`); an unknown one, such as a misspelt secret, is an error.
/// Any string value may be `env:NAME` to read it from the environment, so secrets stay out of files and
/// command lines. Errors name the field (`pairs[0].a.url: ...`).
public struct AdapterEndpoint: Sendable {
    /// `supabase`, `xmtp` or `socketio`.
    public var adapter: String
    /// The server's base URL.
    public var url: URL
    /// The conversation on that backend.
    public var conversation: ConversationID
    /// The account the adapter signs in as.
    public var user: UserID
    /// Every other field, resolved (env: values read).
    public var fields: [String: String]

    /// The fields that only signing in uses.
    public static let secretFields: Set<String> = ["apiKey", "accessToken", "password", "token", "groupSecret"]

    /// Every field an endpoint of each adapter kind may have; any other is refused, as at the config's top level.
    public static let knownFields: [String: Set<String>] = [
        "supabase": ["adapter", "url", "conversation", "backend", "user", "apiKey", "accessToken", "email", "password"],
        "xmtp": ["adapter", "url", "conversation", "backend", "inbox", "token", "groupSecret", "database"],
        "socketio": ["adapter", "url", "conversation", "backend", "user", "token"],
    ]

    /// Parses one endpoint object; `path` prefixes error messages. With `needsSecrets` false (a command that never
    /// signs in) a secret field naming an environment variable that is not set is accepted unread.
    public static func parse(_ json: JSONValue, path: String, baseDirectory: URL, needsSecrets: Bool = true) throws -> AdapterEndpoint {
        guard let object = json.objectValue else { throw ConfigError(path, "must be an object") }
        // A misspelt field (`acessToken`, `groupsecret`) must not pass unnoticed: once the kind is known, every
        // field is checked against it before any value is read.
        if let text = object["adapter"]?.stringValue, let adapter = try? resolve(text, path: "\(path).adapter"),
           let known = knownFields[adapter] {
            for key in object.keys.sorted() where !known.contains(key) {
                throw ConfigError("\(path).\(key)", "unknown field for a \(adapter) endpoint "
                                  + "(expected \(known.sorted().joined(separator: ", ")))")
            }
        }
        var fields: [String: String] = [:]
        var unread: Set<String> = []
        for (key, value) in object {
            guard let text = value.stringValue else { throw ConfigError("\(path).\(key)", "must be a string") }
            if !needsSecrets, secretFields.contains(key), (try? resolve(text, path: key)) == nil {
                unread.insert(key)
                continue
            }
            fields[key] = try resolve(text, path: "\(path).\(key)")
        }
        func required(_ key: String) throws -> String {
            if unread.contains(key) { return "" }
            guard let value = fields[key], !value.isEmpty else { throw ConfigError("\(path).\(key)", "is required") }
            return value
        }
        let adapter = try required("adapter")
        guard knownFields[adapter] != nil else {
            throw ConfigError("\(path).adapter", "must be supabase, xmtp or socketio (got \(adapter))")
        }
        let urlText = try required("url")
        guard let url = URL(string: urlText), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw ConfigError("\(path).url", "must be an http(s) URL (got \(urlText))")
        }
        let conversation = try required("conversation")
        switch adapter {
        case "supabase":
            guard UUIDText.isUUID(conversation) else { throw ConfigError("\(path).conversation", "must be a UUID") }
            _ = try required("apiKey")
            if fields["email"] != nil || fields["password"] != nil {
                guard fields["accessToken"] == nil else {
                    throw ConfigError("\(path).accessToken", "give either accessToken or email and password, not both")
                }
                _ = try required("email")
                _ = try required("password")
            } else {
                _ = try required("accessToken")
            }
        case "socketio":
            guard SocketIOIdentifier.isValid(conversation) else {
                throw ConfigError("\(path).conversation", "must be 1–128 characters of [A-Za-z0-9._@:-]")
            }
            _ = try required("token")
            guard SocketIOIdentifier.isValid(try required("user")) else {
                throw ConfigError("\(path).user", "must be 1–128 characters of [A-Za-z0-9._@:-]")
            }
        default:
            guard conversation.count == 32, Hex.decode(conversation) != nil else {
                throw ConfigError("\(path).conversation", "must be the group ID as 32 hex digits")
            }
            _ = try required("token")
            guard try unread.contains("groupSecret") || Hex.decode(required("groupSecret"))?.count == 32 else {
                throw ConfigError("\(path).groupSecret", "must be 64 hex digits (32 bytes)")
            }
            let database = try required("database")
            fields["database"] = database.hasPrefix("/") ? database : baseDirectory.appendingPathComponent(database).path
        }
        let user = (adapter == "xmtp" ? fields["inbox"] : fields["user"]) ?? ""
        // With email and password the user is whoever the sign-in names (checked against `user` when both are given).
        guard !user.isEmpty || fields["email"] != nil else {
            throw ConfigError("\(path).\(adapter == "xmtp" ? "inbox" : "user")", "is required")
        }
        // Socket-style IDs are case-sensitive; UUIDs and hex group IDs are normalised to lower case.
        let normalised = adapter == "socketio" ? conversation : conversation.lowercased()
        return AdapterEndpoint(adapter: adapter, url: url, conversation: ConversationID(normalised),
                               user: UserID(user), fields: fields)
    }

    /// Parses `--from`/`--to`: inline JSON or the path of a JSON file holding one endpoint object.
    public static func parseArgument(_ text: String, option: String) throws -> AdapterEndpoint {
        let json: JSONValue
        let base: URL
        if text.hasPrefix("{") {
            json = try parseJSON(text, path: option)
            base = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        } else {
            guard let data = FileManager.default.contents(atPath: text) else { throw ConfigError(option, "cannot read \(text)") }
            json = try parseJSON(String(decoding: data, as: UTF8.self), path: option)
            base = URL(fileURLWithPath: text).deletingLastPathComponent()
        }
        return try parse(json, path: option, baseDirectory: base)
    }

    /// Parses JSON text, naming `path` and the line and column of a syntax error.
    public static func parseJSON(_ text: String, path: String) throws -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch {
            throw ConfigError(path, "is not valid JSON: \(error.locatedMessage(in: text))")
        }
    }

    /// `env:NAME` → the variable's value; anything else as is.
    public static func resolve(_ text: String, path: String) throws -> String {
        guard text.hasPrefix("env:") else { return text }
        let name = String(text.dropFirst(4))
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw ConfigError(path, "names environment variable \(name), which is not set")
        }
        return value
    }
}

extension AdapterEndpoint {
    /// The server's URL without user information, query or fragment.
    public var publicURL: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.host ?? "?" }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? url.host ?? "?"
    }

    /// `socketio at http://127.0.0.1:8080, conversation room.1` (no secrets).
    public var publicDescription: String {
        "\(adapter) at \(publicURL), conversation \(conversation.rawValue)"
    }
}
