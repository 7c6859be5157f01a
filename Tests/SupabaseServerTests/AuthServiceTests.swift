import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet
import Testing

/// `/auth/v1` over HTTP: sign-up, password and refresh grants, the user, sign-out, and tokens that REST accepts.
@Suite("Auth API over HTTP", .serialized, .supabaseServer)
struct AuthServiceTests {
    /// Sends `method /auth/v1/<path>` with the anon key and, when given, a user's bearer token.
    private static func send(_ server: SupabaseTestServer, _ method: HTTPMethod, _ path: String, bearer: String? = nil,
                             apikey: String? = "", body: JSONValue? = nil) async throws -> (status: Int, json: JSONValue?) {
        var headers = HTTPHeaders()
        if let key = apikey == "" ? server.anonKey : apikey { headers.add("apikey", key) }
        if let bearer { headers.add("Authorization", "Bearer \(bearer)") }
        if body != nil { headers.add("Content-Type", "application/json") }
        let url = try #require(URL(string: server.baseURL + "/auth/v1/" + path))
        let response = try await HTTPClient().send(HTTPRequest(method: method, url: url, headers: headers,
                                                               body: body.map { Data($0.serialized.utf8) }))
        return (response.status, JSONValue.parseOrNil(response.body))
    }

    private static func credentials(_ email: String, _ password: String) -> JSONValue {
        .object([("email", .string(email)), ("password", .string(password))])
    }

    @Test("sign-up returns a session whose token acts as the user under RLS; passwords and refresh tokens are stored hashed")
    func signUpAndUseTheToken() async throws {
        let server = try SupabaseTestServer.required()
        let signUp = try await Self.send(server, .post, "signup", body: .object([
            ("email", .string("Dora@Example.com")), ("password", .string("correct horse")),
            ("data", .object([("name", .string("Dora"))])),
        ]))
        #expect(signUp.status == 200, "\(String(describing: signUp.json))")
        let session = try #require(signUp.json)
        let userID = try #require(session["user"]?["id"]?.stringValue)
        let token = try #require(session["access_token"]?.stringValue)
        let refresh = try #require(session["refresh_token"]?.stringValue)
        #expect(session["user"]?["email"] == .string("dora@example.com"))
        #expect(session["user"]?["user_metadata"]?["name"] == .string("Dora"))
        #expect(session["expires_in"]?.intValue == 3600)
        let claims = try server.context.signer.verify(token)
        #expect(claims.sub == userID)
        #expect(claims.effectiveRole == .authenticated)

        // The token is a user's like any other: RLS sees auth.uid() = the new user's ID.
        let conversation = try await RestSeed.conversation(server, members: [userID])
        let other = try await RestSeed.conversation(server, members: ["someone-else"])
        try await RestSeed.message(server, conversation: conversation, sender: userID, body: "mine")
        try await RestSeed.message(server, conversation: other, sender: "someone-else", body: "theirs")
        let rows = try await RestTestClient(server: server).send(.get, "messages", query: [("select", "body")], token: token)
        #expect(rows.strings("body") == ["mine"])

        let stored = try await server.sql("SELECT encrypted_password FROM auth.users WHERE id = $1::uuid", [userID])
        let hash = try #require(stored.rows.first?.first ?? nil)
        #expect(hash.hasPrefix("$2a$10$") && !hash.contains("correct horse"), "a bcrypt hash")
        let tokens = try await server.sql("SELECT token_hash FROM auth.refresh_tokens")
        #expect(!tokens.rows.contains { $0.first == refresh }, "refresh tokens are stored as digests")

        let again = try await Self.send(server, .post, "signup", body: Self.credentials("dora@example.com", "other password"))
        #expect(again.status == 422)
        #expect(again.json?["error_code"] == .string("user_already_exists"))
        let weak = try await Self.send(server, .post, "signup", body: Self.credentials("eve@example.com", "12345"))
        #expect(weak.json?["error_code"] == .string("weak_password"))
        let noKey = try await Self.send(server, .post, "signup", apikey: nil, body: Self.credentials("eve@example.com", "123456"))
        #expect(noKey.status == 401)
        let huge = try await Self.send(server, .post, "signup", body: .object([
            ("email", .string("eve@example.com")), ("password", .string("eve-password")),
            ("data", .object([("blob", .string(String(repeating: "x", count: 70_000)))])),
        ]))
        #expect(huge.status == 413)
    }

