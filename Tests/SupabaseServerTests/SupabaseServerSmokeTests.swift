import Foundation
import Synchronization
import SupabaseServer
import SwitchboardCore
import SwitchboardNet
import Testing

/// The server starts on a private cluster, applies the chat schema and answers on loopback.
@Suite("Supabase-like server lifecycle", .serialized, .supabaseServer)
struct SupabaseServerSmokeTests {
    @Test("starts a private cluster, applies the chat schema and serves on loopback")
    func startsAndServes() async throws {
        let server = try SupabaseTestServer.required()
        let tables = try await server.sql("SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename = ANY($1)",
                                          ["{conversations,members,messages,reactions,receipts}"])
        #expect(tables.rows.first?.first == "5")
        #expect(server.port > 0)
    }
}

/// `serve supabase --verbose`: an access-log line per request, and never a secret in it.
@Suite("Supabase-like server access log", .serialized)
struct SupabaseServerAccessLogTests {
    @Test("each request logs its method, path, status and time; no query string, token, key or password")
    func accessLog() async throws {
        let lines = CollectingLogHandler()
        let server = try await SupabaseTestServer.start { $0.logger = lines.logger(label: "supabase") }
        do {
            let http = HTTPClient()
            let service = server.serviceKey
            func get(_ path: String) async throws -> Int {
                var headers = HTTPHeaders()
                headers.add("apikey", service)
                headers.add("Authorization", "Bearer \(service)")
                let url = try #require(URL(string: server.baseURL + path))
                return try await http.send(HTTPRequest(method: .get, url: url, headers: headers)).status
            }
            #expect(try await get("/rest/v1/messages?select=id&limit=1") == 200)
            #expect(try await get("/storage/v1/object/sign/attachments/a.png?token=not.a-real.signature") == 400)
            var headers = HTTPHeaders()
            headers.add("apikey", server.anonKey)
            headers.add("Content-Type", "application/json")
            let signUp = try await http.send(HTTPRequest(method: .post, url: try #require(URL(string: server.baseURL + "/auth/v1/signup")),
                                                         headers: headers,
                                                         body: Data(#"{"email":"log@example.com","password":"s3cret-passw0rd"}"#.utf8)))
            #expect(signUp.status == 200)
            let logged = lines.records.map { LogLine(date: Date(), record: $0).text }.joined(separator: "\n")
            #expect(lines.messages(at: .info).contains { $0.hasPrefix("GET /rest/v1/messages 200 ") && $0.hasSuffix(" ms") }, "\(logged)")
            #expect(lines.messages(at: .info).contains { $0.hasPrefix("GET /storage/v1/object/sign/attachments/a.png 400 ") }, "\(logged)")
            #expect(lines.messages(at: .info).contains { $0.hasPrefix("POST /auth/v1/signup 200 ") }, "\(logged)")
            for secret in [service, server.anonKey, "not.a-real.signature", "s3cret-passw0rd", "select=id", "Bearer",
                           SupabaseTestServer.jwtSecret, "access_token"] {
                #expect(!logged.contains(secret), "the log shows \(secret)")
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
