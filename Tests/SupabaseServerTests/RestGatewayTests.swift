import SwitchboardCore
import Foundation
import SupabaseProtocol
import SupabaseServer
import SwitchboardNet
import Testing

/// A small HTTP client for `/rest/v1` in tests: builds encoded URLs, sends the key and token, decodes JSON.
struct RestTestClient: Sendable {
    /// One response, with helpers to read its JSON body and headers.
    struct Reply: Sendable {
        let status: Int
        let headers: HTTPHeaders
        let body: Data

        /// The body as text.
        var text: String { String(decoding: body, as: UTF8.self) }
        /// The body as JSON (nil when empty or not JSON).
        var json: JSONValue? { JSONValue.parseOrNil(body) }
        /// The rows of a JSON array body.
        var rows: [JSONValue] { json?.arrayValue ?? [] }
        /// The `code` of a PostgREST error body.
        var code: String? { json?["code"]?.stringValue }
        /// The `message` of a PostgREST error body.
        var message: String? { json?["message"]?.stringValue }
        /// One header's value.
        func header(_ name: String) -> String? { headers[name] }
        /// The string values of `column` in every row, in order.
        func strings(_ column: String) -> [String] { rows.compactMap { $0[column]?.stringValue } }
    }

    let server: SupabaseTestServer
    let http = HTTPClient()

    /// Query-item encoding: everything but unreserved characters and the PostgREST syntax that URLs allow.
    static let queryAllowed: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~(),*:")
        return set
    }()

    /// Sends `method` to `/rest/v1/<path>?<query>` as the holder of `token` (nil: no Authorization header).
    func send(_ method: HTTPMethod, _ path: String, query: [(String, String)] = [], token: String?,
              apikey: String? = nil, headers: [(String, String)] = [], body: String? = nil,
              rawBody: Data? = nil) async throws -> Reply {
        var url = server.baseURL + "/rest/v1/" + path
        if !query.isEmpty {
            url += "?" + query.map { name, value in
                (name.addingPercentEncoding(withAllowedCharacters: Self.queryAllowed) ?? name) + "="
                    + (value.addingPercentEncoding(withAllowedCharacters: Self.queryAllowed) ?? value)
            }.joined(separator: "&")
        }
        var fields = HTTPHeaders()
        fields.add("apikey", apikey ?? server.anonKey)
        if let token { fields.add("Authorization", "Bearer \(token)") }
        if body != nil || rawBody != nil { fields.add("Content-Type", "application/json") }
        for (name, value) in headers { fields.add(name, value) }
        let target = try #require(URL(string: url), "bad test URL \(url)")
        let request = HTTPRequest(method: method, url: target, headers: fields,
                                  body: rawBody ?? body.map { Data($0.utf8) }, timeout: .seconds(30))
        let response = try await http.send(request)
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }
}

