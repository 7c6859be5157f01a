import SwitchboardCore
import Testing
@testable import SupabaseProtocol

/// The GoTrue-like auth API's input rules and JSON shapes, without a server.
@Suite struct AuthModelTests {
    @Test("emails are trimmed and lower-cased; anything that is not one address is refused as GoTrue refuses it")
    func emails() throws {
        #expect(try AuthRules.email("  Ann@Example.COM ") == "ann@example.com")
        for bad in [nil, "", "ann", "ann@", "@example.com", "ann@example", "ann@@example.com", "an n@example.com",
                    "ann@.example.com", "ann@example.com.", String(repeating: "a", count: 250) + "@example.com"] {
            #expect(throws: AuthError.self, "\(bad ?? "nil")") { try AuthRules.email(bad) }
        }
        let error = #expect(throws: AuthError.self) { try AuthRules.email("nope") }
        #expect(error?.status == 400)
        #expect(error?.errorCode == "validation_failed")
    }

    @Test("passwords need 6 characters (weak_password, with the reason) and at most 72 bytes (bcrypt's limit)")
    func passwords() throws {
        #expect(try AuthRules.password("secret") == "secret")
        let weak = #expect(throws: AuthError.self) { try AuthRules.password("12345") }
        #expect(weak?.status == 422)
        #expect(weak?.json.serialized == #"{"code":422,"error_code":"weak_password","msg":"Password should be at least 6 characters.","weak_password":{"reasons":["length"]}}"#)
        #expect(throws: AuthError.self) { try AuthRules.password(nil) }
        #expect(throws: AuthError.self) { try AuthRules.password(String(repeating: "é", count: 37)) }
        #expect(try AuthRules.password(String(repeating: "x", count: 72)).count == 72)
    }

    @Test("a session carries GoTrue's fields; an access token's claims name the user, the session and the role")
    func shapes() throws {
        let user = AuthUser(id: "0b0c5f2e-2a9e-4c0e-9f7e-1d2b3c4d5e6f", email: "ann@example.com",
                            userMetadata: .object([("name", .string("Ann"))]),
                            appMetadata: .object([("provider", .string("email"))]), createdAt: "2026-12-01T10:00:00+00:00",
                            updatedAt: "2026-12-01T10:00:00+00:00", emailConfirmedAt: "2026-12-01T10:00:00+00:00", lastSignInAt: nil)
        let session = AuthSession(accessToken: "a.b.c", refreshToken: "r", expiresIn: 3600, expiresAt: 1_800_000_000, user: user)
        let json = session.json
        #expect(json["token_type"] == .string("bearer"))
        #expect(json["expires_in"]?.intValue == 3600)
        #expect(json["user"]?["id"] == .string(user.id))
        #expect(json["user"]?["aud"] == .string("authenticated"))
        #expect(json["user"]?["user_metadata"]?["name"] == .string("Ann"))
        #expect(json["user"]?["last_sign_in_at"] == .null)
        let claims = user.accessClaims(sessionID: "s-1", issuedAt: 1_000, lifetime: 3600, issuer: "http://h/auth/v1")
        #expect(claims["sub"] == .string(user.id))
        #expect(claims["role"] == .string("authenticated"))
        #expect(claims["exp"]?.intValue == 4_600)
        #expect(claims["session_id"] == .string("s-1"))
        #expect(AuthError.invalidCredentials.json.serialized == #"{"code":400,"error_code":"invalid_credentials","msg":"Invalid login credentials"}"#)
    }
}
