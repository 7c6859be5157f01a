import SwitchboardCore
import Foundation
import SupabaseProtocol
import SupabaseServer
import SwitchboardPostgres
import Testing
import TestSupport

/// One running Supabase-like server (private PostgreSQL cluster included) for a whole suite.
struct SupabaseTestServer: Sendable {
    @TaskLocal static var current: SupabaseTestServer?

    /// The secret every test token is signed with.
    static let jwtSecret = "switchboard-test-secret-with-at-least-32-characters"

    let server: SupabaseServer
    let port: Int
    let root: URL

    /// `http://127.0.0.1:PORT`.
    var baseURL: String { "http://127.0.0.1:\(port)" }

    /// The shared context (pool, signer) of the running server.
    var context: SupabaseServerContext { server.context! }

    /// Starts a server on a fresh private cluster under `/tmp`; fails (never skips) when that is impossible.
    static func start(directory: URL? = nil,
                      configure: (inout SupabaseServerConfiguration) -> Void = { _ in }) async throws -> SupabaseTestServer {
        let root = directory ?? URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-supabase-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        var configuration = SupabaseServerConfiguration(dataDirectory: root, jwtSecret: jwtSecret)
        configure(&configuration)
        let server = SupabaseServer(configuration: configuration)
        do {
            let port = try await server.start()
            return SupabaseTestServer(server: server, port: port, root: root)
        } catch {
            await server.stop()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// Stops the server and cluster and removes the directory.
    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// The suite's server; a failure here names what is missing.
    static func required() throws -> SupabaseTestServer {
        guard let current else { throw TestSetupError("the suite must carry the .supabaseServer trait") }
        return current
    }

    /// A token for `role` (and `sub` when given), valid for `lifetime` seconds (negative: already expired).
    func token(role: String, sub: String? = nil, lifetime: TimeInterval = 3600) -> String {
        var claims: [String: JSONValue] = ["role": .string(role), "exp": .int(Int64(Date().timeIntervalSince1970 + lifetime))]
        if let sub { claims["sub"] = .string(sub) }
        return context.signer.sign(claims: claims)
    }

    /// The anon key, as a Supabase project hands it out.
    var anonKey: String { token(role: "anon") }
    /// The service-role key.
    var serviceKey: String { token(role: "service_role") }

    /// Runs SQL as the database superuser (set-up only), returning the rows.
    @discardableResult
    func sql(_ statement: String, _ parameters: [String?] = []) async throws -> PostgresResult {
        try await context.pool.withConnection { try $0.query(statement, parameters) }
    }
}

/// Provides one running server to every test of the suite it is attached to.
struct WithSupabaseServer: SuiteTrait, TestScoping {
    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?,
                      performing function: @Sendable () async throws -> Void) async throws {
        let server = try await SupabaseTestServer.start()
        do {
            try await SupabaseTestServer.$current.withValue(server) { try await function() }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}

extension Trait where Self == WithSupabaseServer {
    /// Runs the suite against one private Supabase-like server.
    static var supabaseServer: WithSupabaseServer { WithSupabaseServer() }
}

/// Runs the Python fixtures (the official Supabase clients) from the venv `make test` prepares.
enum PythonFixture {
    /// Runs `Fixtures/<name>` with `arguments` and `environment`, killing it after `timeout`.
    static func run(_ name: String, _ arguments: [String] = [], environment: [String: String] = [:],
                    timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        let python = try TestPython.interpreter(needing: "the official supabase, postgrest, realtime and storage3 packages")
        return try await ChildProcess.runDetached(python, [TestPython.fixture(name)] + arguments, environment: environment,
                                                  timeout: timeout)
    }
}
