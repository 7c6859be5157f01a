import Foundation
import SupabaseProtocol
import SwitchboardNet
import Testing

/// Issue 30's parser findings over HTTP: deep `or=` / `select=` values and `%00` in an object key.
@Suite("Hostile query strings and object keys over HTTP", .serialized, .supabaseServer)
struct HostileInputServerTests {
    @Test("a deep or= tree and the issue's select=a(a(…)) get a PGRST100 400 with the anon key")
    func deepQueryStrings() async throws {
        let server = try SupabaseTestServer.required()
        let client = RestTestClient(server: server)
        // As deep as fits in civetweb's 16 KiB request head.
        let tree = "(" + String(repeating: "and(", count: 2_500) + "id.eq.1" + String(repeating: ")", count: 2_500) + ")"
        let select = String(repeating: "a(", count: 5_000) + "id" + String(repeating: ")", count: 5_000)
        for query in [[("or", tree)], [("select", select)], [("select", "id,reactions(*)"), ("reactions.or", tree)]] {
            let reply = try await client.send(.get, "messages", query: query, token: nil)
            #expect(reply.status == 400, "\(reply.text.prefix(300))")
            #expect(reply.code == "PGRST100", "\(reply.text.prefix(300))")
        }
        // The server still answers ordinary embedded reads afterwards.
        let ordinary = try await client.send(.get, "messages", query: [("select", "id,reactions(symbol)"), ("limit", "1")],
                                             token: server.serviceKey)
        #expect(ordinary.status == 200, "\(ordinary.text)")
    }

    @Test("an object key with %00 is refused with 400, not stored under the part before the NUL")
    func nulInObjectKey() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await StorageServerTests.createBucket(client, "nul")
        let service = client.server.serviceKey
        for key in ["a%00b", "a%00", "c%00/d", "e%0Af", "g%7Fh"] {
            let upload = try await client.send(.post, "/object/nul/\(key)", token: service, body: Data("x".utf8))
            #expect(upload.status == 400, "\(key): \(String(decoding: upload.body, as: UTF8.self))")
        }
        for stored in ["a", "c", "e", "g"] {
            let read = try await client.send(.get, "/object/nul/\(stored)", token: service)
            #expect(read.status != 200, "\(stored) must not exist")
        }
        let ordinary = try await client.send(.post, "/object/nul/a%20b.txt", token: service, body: Data("x".utf8))
        #expect(ordinary.status == 200, "\(String(decoding: ordinary.body, as: UTF8.self))")
    }
}
