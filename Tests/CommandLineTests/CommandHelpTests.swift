import Foundation
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

    @Test("a stray argument is a usage error naming it, never ignored (conformance -h used to run the whole kit)",
          arguments: [["conformance", "memory"], ["demo", "now"], ["burst", "--count", "1", "x"], ["migrate", "all"],
                      ["xmtp", "send", "hello"], ["serve", "xmtp", "--port", "0", "extra"], ["bridge", "cfg.json"]])
    func strayArguments(arguments: [String]) async throws {
        let result = try await Self.run(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stdout)")
        #expect(result.stderr.contains("unexpected argument '\(arguments.last!)'"), "\(arguments): \(result.stderr)")
    }
}
