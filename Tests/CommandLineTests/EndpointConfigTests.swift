import Foundation
import Testing
import TestSupport

/// Mistakes in bridge configs and migrate endpoints, as a user makes them: each is named, nothing passes unnoticed.
@Suite("switchboard bridge and migrate: endpoint and config mistakes")
struct EndpointConfigTests {
    private static func run(_ arguments: [String]) async throws -> ProcessResult {
        try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments, timeout: .seconds(60))
    }

    /// A folder of its own for a test's files, removed afterwards.
    private static func withFolder<T>(_ body: (URL) async throws -> T) async throws -> T {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-config-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try await withCleanup { try await body(folder) } cleanup: { try? FileManager.default.removeItem(at: folder) }
    }

    static let xmtp = #""adapter":"xmtp","url":"http://127.0.0.1:9","conversation":"00112233445566778899aabbccddeeff","inbox":"m","token":"t","groupSecret":"0000000000000000000000000000000000000000000000000000000000000000","database":"/dev/null/m.sqlite""#
    static let supabase = #""adapter":"supabase","url":"http://127.0.0.1:9","conversation":"6f1c1a52-9a1c-4f43-9f0e-3f7d2f1b0a11","apiKey":"k","accessToken":"t","user":"m""#
    static let socketio = #""adapter":"socketio","url":"http://127.0.0.1:9","conversation":"room","user":"m","token":"t""#

    @Test("an endpoint field its adapter does not take is refused, naming it and listing the expected ones (exit 2)",
          arguments: [
              (supabase + #","acessToken":"typo""#, "acessToken",
               "accessToken, adapter, apiKey, backend, conversation, email, password, url, user"),
              (xmtp + #","groupsecret":"typo""#, "groupsecret",
               "adapter, backend, conversation, database, groupSecret, inbox, token, url"),
              (xmtp + #","user":"m""#, "user", "adapter, backend, conversation, database, groupSecret, inbox, token, url"),
              (socketio + #","password":"p""#, "password", "adapter, backend, conversation, token, url, user"),
              (socketio + #","tokn":{"nested":1}"#, "tokn", "adapter, backend, conversation, token, url, user"),
          ])
    func unknownEndpointField(endpoint: String, field: String, expected: String) async throws {
        let other = endpoint.contains("\"xmtp\"") ? Self.supabase : Self.xmtp
        // An impossible store: should the endpoint pass, the run fails there (exit 1) and leaves no file behind.
        let migrate = try await Self.run(["migrate", "--from", "{\(other)}", "--to", "{\(endpoint)}", "--store", "/dev/null/none"])
        #expect(migrate.status == 2, "\(migrate.stdout) \(migrate.stderr)")
        let kind = endpoint.contains("\"xmtp\"") ? "xmtp" : endpoint.contains("\"supabase\"") ? "supabase" : "socketio"
        #expect(migrate.stderr.contains("--to.\(field): unknown field for a \(kind) endpoint (expected \(expected))"),
                "\(migrate.stderr)")

        try await Self.withFolder { folder in
            let config = folder.appendingPathComponent("bridge.json")
            let otherSide = kind == "xmtp" ? Self.socketio : Self.xmtp
            try Data(#"{"store":{"sqlite":"b.sqlite"},"pairs":[{"name":"p","a":{\#(otherSide)},"b":{\#(endpoint)}}]}"#.utf8)
                .write(to: config)
            let bridge = try await Self.run(["bridge", "--config", config.path, "--catch-up-only"])
            #expect(bridge.status == 2, "\(bridge.stdout) \(bridge.stderr)")
            #expect(bridge.stderr.contains("pairs[0].b.\(field): unknown field for a \(kind) endpoint (expected \(expected))"),
                    "\(bridge.stderr)")
            #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("b.sqlite").path),
                    "the store was opened for a config that is refused")
        }
    }

    @Test("every field each adapter documents is still accepted")
    func knownFieldsAccepted() async throws {
        // Nothing listens on port 9: a run that gets past the endpoint checks fails later (exit 1), never with 2.
        let supabasePassword = #""adapter":"supabase","url":"http://127.0.0.1:9","conversation":"6f1c1a52-9a1c-4f43-9f0e-3f7d2f1b0a11","apiKey":"k","email":"m@example.com","password":"p","backend":"sb""#
        for (from, to) in [(Self.xmtp + #","backend":"x""#, Self.supabase), (Self.socketio, supabasePassword)] {
            let result = try await Self.run(["migrate", "--from", "{\(from)}", "--to", "{\(to)}", "--store", "/dev/null/none"])
            #expect(result.status == 1, "\(result.stderr)")
            #expect(!result.stderr.contains("unknown field"), "\(result.stderr)")
        }
    }

    @Test("a JSON syntax error in a bridge config or a migrate endpoint file is reported by line and column")
    func syntaxErrorPosition() async throws {
        try await Self.withFolder { folder in
            let config = folder.appendingPathComponent("bridge.json")
            try Data("{\n  \"store\": {\"sqlite\": \"b.sqlite\"},\n  \"pairs\": [\n    {\"name\": \"x\",, }\n  ]\n}\n".utf8).write(to: config)
            let bridge = try await Self.run(["bridge", "--config", config.path])
            #expect(bridge.status == 2)
            #expect(bridge.stderr.contains("config: is not valid JSON: expected key at line 4, column 18"), "\(bridge.stderr)")
            #expect(!bridge.stderr.contains("offset"), "\(bridge.stderr)")

            let endpoint = folder.appendingPathComponent("from.json")
            try Data("{\n\t\"adapter\": \"xmtp\",\n\t\"url\": \"http://127.0.0.1:9\"\n\t\"inbox\": \"m\"\n}".utf8).write(to: endpoint)
            let migrate = try await Self.run(["migrate", "--from", endpoint.path, "--to", "{\(Self.supabase)}"])
            #expect(migrate.status == 2)
            #expect(migrate.stderr.contains("--from: is not valid JSON: expected ',' or '}' at line 4, column 2"), "\(migrate.stderr)")
        }
    }
}
