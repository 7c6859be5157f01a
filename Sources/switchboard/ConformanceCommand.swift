import Foundation
import MemoryConformance
import SocketIOConformance
import SupabaseConformance
import SwitchboardConformance
import SwitchboardCore
import XMTPConformance

enum ConformanceCommand {
    static func run(_ raw: [String]) async throws -> Int32 {
        let arguments = try Arguments(raw, booleanFlags: ["echo-only", "list"])
        try arguments.check(allowed: ["adapter", "id-scheme", "echo-only", "format", "junit", "scenario", "list", "url",
                                      "jwt-secret"])
        if arguments.has("list") {
            for scenario in StandardScenarios.all { print("\(scenario.name.padding(toLength: 32, withPad: " ", startingAt: 0)) \(scenario.summary)") }
            return 0
        }
        let adapter = arguments.value("adapter") ?? "memory"
        let format = arguments.value("format") ?? "table"
        guard ["table", "json"].contains(format) else { throw UsageError("--format must be table or json") }
        let harness: any ConformanceHarness
        switch adapter {
        case "memory":
            harness = MemoryHarness(scheme: try parseScheme(arguments.value("id-scheme")), echoOnly: arguments.has("echo-only"))
        case "supabase":
            guard let text = arguments.value("url"), let url = URL(string: text), url.scheme?.hasPrefix("http") == true,
                  url.host != nil else {
                throw UsageError("--adapter supabase needs --url http://HOST:PORT (the server's base URL)")
            }
            let secret = arguments.value("jwt-secret") ?? ProcessInfo.processInfo.environment["SWITCHBOARD_JWT_SECRET"]
            guard let secret, !secret.isEmpty else {
                throw UsageError("--adapter supabase needs --jwt-secret S (or SWITCHBOARD_JWT_SECRET) to mint member tokens")
            }
            harness = SupabaseHarness(baseURL: url, jwtSecret: secret)
        case "xmtp":
            guard let text = arguments.value("url"), let url = URL(string: text), url.scheme?.hasPrefix("http") == true,
                  url.host != nil else {
                throw UsageError("--adapter xmtp needs --url http://HOST:PORT (the node's base URL, e.g. from `serve xmtp`)")
            }
            harness = XMTPHarness(baseURL: url)
        case "socketio":
            guard let text = arguments.value("url"), let url = URL(string: text), url.scheme?.hasPrefix("http") == true,
                  url.host != nil else {
                throw UsageError("--adapter socketio needs --url http://HOST:PORT (the server's base URL, e.g. from `serve socketio`)")
            }
            harness = SocketIOHarness(baseURL: url)
        default:
            throw UsageError("unknown adapter '\(adapter)' (available: memory, supabase, xmtp, socketio)")
        }
        let names = arguments.all("scenario")
        let known = Set(StandardScenarios.all.map(\.name))
        if let unknown = names.first(where: { !known.contains($0) }) {
            throw UsageError("unknown scenario '\(unknown)'; see --list")
        }
        let kit = ConformanceKit(only: names.isEmpty ? nil : Set(names))
        let isTable = format == "table"
        let report = await kit.run(harness) { result in
            if isTable {
                FileHandle.standardError.write(Data("  \(result.status.label.padding(toLength: 7, withPad: " ", startingAt: 0)) \(result.name)\n".utf8))
            }
        }
        print(isTable ? report.table() : report.json())
        if let path = arguments.value("junit") {
            try report.junitXML().write(toFile: path, atomically: true, encoding: .utf8)
        }
        if report.stopped != nil {
            // The report says what failed, once; this names what to check.
            let hint = adapter == "supabase" ? "is --jwt-secret (or SWITCHBOARD_JWT_SECRET) the secret the server runs with?"
                : "are the harness's credentials the server's?"
            FileHandle.standardError.write(Data("switchboard: conformance stopped at an authentication failure; \(hint)\n".utf8))
        }
        return report.isSuccess ? 0 : 1
    }
}