    @Test("password sign-in, the same refusal for a wrong password and an unknown email; user reads and updates")
    func signInAndUser() async throws {
        let server = try SupabaseTestServer.required()
        _ = try await Self.send(server, .post, "signup", body: Self.credentials("finn@example.com", "finn-password"))
        let wrong = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials("finn@example.com", "nope-nope"))
        let unknown = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials("nobody@example.com", "nope-nope"))
        #expect(wrong.status == 400)
        #expect(wrong.json == unknown.json)
        #expect(wrong.json?["error_code"] == .string("invalid_credentials"))
        let signIn = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials(" FINN@example.com", "finn-password"))
        #expect(signIn.status == 200)
        let token = try #require(signIn.json?["access_token"]?.stringValue)
        #expect(signIn.json?["user"]?["last_sign_in_at"]?.stringValue != nil)

        let user = try await Self.send(server, .get, "user", bearer: token)
        #expect(user.status == 200)
        #expect(user.json?["email"] == .string("finn@example.com"))
        let updated = try await Self.send(server, .put, "user", bearer: token, body: .object([
            ("data", .object([("theme", .string("dark"))])), ("password", .string("new-finn-password")),
        ]))
        #expect(updated.json?["user_metadata"]?["theme"] == .string("dark"))
        #expect(try await Self.send(server, .post, "token?grant_type=password",
                                    body: Self.credentials("finn@example.com", "finn-password")).status == 400)
        #expect(try await Self.send(server, .post, "token?grant_type=password",
                                    body: Self.credentials("finn@example.com", "new-finn-password")).status == 200)
        // A key is not a user: /user needs a user's token.
        #expect(try await Self.send(server, .get, "user", bearer: server.anonKey).status == 403)
    }

    @Test("refresh tokens rotate; a used one presented again ends the session; sign-out ends sessions by scope")
    func refreshAndSignOut() async throws {
        let server = try SupabaseTestServer.required()
        let first = try await Self.send(server, .post, "signup", body: Self.credentials("gus@example.com", "gus-password"))
        let firstRefresh = try #require(first.json?["refresh_token"]?.stringValue)
        let rotated = try await Self.send(server, .post, "token?grant_type=refresh_token",
                                          body: .object([("refresh_token", .string(firstRefresh))]))
        #expect(rotated.status == 200)
        let secondRefresh = try #require(rotated.json?["refresh_token"]?.stringValue)
        #expect(secondRefresh != firstRefresh)
        let replay = try await Self.send(server, .post, "token?grant_type=refresh_token",
                                         body: .object([("refresh_token", .string(firstRefresh))]))
        #expect(replay.json?["error_code"] == .string("refresh_token_already_used"))
        // The replay ended the session: its newest token is gone too, and so is the session for /user.
        let afterReplay = try await Self.send(server, .post, "token?grant_type=refresh_token",
                                              body: .object([("refresh_token", .string(secondRefresh))]))
        #expect(afterReplay.json?["error_code"] == .string("refresh_token_not_found"))
        let ended = try await Self.send(server, .get, "user", bearer: try #require(rotated.json?["access_token"]?.stringValue))
        #expect(ended.json?["error_code"] == .string("session_not_found"))

        // Two sessions; `others` ends the other, `local` this one.
        let one = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials("gus@example.com", "gus-password"))
        let two = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials("gus@example.com", "gus-password"))
        let oneToken = try #require(one.json?["access_token"]?.stringValue), twoToken = try #require(two.json?["access_token"]?.stringValue)
        #expect(try await Self.send(server, .post, "logout?scope=others", bearer: oneToken).status == 204)
        #expect(try await Self.send(server, .get, "user", bearer: twoToken).status == 403)
        #expect(try await Self.send(server, .get, "user", bearer: oneToken).status == 200)
        #expect(try await Self.send(server, .post, "logout?scope=local", bearer: oneToken).status == 204)
        #expect(try await Self.send(server, .get, "user", bearer: oneToken).status == 403)
        let oneRefresh = try #require(one.json?["refresh_token"]?.stringValue)
        #expect(try await Self.send(server, .post, "token?grant_type=refresh_token",
                                    body: .object([("refresh_token", .string(oneRefresh))])).status == 400)
    }

    @Test("sign-ups and sign-ins beyond the per-IP limit get GoTrue's 429; reads and refreshes do not count against it")
    func rateLimited() async throws {
        let server = try await SupabaseTestServer.start { $0.authRateLimit = 2 }
        do {
            let first = try await Self.send(server, .post, "signup", body: Self.credentials("hal@example.com", "hal-password"))
            #expect(first.status == 200)
            let wrong = try await Self.send(server, .post, "token?grant_type=password", body: Self.credentials("hal@example.com", "nope-nope"))
            #expect(wrong.status == 400, "a refused password still counts, but is answered")
            let limited = try await Self.send(server, .post, "token?grant_type=password",
                                              body: Self.credentials("hal@example.com", "hal-password"))
            #expect(limited.status == 429)
            #expect(limited.json?["error_code"]?.stringValue == "over_request_rate_limit")
            #expect(try await Self.send(server, .post, "signup", body: Self.credentials("ida@example.com", "ida-password")).status == 429)
            // Reads are not limited, and refreshes have a bucket of their own (five times the limit).
            #expect(try await Self.send(server, .get, "settings").status == 200)
            let refreshToken = try #require(first.json?["refresh_token"]?.stringValue)
            #expect(try await Self.send(server, .post, "token?grant_type=refresh_token",
                                        body: .object([("refresh_token", .string(refreshToken))])).status == 200)
            let stored = try await server.sql("SELECT count(*) FROM auth.users")
            #expect(stored.rows == [["1"]], "a refused sign-up created a user")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("the official supabase Python client signs up, signs in, writes as the user, refreshes and signs out")
    func officialPythonClient() async throws {
        let server = try SupabaseTestServer.required()
        let result = try await PythonFixture.run("auth_client.py", [server.baseURL], environment: [
            "SUPABASE_ANON_KEY": server.anonKey, "SUPABASE_SERVICE_KEY": server.serviceKey,
        ])
        #expect(result.status == 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        #expect(result.stdout.contains(#""ok": true"#), "\(result.stdout)")
    }
}
