import Foundation
import SwitchboardCore
import SupabaseProtocol
import SwitchboardNet
import SwitchboardPostgres
import Testing
import TestSupport

/// `switchboard serve supabase` as an operator runs it: one ready line, requests served, a clean stop on SIGTERM.
@Suite("switchboard serve supabase", .serialized)
struct ServeCommandTests {
    private static let secret = "serve-command-test-secret-0123456789abcdef"

    @Test("prints one listening line, serves REST, and on SIGTERM stops PostgreSQL and exits 0")
    func servesAndStopsCleanly() async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-serve-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: root) }
        let child = try SwitchboardChild.start(["serve", "supabase", "--port", "0", "--data-dir", root.path,
                                                "--jwt-secret", Self.secret, "--jwt-expiry", "120"])
        defer { child.killIfRunning() }
        let (first, base) = try await child.listening()

        let token = JWTSigner(secret: Self.secret).sign(claims: ["role": "service_role",
                                                                  "exp": .int(Int64(Date().timeIntervalSince1970) + 600)])
        let client = HTTPClient()
        var request = HTTPRequest(method: .get, url: base.appendingPathComponent("rest/v1/conversations"))
        request.headers.add("apikey", token)
        request.headers.add("Authorization", "Bearer \(token)")
        let response = try await client.send(request)
        #expect(response.status == 200)
        // --jwt-expiry sets the lifetime of the tokens /auth/v1 issues.
        var signUp = HTTPRequest(method: .post, url: base.appendingPathComponent("auth/v1/signup"),
                                 body: Data(#"{"email":"cli@example.com","password":"cli-password"}"#.utf8))
        signUp.headers.add("apikey", token)
        signUp.headers.add("Content-Type", "application/json")
        let session = JSONValue.parseOrNil(try await client.send(signUp).body)
        #expect(session?["expires_in"]?.intValue == 120, "\(String(describing: session))")

        #expect(await child.terminate(within: .seconds(30)), "serve did not exit within 30 s of SIGTERM")
        #expect(child.process.terminationStatus == 0)
        #expect(child.lines.allLines() == [first], "serve printed more than the one ready line")
        let pidFile = root.appendingPathComponent("postgres/postmaster.pid").path
        #expect(!FileManager.default.fileExists(atPath: pidFile), "the private PostgreSQL cluster was left running")
    }

    @Test("a missing data directory or a short secret is a usage error (status 2) that names the option")
    func usageErrors() async throws {
        for (arguments, expected) in [(["serve", "supabase", "--jwt-secret", Self.secret], "--data-dir"),
                                      (["serve", "supabase", "--data-dir", "/tmp/x", "--jwt-secret", "short"], "--jwt-secret"),
                                      (["serve", "supabase", "--data-dir", "/tmp/x", "--jwt-secret", Self.secret, "--port", "70000"], "--port"),
                                      (["serve", "supabase", "--data-dir", "/tmp/x", "--jwt-secret", Self.secret, "--jwt-expiry", "5"], "--jwt-expiry"),
                                      (["serve", "supabase", "--data-dir", "/tmp/x", "--jwt-secret", Self.secret, "--auth-rate-limit", "-1"], "--auth-rate-limit"),
                                      (["serve", "supabase", "--data-dir", "/tmp/x", "--jwt-secret", Self.secret, "--auth-rate-limit", "lots"], "--auth-rate-limit"),
                                      (["serve", "nosuch"], "unknown backend")] {
            let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(expected), "\(arguments): \(result.stderr)")
        }
    }
}

/// `--sql` files and `--database-url`: extra schema on top of the chat schema, and an existing database.
@Suite("serve supabase: extra SQL and an existing database", .serialized)
struct ServeOptionsTests {
    @Test("an extra --sql file adds a table that REST serves at once; a failing file stops start-up and names itself")
    func extraSQL() async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-sql-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: root) }
        let good = root.appendingPathComponent("notes.sql")
        try """
            CREATE TABLE IF NOT EXISTS public.notes (id bigint PRIMARY KEY, text text NOT NULL);
            GRANT SELECT, INSERT ON public.notes TO service_role;
            INSERT INTO public.notes VALUES (1, 'from the sql file') ON CONFLICT DO NOTHING;
            """.write(to: good, atomically: true, encoding: .utf8)
        let server = try await SupabaseTestServer.start(directory: root.appendingPathComponent("a")) {
            $0.extraSQLFiles = [good]
        }
        let response = try await HTTPClient().send(HTTPRequest(method: .get,
            url: try #require(URL(string: "\(server.baseURL)/rest/v1/notes?select=text")),
            headers: ["apikey": server.serviceKey, "Authorization": "Bearer \(server.serviceKey)"]))
        await server.stop()
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == #"[{"text":"from the sql file"}]"#)

        let bad = root.appendingPathComponent("broken.sql")
        try "CREATE TABLE oops (".write(to: bad, atomically: true, encoding: .utf8)
        let failure = await #expect(throws: (any Error).self) {
            let server = try await SupabaseTestServer.start(directory: root.appendingPathComponent("b")) {
                $0.extraSQLFiles = [bad]
            }
            await server.stop()
        }
        #expect(String(describing: failure).contains("broken.sql"), "\(String(describing: failure))")
    }

    @Test("`--sql a.sql b.sql` applies both in order through the command; the failing second one is named, status 1")
    func severalSQLFilesOnTheCommandLine() async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-sqlcli-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: root) }
        let first = root.appendingPathComponent("first.sql"), second = root.appendingPathComponent("second.sql")
        try "CREATE TABLE IF NOT EXISTS public.first_table (id int PRIMARY KEY);".write(to: first, atomically: true, encoding: .utf8)
        try "SELECT * FROM public.first_table; SELECT nonsense FROM nowhere;".write(to: second, atomically: true, encoding: .utf8)
        let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path,
            ["serve", "supabase", "--data-dir", root.appendingPathComponent("data").path,
             "--jwt-secret", "serve-command-test-secret-0123456789abcdef", "--sql", first.path, second.path],
            timeout: .seconds(60))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("second.sql"), "\(result.stderr)")
        #expect(!result.stderr.contains("first.sql"), "the first file applied cleanly: \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("data/postgres/postmaster.pid").path),
                "the private cluster was left running after a failed start")
    }

    @Test("with a database URL the server uses that database and starts no cluster of its own")
    func existingDatabase() async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-dburl-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: root) }
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("external"))
        let url = try await offCooperativePool { try cluster.start() }
        defer { try? cluster.stop() }
        let server = try await SupabaseTestServer.start(directory: root.appendingPathComponent("server")) {
            $0.databaseURL = url
        }
        let ownCluster = FileManager.default.fileExists(atPath: root.appendingPathComponent("server/postgres").path)
        let tables = try await server.sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = 'messages'")
        await server.stop()
        #expect(!ownCluster, "a private cluster was created although a database URL was given")
        #expect(tables.rows == [["1"]])
        let connection = try PostgresConnection(url: url)
        #expect(try connection.query("SELECT count(*) FROM public.conversations").rows == [["0"]])
        connection.close()
        _ = try? await offCooperativePool { try cluster.stop() }
    }
}
