import Foundation
import SwitchboardCore
import Testing
import TestSupport

/// `switchboard <command> --help` as a user types it: the command's own help on standard output, exit 0.
@Suite("switchboard command help")
struct CommandHelpTests {
    private static func run(_ arguments: [String]) async throws -> ProcessResult {
        try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments, timeout: .seconds(60))
    }

    @Test("every command answers --help with its own section and exit 0 (it used to take --help for an option)",
          arguments: [
              (["demo", "--help"], "demo  ", "--data-dir DIR"),
              (["conformance", "-h"], "conformance  ", "--adapter A"),
              (["burst", "--help"], "burst  ", "--journal PATH"),
              (["serve", "supabase", "--help"], "serve supabase  ", "--jwt-secret S"),
              (["serve", "socketio", "--port", "0", "--help"], "serve socketio  ", "--page-size N"),
              (["bridge", "--help"], "bridge  ", "--catch-up-only"),
              (["migrate", "--from", "{}", "--help"], "migrate  ", "--verify-only"),
              (["bench", "migrate", "--help"], "bench SCENARIO  ", "--runs N"),
              (["xmtp", "codec", "encode", "--help"], "xmtp codec encode  ", "--json J"),
              (["xmtp", "message-id", "--help"], "xmtp message-id  ", "--content-hex H"),
              (["xmtp", "send", "--help"], "xmtp send  ", "--prepared B"),
              (["help", "migrate"], "migrate  ", "--batch-size N"),
              (["demo", "--keep", "--help"], "demo  ", "--keep"),
              (["supabase", "token", "--help"], "supabase token  ", "--expires S"),
              (["supabase", "conversation", "create", "--help"], "supabase conversation create", "--title T"),
              (["xmtp", "register", "--help"], "xmtp register  ", "--inbox ID"),
              (["xmtp", "group", "add-member", "--help"], "xmtp group add-member  ", "--group HEX"),
              (["socketio", "conversation", "add-member", "-h"], "socketio conversation add-member", "--conversation ID"),
          ])
    func commandHelp(arguments: [String], header: String, option: String) async throws {
        let result = try await Self.run(arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)")
        #expect(result.stderr.isEmpty)
        #expect(result.stdout.contains(header), "\(arguments): \(result.stdout)")
        #expect(result.stdout.contains(option), "\(arguments): \(result.stdout)")
        #expect(!result.stdout.contains("COMMANDS"), "\(arguments) printed the whole usage")
    }

    @Test("a command group's --help lists each of its commands; xmtp attachment has its detailed help")
    func groupHelp() async throws {
        let serve = try await Self.run(["serve", "--help"])
        #expect(serve.status == 0)
        for backend in ["serve supabase", "serve xmtp", "serve socketio"] { #expect(serve.stdout.contains(backend)) }
        #expect(!serve.stdout.contains("migrate  "))
        let attachment = try await Self.run(["xmtp", "attachment", "--help"])
        #expect(attachment.status == 0)
        #expect(attachment.stdout.hasPrefix("switchboard xmtp attachment — remote-attachment crypto"))
    }

    @Test("a setup group's --help lists each of its commands; --help lists them all", arguments: [
        ("supabase", ["supabase token", "supabase conversation create", "supabase conversation add-member"]),
        ("socketio", ["socketio register", "socketio conversation create", "socketio conversation add-member"]),
    ])
    func setupGroupHelp(group: String, commands: [String]) async throws {
        let help = try await Self.run([group, "--help"])
        #expect(help.status == 0)
        let whole = try await Self.run(["--help"])
        for command in commands {
            #expect(help.stdout.contains("  \(command)"), "\(command) is not in: \(help.stdout)")
            #expect(whole.stdout.contains("  \(command)"))
        }
        for command in ["xmtp register", "xmtp group create", "xmtp group add-member", "--version"] {
            #expect(whole.stdout.contains("  \(command)"))
        }
    }

    @Test("--version prints the one version the sources keep; with anything after it, it is a usage error")
    func version() async throws {
        let result = try await Self.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout == "switchboard \(SwitchboardVersion.current)\n")
        #expect(SwitchboardVersion.current.split(separator: ".").count == 3)
        let extra = try await Self.run(["--version", "now"])
        #expect(extra.status == 2)
        #expect(extra.stderr.contains("--version takes no arguments"))
    }

    @Test("--help alone prints everything; unknown commands and missing values are still usage errors (exit 2)")
    func usageErrors() async throws {
        let whole = try await Self.run(["--help"])
        #expect(whole.status == 0)
        #expect(whole.stdout.contains("COMMANDS") && whole.stdout.contains("serve socketio") && whole.stdout.contains("bench SCENARIO"))
        let unknown = try await Self.run(["nosuch", "--help"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown command 'nosuch'"))
        let unknownHelp = try await Self.run(["help", "nosuch"])
        #expect(unknownHelp.status == 2)
        let missing = try await Self.run(["demo", "--data-dir"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--data-dir needs a value"))
        #expect(missing.stderr.contains("Run 'switchboard demo --help' for usage."), "\(missing.stderr)")
        #expect(unknown.stderr.contains("Run 'switchboard --help' for usage."), "\(unknown.stderr)")
    }

    @Test("a Supabase endpoint takes accessToken or email and password; half or both is an error naming the field")
    func supabaseEndpointCredentials() async throws {
        let source = #"{"adapter":"xmtp","url":"http://127.0.0.1:9","conversation":"00112233445566778899aabbccddeeff","inbox":"m","token":"t","groupSecret":"0000000000000000000000000000000000000000000000000000000000000000","database":"m.sqlite"}"#
        let base = #""adapter":"supabase","url":"http://127.0.0.1:9","conversation":"6f1c1a52-9a1c-4f43-9f0e-3f7d2f1b0a11","apiKey":"k""#
        for (target, message) in [
            ("{\(base),\"email\":\"m@example.com\"}", "--to.password: is required"),
            ("{\(base),\"password\":\"p\"}", "--to.email: is required"),
            ("{\(base),\"email\":\"m@example.com\",\"password\":\"p\",\"accessToken\":\"t\"}",
             "--to.accessToken: give either accessToken or email and password, not both"),
            ("{\(base),\"user\":\"m\"}", "--to.accessToken: is required"),
        ] {
            let result = try await Self.run(["migrate", "--from", source, "--to", target])
            #expect(result.status == 2, "\(target): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(target): \(result.stderr)")
        }
    }

    @Test("a stray argument is a usage error naming it, never ignored (conformance -h used to run the whole kit)",
          arguments: [["conformance", "memory"], ["demo", "now"], ["burst", "--count", "1", "x"], ["migrate", "all"],
                      ["xmtp", "send", "hello"], ["serve", "xmtp", "--port", "0", "extra"], ["bridge", "cfg.json"]])
    func strayArguments(arguments: [String]) async throws {
        let result = try await Self.run(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stdout)")
        #expect(result.stderr.contains("unexpected argument '\(arguments.last!)'"), "\(arguments): \(result.stderr)")
    }
}
