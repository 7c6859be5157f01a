import Foundation
import SupabaseServer
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
