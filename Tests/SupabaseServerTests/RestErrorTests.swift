import Foundation
import SupabaseProtocol
import SupabaseServer
import SwitchboardNet
import Testing

/// `/rest/v1` refusals: authentication, parse errors, unknown tables/columns, limits, SQLSTATE mapping and RLS.
@Suite("REST gateway: errors, authentication and row-level security", .serialized, .supabaseServer)
struct RestErrorTests {
    /// Expects a PostgREST error answer with `status` and `code` (and a JSON error content type).
    private func expectError(_ reply: RestTestClient.Reply, _ status: Int, _ code: String,
                             sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.status == status, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.code == code, "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.header("Content-Type") == "application/json; charset=utf-8", sourceLocation: sourceLocation)
        let keys = reply.json?.objectValue?.keys.sorted()
        #expect(keys == ["code", "details", "hint", "message"], "\(reply.text)", sourceLocation: sourceLocation)
    }

    @Test("missing, malformed, expired and forged tokens are 401 PGRST301")
    func authentication() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let forged = JWTSigner(secret: "another-secret-that-is-also-long-enough-123")
            .sign(claims: ["role": "service_role", "exp": .int(Int64(Date().timeIntervalSince1970 + 600))])
        let expired = server.token(role: "authenticated", sub: "alice", lifetime: -300)
        for token in ["not-a-jwt", "a.b.c", expired, forged] {
            let reply = try await client.send(.get, "messages", token: token)
            expectError(reply, 401, "PGRST301")
            #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
        }
        let noKey = try await client.send(.get, "messages", token: nil, apikey: "")
        expectError(noKey, 401, "PGRST301")
        let badScheme = try await client.send(.get, "messages", token: nil, headers: [("Authorization", "Basic abc")])
        expectError(badScheme, 401, "PGRST301")
        let forgedKey = try await client.send(.get, "conversations", token: nil, apikey: forged)
        expectError(forgedKey, 401, "PGRST301")
    }

    @Test("unparseable query strings are 400 PGRST100; bad bodies 400 PGRST102; oversize 413")
    func requestErrors() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let token = server.serviceKey
        for query in [[("body", "almost.1")], [("body", "eq")], [("or", "(body.eq.1")], [("order", "body.sideways")],
                      [("limit", "-1")], [("select", "messages(*")], [("body", "is.maybe")]] {
            expectError(try await client.send(.get, "messages", query: query, token: token), 400, "PGRST100")
        }
        for body in ["", "{", "[1, 2]", "\"text\""] {
            expectError(try await client.send(.post, "messages", token: token, body: body), 400, "PGRST102")
        }
        expectError(try await client.send(.patch, "messages", query: [("id", "eq.\(UUID().uuidString)")], token: token,
                                          body: "[]"), 400, "PGRST102")
        let limit = server.context.configuration.maxRESTBodySize
        let oversize = try await client.send(.post, "messages", token: token,
                                             rawBody: Data(repeating: UInt8(ascii: " "), count: limit + 1))
        #expect(oversize.status == 413, "\(oversize.text)")
        let range = try await client.send(.get, "messages", token: token, headers: [("Range", "5-2")])
        expectError(range, 416, "PGRST103")
        expectError(try await client.send(.put, "messages", token: token, body: "{}"), 405, "PGRST117")
        expectError(try await client.send(.get, "messages", token: token, headers: [("Accept-Profile", "private")]),
                    406, "PGRST106")
        expectError(try await client.send(.get, "rpc/anything", token: token), 404, "PGRST202")
        expectError(try await client.send(.get, "rpc/a/b", token: token), 404, "PGRST125")
        expectError(try await client.send(.get, "deep/path", token: token), 404, "PGRST125")
    }

    @Test("unknown tables are 404 PGRST205 until created; unknown columns 400 (42703 / PGRST204)")
    func unknownNames() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let token = server.serviceKey
        let missing = try await client.send(.get, "mesages", token: token)
        expectError(missing, 404, "PGRST205")
        #expect(missing.message == "Could not find the table 'public.mesages' in the schema cache")
        #expect(missing.json?["hint"]?.stringValue == "Perhaps you meant the table 'public.messages'")

        expectError(try await client.send(.get, "rest_notes", token: token), 404, "PGRST205")
        try await RestSeed.execute(server, """
            CREATE TABLE public.rest_notes (id serial PRIMARY KEY, note text NOT NULL);
            GRANT SELECT, INSERT ON public.rest_notes TO service_role;
            GRANT USAGE ON SEQUENCE public.rest_notes_id_seq TO service_role;
            """)
        let created = try await client.send(.post, "rest_notes", token: token,
                                            headers: [("Prefer", "return=representation")], body: #"{"note":"new"}"#)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.json == [["id": 1, "note": "new"]])

        let column = try await client.send(.get, "messages", query: [("select", "id,nope")], token: token)
        expectError(column, 400, "42703")
        #expect(column.message == "column messages.nope does not exist")
        expectError(try await client.send(.get, "messages", query: [("nope", "eq.1")], token: token), 400, "42703")
        expectError(try await client.send(.get, "messages", query: [("order", "nope.desc")], token: token), 400, "42703")
        let key = try await client.send(.post, "messages", token: token, body: #"{"body":"x","colour":"red"}"#)
        expectError(key, 400, "PGRST204")
        #expect(key.message == "Could not find the 'colour' column of 'messages' in the schema cache")
        expectError(try await client.send(.patch, "messages", query: [("id", "eq.\(UUID().uuidString)")], token: token,
                                          body: #"{"colour":"red"}"#), 400, "PGRST204")
    }

    @Test("PostgreSQL errors map to PostgREST's statuses with the SQLSTATE as code")
    func errorMapping() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let service = server.serviceKey
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        let message = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "x")

        let duplicate = try await client.send(.post, "members", token: service,
                                              body: #"{"conversation_id":"\#(conversation)","user_id":"alice"}"#)
        expectError(duplicate, 409, "23505")
        #expect(duplicate.json?["details"]?.stringValue?.contains("already exists") == true)
        expectError(try await client.send(.post, "members", token: service,
                                          body: #"{"conversation_id":"\#(UUID().uuidString)","user_id":"x"}"#), 409, "23503")
        expectError(try await client.send(.post, "messages", token: service,
                                          body: #"{"conversation_id":"\#(conversation)"}"#), 400, "23502")
        expectError(try await client.send(.post, "receipts", token: service,
                                          body: #"{"message_id":"\#(message)","user_id":"alice","state":"lost"}"#),
                    400, "23514")
        expectError(try await client.send(.get, "messages", query: [("id", "eq.not-a-uuid")], token: service), 400, "22P02")
        expectError(try await client.send(.get, "messages", query: [("created_at", "gt.not-a-date")], token: service),
                    400, "22007")
        expectError(try await client.send(.get, "messages", query: [("id", "like.abc*")], token: service), 404, "42883")

        try await RestSeed.execute(server, """
            CREATE TABLE public.rest_errors (code text);
            CREATE FUNCTION public.rest_errors_raise() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF NEW.code = 'plain' THEN
                RAISE EXCEPTION 'plain raise from a trigger';
              END IF;
              RAISE EXCEPTION 'raised %', NEW.code USING ERRCODE = NEW.code, DETAIL = 'd', HINT = 'h';
            END
            $$;
            CREATE TRIGGER rest_errors_raise BEFORE INSERT ON public.rest_errors
              FOR EACH ROW EXECUTE FUNCTION public.rest_errors_raise();
            GRANT INSERT ON public.rest_errors TO anon, authenticated, service_role;
            """)
        let raised: [(String, Int)] = [("22023", 400), ("42703", 400), ("42883", 404), ("42P01", 404), ("40001", 500),
                                       ("XX000", 500), ("53300", 503), ("23505", 409), ("42501", 403), ("P0002", 500)]
        for (code, status) in raised {
            let reply = try await client.send(.post, "rest_errors", token: service, body: #"{"code":"\#(code)"}"#)
            expectError(reply, status, code)
            #expect(reply.message == "raised \(code)")
            #expect(reply.json?["details"]?.stringValue == "d")
            #expect(reply.json?["hint"]?.stringValue == "h")
        }
        let plain = try await client.send(.post, "rest_errors", token: service, body: #"{"code":"plain"}"#)
        expectError(plain, 400, "P0001")
        #expect(plain.message == "plain raise from a trigger")
        let anonDenied = try await client.send(.post, "rest_errors", token: server.anonKey, body: #"{"code":"42501"}"#)
        expectError(anonDenied, 401, "42501")
    }

    @Test("RLS: a non-member sees nothing and cannot write; anon is 401; only the sender edits, within the window")
    func rowLevelSecurity() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice", "bob"])
        let aliceMessage = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "hi")
        let oldMessage = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "old",
                                                    age: "20 minutes")
        let alice = server.token(role: "authenticated", sub: "alice")
        let bob = server.token(role: "authenticated", sub: "bob")
        let mallory = server.token(role: "authenticated", sub: "mallory")
        let scope = [("conversation_id", "eq.\(conversation)")]

        let outsider = try await client.send(.get, "messages", query: scope, token: mallory,
                                             headers: [("Prefer", "count=exact")])
        #expect(outsider.status == 200)
        #expect(outsider.text == "[]")
        #expect(outsider.header("Content-Range") == "*/0")
        let outsiderConversation = try await client.send(.get, "conversations", query: [("id", "eq.\(conversation)")],
                                                         token: mallory)
        #expect(outsiderConversation.text == "[]")
        let intrusion = try await client.send(.post, "messages", token: mallory, body: """
            {"conversation_id":"\(conversation)","sender_id":"mallory","body":"let me in"}
            """)
        expectError(intrusion, 403, "42501")
        #expect(intrusion.message?.contains("row-level security") == true)
        let spoof = try await client.send(.post, "messages", token: bob, body: """
            {"conversation_id":"\(conversation)","sender_id":"alice","body":"as alice"}
            """)
        expectError(spoof, 403, "42501")
        let anonymous = try await client.send(.get, "messages", query: scope, token: server.anonKey)
        expectError(anonymous, 401, "42501")
        let anonWrite = try await client.send(.post, "messages", token: nil, body: """
            {"conversation_id":"\(conversation)","sender_id":"anon","body":"x"}
            """)
        expectError(anonWrite, 401, "42501")
        let notGranted = try await client.send(.post, "conversations", token: alice, body: #"{"title":"mine"}"#)
        expectError(notGranted, 403, "42501")

        let member = try await client.send(.get, "messages", query: scope + [("select", "body"), ("order", "created_at")],
                                           token: bob)
        #expect(member.strings("body") == ["old", "hi"])

        let notSender = try await client.send(.patch, "messages", query: [("id", "eq.\(aliceMessage)")], token: bob,
                                              headers: [("Prefer", "return=representation")], body: #"{"body":"bob was here"}"#)
        #expect(notSender.status == 200)
        #expect(notSender.text == "[]")
        let bobDelete = try await client.send(.delete, "messages", query: [("id", "eq.\(aliceMessage)")], token: bob)
        #expect(bobDelete.status == 204)
        let kept = try await server.sql("SELECT body FROM messages WHERE id = $1", [aliceMessage])
        #expect(kept.rows == [["hi"]])

        let ownEdit = try await client.send(.patch, "messages", query: [("id", "eq.\(aliceMessage)")], token: alice,
                                            body: #"{"body":"hi!"}"#)
        #expect(ownEdit.status == 204)
        let late = try await client.send(.patch, "messages", query: [("id", "eq.\(oldMessage)")], token: alice,
                                         body: #"{"body":"too late"}"#)
        expectError(late, 403, "42501")
        #expect(late.message == "messages can only be edited within 15 minutes of being sent")
        let edited = try await server.sql("SELECT body FROM messages WHERE id = ANY($1::uuid[]) ORDER BY body",
                                          ["{\(aliceMessage),\(oldMessage)}"])
        #expect(edited.rows == [["hi!"], ["old"]])

        let singular = try await client.send(.patch, "messages", query: scope, token: alice,
                                             headers: [("Accept", "application/vnd.pgrst.object+json")],
                                             body: #"{"metadata":{"x":1}}"#)
        expectError(singular, 406, "PGRST116")
        let rolledBack = try await server.sql("SELECT count(*) FROM messages WHERE conversation_id = $1 AND metadata ? 'x'",
                                              [conversation])
        #expect(rolledBack.rows == [["0"]])
    }
}