/// Set-up helpers shared by the REST suites: conversations, members and messages inserted as the superuser.
enum RestSeed {
    /// A new conversation with `members`; returns its id.
    static func conversation(_ server: SupabaseTestServer, members: [String]) async throws -> String {
        let id = try #require(try await server.sql("INSERT INTO conversations (title) VALUES ('rest') RETURNING id")
            .rows.first?.first ?? nil)
        for member in members {
            try await server.sql("INSERT INTO members (conversation_id, user_id) VALUES ($1, $2)", [id, member])
        }
        return id
    }

    /// Runs several parameterless statements as the superuser (schema set-up for a test).
    static func execute(_ server: SupabaseTestServer, _ sql: String) async throws {
        _ = try await server.context.pool.withConnection { try $0.execute(sql) }
    }

    /// A message in `conversation` by `sender`, `age` old (an SQL interval); returns its id.
    @discardableResult
    static func message(_ server: SupabaseTestServer, conversation: String, sender: String, body: String,
                        age: String = "0 seconds") async throws -> String {
        try #require(try await server.sql("""
            INSERT INTO messages (conversation_id, sender_id, body, created_at)
            VALUES ($1, $2, $3, now() - $4::interval) RETURNING id
            """, [conversation, sender, body, age]).rows.first?.first ?? nil)
    }
}

/// `/rest/v1/<table>` reads and writes over HTTP against a real server, plus the official Python client.
@Suite("REST gateway: reads, writes, upserts", .serialized, .supabaseServer)
struct RestGatewayTests {
    @Test("filters, order, limit/offset, Range, Content-Range, count=exact, HEAD and single objects")
    func reads() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        for (index, body) in ["m1", "m2", "m3", "m4", "m5"].enumerated() {
            try await RestSeed.message(server, conversation: conversation, sender: "alice", body: body,
                                       age: "\(10 - index) minutes")
        }
        let alice = server.token(role: "authenticated", sub: "alice")
        let scope = ("conversation_id", "eq.\(conversation)")
        func bodies(_ query: [(String, String)], headers: [(String, String)] = []) async throws -> RestTestClient.Reply {
            try await client.send(.get, "messages", query: [scope, ("select", "body"), ("order", "created_at")] + query,
                                  token: alice, headers: headers)
        }

        let all = try await bodies([])
        #expect(all.status == 200)
        #expect(all.strings("body") == ["m1", "m2", "m3", "m4", "m5"])
        #expect(all.header("Content-Range") == "0-4/*")
        #expect(all.header("Content-Type") == "application/json; charset=utf-8")
        #expect(all.rows.first?.objectValue?.keys.sorted() == ["body"])

        let page = try await bodies([("limit", "2"), ("offset", "1")])
        #expect(page.status == 200)
        #expect(page.strings("body") == ["m2", "m3"])
        #expect(page.header("Content-Range") == "1-2/*")

        let counted = try await bodies([("limit", "2")], headers: [("Prefer", "count=exact")])
        #expect(counted.status == 206)
        #expect(counted.header("Content-Range") == "0-1/5")
        #expect(counted.header("Preference-Applied") == "count=exact")

        let everything = try await bodies([], headers: [("Prefer", "count=exact")])
        #expect(everything.status == 200)
        #expect(everything.header("Content-Range") == "0-4/5")

        let ranged = try await bodies([], headers: [("Range-Unit", "items"), ("Range", "1-3")])
        #expect(ranged.strings("body") == ["m2", "m3", "m4"])
        #expect(ranged.header("Content-Range") == "1-3/*")

        let empty = try await bodies([("body", "eq.nothing")])
        #expect(empty.status == 200 && empty.text == "[]")
        #expect(empty.header("Content-Range") == "*/*")
        let emptyCounted = try await bodies([("body", "eq.nothing")], headers: [("Prefer", "count=exact")])
        #expect(emptyCounted.header("Content-Range") == "*/0")

        let beyond = try await bodies([("offset", "9")], headers: [("Prefer", "count=exact")])
        #expect(beyond.status == 416)
        #expect(beyond.code == "PGRST103")

        let cases: [([(String, String)], [String])] = [
            ([("body", "neq.m2")], ["m1", "m3", "m4", "m5"]),
            ([("body", "gt.m3")], ["m4", "m5"]),
            ([("body", "gte.m3")], ["m3", "m4", "m5"]),
            ([("body", "lt.m2")], ["m1"]),
            ([("body", "lte.m2")], ["m1", "m2"]),
            ([("body", "like.m*")], ["m1", "m2", "m3", "m4", "m5"]),
            ([("body", "ilike.M4")], ["m4"]),
            ([("body", "in.(m1,m3,\"m,5\")")], ["m1", "m3"]),
            ([("body", "not.in.(m1,m3)")], ["m2", "m4", "m5"]),
            ([("edited_at", "is.null"), ("body", "not.eq.m1")], ["m2", "m3", "m4", "m5"]),
            ([("or", "(body.eq.m1,body.eq.m5)")], ["m1", "m5"]),
            ([("and", "(body.gte.m2,or(body.eq.m2,body.eq.m4))")], ["m2", "m4"]),
            ([("not.or", "(body.eq.m1,body.eq.m2)")], ["m3", "m4", "m5"]),
        ]
        for (query, expected) in cases {
            let reply = try await bodies(query)
            #expect(reply.status == 200, "\(query): \(reply.text)")
            #expect(reply.strings("body") == expected, "\(query)")
        }
        let descending = try await client.send(.get, "messages", query: [scope, ("select", "body,sender_id"),
                                                                          ("order", "body.desc.nullslast")], token: alice)
        #expect(descending.strings("body") == ["m5", "m4", "m3", "m2", "m1"])
        #expect(descending.rows.first?.objectValue?.keys.sorted() == ["body", "sender_id"])

        let head = try await client.send(.head, "messages", query: [scope], token: alice,
                                         headers: [("Prefer", "count=exact")])
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(head.header("Content-Range") == "0-4/5")

        let object = [("Accept", "application/vnd.pgrst.object+json")]
        let single = try await bodies([("body", "eq.m3")], headers: object)
        #expect(single.status == 200)
        #expect(single.json?["body"]?.stringValue == "m3")
        #expect(single.header("Content-Type") == "application/vnd.pgrst.object+json; charset=utf-8")
        let several = try await bodies([], headers: object)
        #expect(several.status == 406)
        #expect(several.code == "PGRST116")
        #expect(several.json?["details"]?.stringValue == "The result contains 5 rows")
    }

    @Test("POST inserts one object or an array; return=representation|minimal|headers-only; columns=")
    func inserts() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        let alice = server.token(role: "authenticated", sub: "alice")

        let one = try await client.send(.post, "messages", query: [("select", "body,sender_id,metadata,attachments")],
                                        token: alice, headers: [("Prefer", "return=representation")], body: """
            {"conversation_id":"\(conversation)","sender_id":"alice","body":"hello","metadata":{"k":"v"},"attachments":"note"}
            """)
        #expect(one.status == 201, "\(one.text)")
        #expect(one.header("Content-Type") == "application/json; charset=utf-8")
        #expect(one.header("Content-Range") == "*/*")
        #expect(one.header("Preference-Applied") == "return=representation")
        #expect(one.rows.count == 1)
        #expect(one.rows.first?["body"]?.stringValue == "hello")
        #expect(one.rows.first?["metadata"]?["k"]?.stringValue == "v")
        #expect(one.rows.first?["attachments"]?.stringValue == "note")

        let minimal = try await client.send(.post, "messages", token: alice, headers: [("Prefer", "return=minimal")],
                                            body: #"{"conversation_id":"\#(conversation)","sender_id":"alice","body":"quiet"}"#)
        #expect(minimal.status == 201)
        #expect(minimal.body.isEmpty)
        #expect(minimal.header("Content-Range") == "*/*")

        let bulk = try await client.send(.post, "messages", query: [("select", "body")], token: alice,
                                         headers: [("Prefer", "return=representation,count=exact")], body: """
            [{"conversation_id":"\(conversation)","sender_id":"alice","body":"b1"},
             {"conversation_id":"\(conversation)","sender_id":"alice","body":"b2"},
             {"conversation_id":"\(conversation)","sender_id":"alice","body":"b3"}]
            """)
        #expect(bulk.status == 201, "\(bulk.text)")
        #expect(bulk.strings("body") == ["b1", "b2", "b3"])
        #expect(bulk.header("Content-Range") == "*/3")
        #expect(bulk.header("Preference-Applied") == "return=representation, count=exact")

        let located = try await client.send(.post, "messages", token: alice, headers: [("Prefer", "return=headers-only")],
                                            body: #"{"conversation_id":"\#(conversation)","sender_id":"alice","body":"where"}"#)
        #expect(located.status == 201)
        #expect(located.body.isEmpty)
        let location = try #require(located.header("Location"))
        #expect(location.hasPrefix("/messages?id=eq."))
        let id = String(location.dropFirst("/messages?id=eq.".count))
        let stored = try await server.sql("SELECT body FROM messages WHERE id = $1", [id])
        #expect(stored.rows == [["where"]])

        let columns = try await client.send(.post, "messages", query: [("columns", "conversation_id,sender_id,body"),
                                                                        ("select", "body,metadata")],
                                            token: alice, headers: [("Prefer", "return=representation")], body: """
            [{"conversation_id":"\(conversation)","sender_id":"alice","body":"c1","ignored":1}]
            """)
        #expect(columns.status == 201, "\(columns.text)")
        #expect(columns.strings("body") == ["c1"])

        let single = try await client.send(.post, "messages", query: [("select", "body")], token: alice,
                                           headers: [("Prefer", "return=representation"),
                                                     ("Accept", "application/vnd.pgrst.object+json")],
                                           body: #"{"conversation_id":"\#(conversation)","sender_id":"alice","body":"solo"}"#)
        #expect(single.status == 201)
        #expect(single.json?["body"]?.stringValue == "solo")

        let total = try await server.sql("SELECT count(*) FROM messages WHERE conversation_id = $1", [conversation])
        #expect(total.rows == [["8"]])
    }

    @Test("upserts: ignore-duplicates returns only new rows ([] on replay), merge-duplicates updates; on_conflict")
    func upserts() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        let message = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "react")
        let alice = server.token(role: "authenticated", sub: "alice")
        let reaction = #"{"message_id":"\#(message)","user_id":"alice","symbol":"👍"}"#
        let ignore = [("Prefer", "return=representation,resolution=ignore-duplicates")]

        let first = try await client.send(.post, "reactions", token: alice, headers: ignore, body: reaction)
        #expect(first.status == 201, "\(first.text)")
        #expect(first.rows.count == 1)
        #expect(first.rows.first?["symbol"]?.stringValue == "👍")
        #expect(first.header("Preference-Applied") == "resolution=ignore-duplicates, return=representation")

        let replay = try await client.send(.post, "reactions", token: alice, headers: ignore, body: reaction)
        #expect(replay.status == 201)
        #expect(replay.text == "[]")

        let mixed = try await client.send(.post, "reactions", query: [("on_conflict", "message_id,user_id,symbol")],
                                          token: alice, headers: ignore,
                                          body: "[\(reaction),{\"message_id\":\"\(message)\",\"user_id\":\"alice\",\"symbol\":\"🎉\"}]")
        #expect(mixed.strings("symbol") == ["🎉"])

        let merge = [("Prefer", "return=representation,resolution=merge-duplicates")]
        let receipt = { (state: String) in #"{"message_id":"\#(message)","user_id":"alice","state":"\#(state)"}"# }
        let delivered = try await client.send(.post, "receipts", query: [("on_conflict", "message_id,user_id")],
                                              token: alice, headers: merge, body: receipt("delivered"))
        #expect(delivered.strings("state") == ["delivered"], "\(delivered.text)")
        let read = try await client.send(.post, "receipts", query: [("on_conflict", "message_id,user_id")],
                                         token: alice, headers: merge, body: receipt("read"))
        #expect(read.status == 201)
        #expect(read.strings("state") == ["read"])
        let stored = try await server.sql("SELECT state FROM receipts WHERE message_id = $1", [message])
        #expect(stored.rows == [["read"]])
    }

    @Test("bulk upserts as the adapter sends them: mixed key sets, duplicates ignored, RLS refuses the whole request")
    func bulkUpserts() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice", "bob"])
        let foreign = try await RestSeed.conversation(server, members: ["bob"])
        let alice = server.token(role: "authenticated", sub: "alice")
        let prefer = [("Prefer", "resolution=ignore-duplicates,return=representation")]
        let query = [("on_conflict", "id"), ("select", "id,created_at,body,metadata,reply_to,version")]
        func row(_ id: String, body: String, sender: String = "alice", in room: String? = nil) -> String {
            #"{"id":"\#(id)","conversation_id":"\#(room ?? conversation)","sender_id":"\#(sender)","body":"\#(body)","#
                + #""attachments":[],"metadata":{"k":"v \"q\""},"reply_to":null}"#
        }
        let ids = (0..<5).map { _ in UUID().uuidString.lowercased() }

        // Every row carries every key: the one-parameter recordset path; rows come back in order, versions ascending.
        let first = try await client.send(.post, "messages", query: query, token: alice, headers: prefer,
                                          body: "[" + ids[0..<3].enumerated().map { row($1, body: "m\($0)") }.joined(separator: ",") + "]")
        #expect(first.status == 201, "\(first.text)")
        #expect(first.strings("id") == Array(ids[0..<3]))
        #expect(first.strings("body") == ["m0", "m1", "m2"])
        #expect(first.rows.allSatisfy { $0["metadata"]?["k"]?.stringValue == "v \"q\"" && $0["reply_to"]?.isNull == true })
        let versions = first.rows.compactMap { $0["version"]?.intValue }
        #expect(versions.count == 3 && versions == versions.sorted() && Set(versions).count == 3)

        // A replay with two new rows: only the new ones come back; the stored rows stay as they were.
        let replay = try await client.send(.post, "messages", query: query, token: alice, headers: prefer,
                                           body: "[" + [row(ids[1], body: "changed"), row(ids[3], body: "m3"),
                                                        row(ids[0], body: "changed"), row(ids[4], body: "m4")]
                                               .joined(separator: ",") + "]")
        #expect(replay.status == 201, "\(replay.text)")
        #expect(replay.strings("id") == [ids[3], ids[4]])
        let kept = try await server.sql("SELECT body FROM messages WHERE id = ANY($1::uuid[]) ORDER BY body",
                                        ["{" + ids.joined(separator: ",") + "}"])
        #expect(kept.rows == [["m0"], ["m1"], ["m2"], ["m3"], ["m4"]])

        // Mixed key sets: a key a row lacks takes the column default, an explicit null stays null.
        let mixedIDs = (0..<2).map { _ in UUID().uuidString.lowercased() }
        let defaults = try await client.send(.post, "messages", query: query, token: alice, headers: prefer, body: """
            [{"id":"\(mixedIDs[0])","conversation_id":"\(conversation)","sender_id":"alice","body":"full"},
             {"id":"\(mixedIDs[1])","conversation_id":"\(conversation)","sender_id":"alice","reply_to":null}]
            """)
        #expect(defaults.status == 201, "\(defaults.text)")
        #expect(defaults.strings("body") == ["full", ""])
        #expect(defaults.rows.allSatisfy { $0["metadata"] == .object([]) && $0["reply_to"]?.isNull == true })

        // RLS refuses a row for a conversation alice is not in, or sent as bob: the whole request, nothing stored.
        for (bad, label) in [(row(UUID().uuidString.lowercased(), body: "x", in: foreign), "foreign conversation"),
                             (row(UUID().uuidString.lowercased(), body: "x", sender: "bob"), "another sender")] {
            let fresh = UUID().uuidString.lowercased()
            let refused = try await client.send(.post, "messages", query: query, token: alice, headers: prefer,
                                                body: "[" + row(fresh, body: "ok") + "," + bad + "]")
            #expect(refused.status == 403, "\(label): \(refused.text)")
            #expect(refused.code == "42501", "\(label)")
            let stored = try await server.sql("SELECT count(*) FROM messages WHERE id = $1::uuid", [fresh])
            #expect(stored.rows == [["0"]], "\(label)")
        }
        let foreignCount = try await server.sql("SELECT count(*) FROM messages WHERE conversation_id = $1", [foreign])
        #expect(foreignCount.rows == [["0"]])
    }

    @Test("PATCH and DELETE act on the filtered rows only")
    func updatesAndDeletes() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        let first = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "one")
        let second = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "two")
        let alice = server.token(role: "authenticated", sub: "alice")

        let edited = try await client.send(.patch, "messages", query: [("id", "eq.\(first)"), ("select", "body,edited_at")],
                                           token: alice, headers: [("Prefer", "return=representation")],
                                           body: #"{"body":"one, edited"}"#)
        #expect(edited.status == 200, "\(edited.text)")
        #expect(edited.strings("body") == ["one, edited"])
        #expect(edited.rows.first?["edited_at"]?.isNull == false)
        #expect(edited.header("Content-Range") == "0-0/*")
        #expect(edited.header("Preference-Applied") == "return=representation")

        let quiet = try await client.send(.patch, "messages", query: [("id", "eq.\(second)")], token: alice,
                                          headers: [("Prefer", "count=exact")], body: #"{"metadata":{"pinned":true}}"#)
        #expect(quiet.status == 204)
        #expect(quiet.body.isEmpty)
        #expect(quiet.header("Content-Range") == "0-0/1")
        let untouched = try await server.sql("SELECT body FROM messages WHERE id = $1", [second])
        #expect(untouched.rows == [["two"]])

        let nothing = try await client.send(.patch, "messages", query: [("id", "eq.\(UUID().uuidString)")], token: alice,
                                            body: #"{"body":"x"}"#)
        #expect(nothing.status == 204)
        #expect(nothing.header("Content-Range") == "*/*")

        let removed = try await client.send(.delete, "messages", query: [("id", "eq.\(first)"), ("select", "id,body")],
                                            token: alice, headers: [("Prefer", "return=representation")])
        #expect(removed.status == 200)
        #expect(removed.strings("id") == [first])
        let gone = try await client.send(.delete, "messages", query: [("conversation_id", "eq.\(conversation)")],
                                         token: alice, headers: [("Prefer", "count=exact")])
        #expect(gone.status == 204)
        #expect(gone.header("Content-Range") == "*/1")
        let left = try await server.sql("SELECT count(*) FROM messages WHERE conversation_id = $1", [conversation])
        #expect(left.rows == [["0"]])
    }

    @Test("select embeds related rows through foreign keys, under the embedded table's row-level security")
    func embeddedResources() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let conversation = try await RestSeed.conversation(server, members: ["alice", "bob"])
        let message = try await RestSeed.message(server, conversation: conversation, sender: "alice", body: "hello")
        for (user, symbol) in [("alice", "👍"), ("bob", "🎉")] {
            try await server.sql("INSERT INTO reactions (message_id, user_id, symbol) VALUES ($1, $2, $3)", [message, user, symbol])
        }
        // A table created after the server started, whose policy shows each user only their own notes.
        try await RestSeed.execute(server, """
            CREATE TABLE public.notes (message_id uuid NOT NULL REFERENCES public.messages (id), owner text NOT NULL, text text NOT NULL);
            ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY;
            CREATE POLICY notes_own ON public.notes FOR SELECT TO authenticated USING (owner = auth.uid());
            GRANT SELECT ON public.notes TO authenticated;
            """)
        try await server.sql("INSERT INTO notes (message_id, owner, text) VALUES ($1, 'alice', 'mine'), ($1, 'bob', 'his')", [message])
        let alice = server.token(role: "authenticated", sub: "alice")

        let read = try await client.send(.get, "messages", query: [
            ("id", "eq.\(message)"),
            ("select", "body,reactions(symbol,user_id),notes(text),room:conversations(title,members(user_id))"),
        ], token: alice)
        #expect(read.status == 200, "\(read.text)")
        let row = try #require(read.rows.first)
        #expect(Set(row["reactions"]?.arrayValue?.compactMap { $0["symbol"]?.stringValue } ?? []) == ["👍", "🎉"])
        #expect(row["notes"] == .array([.object([("text", .string("mine"))])]), "bob's note must stay hidden: \(read.text)")
        #expect(row["room"]?["title"]?.stringValue == "rest")
        #expect(Set(row["room"]?["members"]?.arrayValue?.compactMap { $0["user_id"]?.stringValue } ?? []) == ["alice", "bob"])

        // On a mutation's returned rows too.
        let inserted = try await client.send(.post, "messages", query: [("select", "body,conversations(title)")], token: alice,
                                             headers: [("Prefer", "return=representation")],
                                             body: #"{"conversation_id":"\#(conversation)","sender_id":"alice","body":"second"}"#)
        #expect(inserted.status == 201, "\(inserted.text)")
        #expect(inserted.rows.first?["conversations"]?["title"]?.stringValue == "rest")

        let none = try await client.send(.get, "messages", query: [("select", "body,members(*)")], token: alice)
        #expect(none.status == 400)
        #expect(none.code == "PGRST200")
        let hinted = try await client.send(.get, "messages", query: [("select", "body,reactions!reactions_message_id_fkey(*)")], token: alice)
        #expect(hinted.status == 400)
        #expect(hinted.code == "PGRST100")

        // Embedded rows filtered, ordered and paged; !inner keeps only the messages with a matching reaction.
        let scope = ("conversation_id", "eq.\(conversation)")
        let party = try await client.send(.get, "messages", query: [
            scope, ("select", "body,reactions!inner(user_id)"), ("reactions.symbol", "eq.🎉"), ("order", "body"),
        ], token: alice)
        #expect(party.status == 200, "\(party.text)")
        #expect(party.strings("body") == ["hello"], "only the message with a 🎉")
        #expect(party.rows.first?["reactions"] == .array([.object([("user_id", .string("bob"))])]))
        let paged = try await client.send(.get, "messages", query: [
            ("id", "eq.\(message)"), ("select", "body,reactions(symbol)"), ("reactions.order", "user_id.desc"), ("reactions.limit", "1"),
        ], token: alice)
        #expect(paged.rows.first?["reactions"] == .array([.object([("symbol", .string("🎉"))])]), "bob's, the first by user_id desc")
        let outer = try await client.send(.get, "messages", query: [
            scope, ("select", "body,reactions(user_id)"), ("reactions.symbol", "eq.🎉"), ("order", "body"),
        ], token: alice)
        #expect(outer.strings("body") == ["hello", "second"], "without !inner every message stays, with an empty list")
    }

    @Test("rpc: POST and GET call functions by argument names, as the caller's role; GET is read-only")
    func functionCalls() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        let mine = try await RestSeed.conversation(server, members: ["rpc-alice"])
        let theirs = try await RestSeed.conversation(server, members: ["rpc-carol"])
        try await RestSeed.message(server, conversation: mine, sender: "rpc-alice", body: "visible")
        try await RestSeed.message(server, conversation: theirs, sender: "rpc-carol", body: "hidden")
        try await RestSeed.execute(server, """
            CREATE FUNCTION public.add(a integer, b integer DEFAULT 1) RETURNS integer LANGUAGE sql IMMUTABLE AS $$ SELECT a + b $$;
            CREATE FUNCTION public.add(a text, c text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT a || c $$;
            CREATE FUNCTION public.shout(a text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT a || '!' $$;
            CREATE FUNCTION public.shout(a text, times integer DEFAULT 2) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT repeat(a, times) $$;
            CREATE FUNCTION public.bodies() RETURNS SETOF public.messages LANGUAGE sql STABLE AS $$ SELECT * FROM public.messages $$;
            CREATE FUNCTION public.rename(conversation uuid, title text) RETURNS void LANGUAGE sql AS $$
              UPDATE public.conversations SET title = rename.title WHERE id = rename.conversation $$;
            """)
        let alice = server.token(role: "authenticated", sub: "rpc-alice")

        let sum = try await client.send(.post, "rpc/add", token: alice, body: #"{"a": 40, "b": 2}"#)
        #expect(sum.status == 200, "\(sum.text)")
        #expect(sum.text == "42")
        #expect(try await client.send(.get, "rpc/add", query: [("a", "41")], token: alice).text == "42", "b's default")
        #expect(try await client.send(.post, "rpc/add", token: alice, body: #"{"a": "x", "c": "y"}"#).text == #""xy""#)
        #expect(try await client.send(.post, "rpc/add", token: alice, body: #"{"a": 1, "b": 2, "c": 3}"#).code == "PGRST202")
        let ambiguous = try await client.send(.post, "rpc/shout", token: alice, body: #"{"a": "hey"}"#)
        #expect(ambiguous.status == 300)
        #expect(ambiguous.code == "PGRST203")
        #expect(try await client.send(.post, "rpc/shout", token: alice, body: #"{"a": "ho", "times": 3}"#).text == #""hohoho""#)
        // Security invoker: the function reads messages under the caller's row-level security.
        let rows = try await client.send(.post, "rpc/bodies", token: alice, body: "{}")
        #expect(rows.status == 200)
        #expect(rows.strings("body") == ["visible"])
        #expect(try await client.send(.post, "rpc/is_member", token: alice, body: #"{"conversation":"\#(mine)"}"#).text == "true")
        #expect(try await client.send(.post, "rpc/is_member", token: alice, body: #"{"conversation":"\#(theirs)"}"#).text == "false")
        // is_member is granted to authenticated users only: anon is refused as PostgREST refuses it.
        let anon = try await client.send(.post, "rpc/is_member", token: nil, body: #"{"conversation":"\#(mine)"}"#)
        #expect(anon.status == 401)
        #expect(anon.code == "42501")
        // A void function writes with POST (204) and cannot with GET (read-only transaction).
        let renamed = try await client.send(.post, "rpc/rename", token: server.serviceKey,
                                            body: #"{"conversation":"\#(mine)","title":"renamed"}"#)
        #expect(renamed.status == 204, "\(renamed.text)")
        #expect(try await server.sql("SELECT title FROM conversations WHERE id = $1", [mine]).rows == [["renamed"]])
        let readOnly = try await client.send(.get, "rpc/rename", query: [("conversation", mine), ("title", "x")], token: server.serviceKey)
        #expect(readOnly.status == 405)
        #expect(readOnly.code == "25006")
        #expect(try await client.send(.post, "rpc/nope", token: alice, body: "{}").status == 404)
        #expect(try await client.send(.post, "rpc/add", token: alice, body: "[1]").code == "PGRST102")
    }

    @Test("the official supabase Python client selects, inserts, upserts and is kept out by RLS")
    func officialPythonClient() async throws {
        let server = try SupabaseTestServer.required()
        let conversation = try await RestSeed.conversation(server, members: ["alice"])
        let other = try await RestSeed.conversation(server, members: ["carol"])
        try await RestSeed.message(server, conversation: other, sender: "carol", body: "private")
        let result = try await PythonFixture.run("postgrest_client.py", [server.baseURL], environment: [
            "SUPABASE_ANON_KEY": server.anonKey,
            "SUPABASE_USER_TOKEN": server.token(role: "authenticated", sub: "alice"),
            "CONVERSATION_ID": conversation,
            "OTHER_CONVERSATION_ID": other,
        ])
        #expect(result.status == 0, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        let summary = JSONValue.parseOrNil(result.stdout.split(separator: "\n").last.map(String.init) ?? "")
        #expect(summary?["ok"]?.boolValue == true, "\(result.stdout)")
    }
}
