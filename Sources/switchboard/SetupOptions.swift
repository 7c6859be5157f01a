import Foundation
import SwitchboardCore

/// The options the setup commands (`supabase …`, `xmtp register|group …`, `socketio …`) share.
extension Arguments {
    /// A server setup command's options: parsed (no flags), checked against `allowed`, and its server's `--url`.
    static func forServer(_ raw: [String], allowed: Set<String>, by command: String) throws -> (Arguments, URL) {
        let options = try Arguments(raw, booleanFlags: [])
        try options.check(allowed: allowed)
        return (options, try options.serverURL(by: command))
    }

    /// The non-empty value of `--name`; a usage error saying that `command` needs it otherwise.
    func required(_ name: String, by command: String, _ placeholder: String) throws -> String {
        guard let value = value(name), !value.isEmpty else { throw UsageError("\(command) needs --\(name) \(placeholder)") }
        return value
    }

    /// `--url` as an http(s) URL with a host; a usage error naming the option otherwise.
    func serverURL(by command: String) throws -> URL {
        let text = try required("url", by: command, "http://HOST:PORT")
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
            throw UsageError("--url must be an http(s) URL such as http://127.0.0.1:54321 (got '\(text)')")
        }
        return url
    }

    /// Every `--member` (repeat the option for each), in order and without repeats; at least one when `required`.
    func members(by command: String, required: Bool) throws -> [UserID] {
        var seen: Set<String> = []
        let members = all("member").filter { seen.insert($0).inserted }
        if let empty = members.first(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
            throw UsageError("--member must not be empty (got '\(empty)')")
        }
        if required, members.isEmpty { throw UsageError("\(command) needs at least one --member ID") }
        return members.map(UserID.init)
    }
}

/// A command group's subcommands, each a name and what runs it with the arguments after that name.
typealias Subcommands = [(name: String, run: ([String]) async throws -> Int32)]

/// Runs the subcommand of `group` (e.g. `supabase conversation`) that `arguments` start with; a usage error listing
/// the choices when it is missing or unknown.
func runSubcommand(of group: String, _ arguments: [String], _ subcommands: Subcommands) async throws -> Int32 {
    let names = subcommands.map(\.name).joined(separator: ", ")
    guard let name = arguments.first else { throw UsageError("\(group) needs a subcommand: \(names)") }
    guard let subcommand = subcommands.first(where: { $0.name == name }) else {
        throw UsageError("unknown \(group) subcommand '\(name)' (\(names))")
    }
    return try await subcommand.run(Array(arguments.dropFirst()))
}

/// Runs a setup command's `request` to the server at `url`; any failure becomes a `SetupFailure` saying `what`
/// failed, with `hints`.
func setupRequest<T>(_ what: String, at url: URL, hints: [SwitchboardError.Code: String] = [:],
                     _ request: () async throws -> T) async throws -> T {
    do {
        return try await request()
    } catch {
        throw SetupFailure(what, at: url, error, hints: hints)
    }
}

/// A `register` setup command: reads `--url` and `--<account> ID`, registers that account with `register` and
/// prints the bearer token it returns.
func runRegister(_ raw: [String], by command: String, account: String,
                 _ register: (URL, UserID) async throws -> String) async throws -> Int32 {
    let (options, url) = try Arguments.forServer(raw, allowed: ["url", account], by: command)
    let id = UserID(try options.required(account, by: command, "ID"))
    try await setupRequest("registering \(account) \(id)", at: url) {
        writeLine(try await register(url, id))
    }
    return 0
}

/// Prints that `members` were added to `target`, as the `add-member` setup commands report it.
func writeAdded(_ members: [UserID], to target: String) {
    writeLine("added \(members.map(\.rawValue).joined(separator: ", ")) to \(target)")
}

/// A setup command's request the server refused or could not answer, said in the user's terms (exit 1).
struct SetupFailure: Error, CustomStringConvertible {
    let description: String

    /// `what` failed against the server at `url` because of `error`; `hints` add a likely cause for an error code.
    init(_ what: String, at url: URL, _ error: any Error, hints: [SwitchboardError.Code: String] = [:]) {
        guard let error = error as? SwitchboardError else {
            description = "\(what) failed at \(url.absoluteString): \(error)"
            return
        }
        var text = "\(what) failed at \(url.absoluteString): \(error.message)"
        if error.code == .transport, hints[.transport] == nil { text += " (is the server running there?)" }
        if let hint = hints[error.code] { text += " (\(hint))" }
        description = text
    }
}
