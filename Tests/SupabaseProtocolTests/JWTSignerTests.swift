import Foundation
import SupabaseProtocol
import Testing

@Suite struct JWTSignerTests {
    static let secret = "super-secret-jwt-token-with-at-least-32-characters-long"
    static let signer = JWTSigner(secret: secret)
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// PyJWT 2.15.1: `jwt.encode({"role":"anon","iss":"supabase-demo","exp":1983812996}, secret, algorithm="HS256")`.
    static let pyjwtAnon = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiIsImlzcyI6InN1cGFiYXNlLWRlbW8iLCJleHAiOjE5ODM4MTI5OTZ9.nujK57TLb9fW2FunL20yZf04iMz5R3KoKLclUM6WbbE"
    /// PyJWT 2.15.1: an authenticated user's token with sub, email, iat, exp and nested app_metadata.
    static let pyjwtUser = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI5ZjFjMmQzZS0wMDAwLTQwMDAtODAwMC0wMDAwMDAwMDAwMDEiLCJyb2xlIjoiYXV0aGVudGljYXRlZCIsImVtYWlsIjoidTFAZXhhbXBsZS5jb20iLCJpYXQiOjE3MDAwMDAwMDAsImV4cCI6NDEwMjQ0NDgwMCwiYXBwX21ldGFkYXRhIjp7InByb3ZpZGVyIjoiZW1haWwifX0.OB7nM6--doPQzXlQFKEhrlCyIIVJ8GjFM__PtfQLFGg"
    /// PyJWT 2.15.1 with `algorithm="HS512"` and the same secret.
    static let pyjwtHS512 = "eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJyb2xlIjoiYW5vbiJ9.afFlXGFojdStXolfUy7GVDtmPOEH4wKUhshld0SYTAa5NC9G2-rFiQX-8-tA-knKy9-wFdYJB8HGv4vP0TjBEQ"

    private func reason(_ token: String, signer: JWTSigner = signer, now: Date = now) -> JWTError.Reason? {
        do {
            _ = try signer.verify(token, now: now)
            return nil
        } catch let error as JWTError {
            return error.reason
        } catch {
            return nil
        }
    }

    private func segment(_ json: String) -> String { JWTBase64URL.encode(Array(json.utf8)) }

    @Test func roundTrip() throws {
        let token = Self.signer.sign(claims: ["role": "authenticated", "sub": "u1", "exp": 1_750_000_100])
        #expect(token.hasPrefix("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."))
        let claims = try Self.signer.verify(token, now: Self.now)
        #expect(claims.role == .authenticated)
        #expect(claims.sub == "u1")
        #expect(claims.exp == Date(timeIntervalSince1970: 1_750_000_100))
        #expect(claims.json == #"{"exp":1750000100,"role":"authenticated","sub":"u1"}"#)
    }

    @Test func pyjwtInterop() throws {
        let anon = try Self.signer.verify(Self.pyjwtAnon, now: Self.now)
        #expect(anon.role == .anon)
        #expect(anon.sub == nil)
        #expect(anon.object["iss"] == "supabase-demo")
        let user = try Self.signer.verify(Self.pyjwtUser, now: Self.now)
        #expect(user.role == .authenticated)
        #expect(user.sub == "9f1c2d3e-0000-4000-8000-000000000001")
        #expect(user.object["app_metadata"]?["provider"] == "email")
        #expect(user.exp == Date(timeIntervalSince1970: 4_102_444_800))
    }

    @Test func rolesAndMissingExp() throws {
        let service = try Self.signer.verify(Self.signer.sign(claims: ["role": "service_role"]), now: Self.now)
        #expect(service.role == .serviceRole)
        #expect(service.exp == nil)
        let custom = try Self.signer.verify(Self.signer.sign(claims: ["role": "reporting"]), now: Self.now)
        #expect(custom.role == .other("reporting"))
        #expect(custom.role?.name == "reporting")
        let none = try Self.signer.verify(Self.signer.sign(claims: [:]), now: Self.now)
        #expect(none.role == nil)
        #expect(none.effectiveRole == .anon)
    }

    @Test func expiredAndTimeClaims() {
        #expect(reason(Self.signer.sign(claims: ["exp": 1_749_999_999])) == .expired)
        #expect(reason(Self.signer.sign(claims: ["exp": 1_750_000_000])) == .expired)
        #expect(reason(Self.signer.sign(claims: ["exp": 1_750_000_000.5])) == nil)
        #expect(reason(Self.signer.sign(claims: ["exp": "soon"])) == .invalidJSON)
        #expect(reason(Self.signer.sign(claims: ["nbf": 1_750_000_010])) == nil)  // within leeway
        #expect(reason(Self.signer.sign(claims: ["nbf": 1_750_000_100])) == .notYetValid)
        #expect(reason(Self.signer.sign(claims: ["iat": 1_750_003_600])) == .notYetValid)
        #expect(reason(Self.pyjwtAnon, now: Date(timeIntervalSince1970: 1_983_812_996)) == .expired)
        do {
            _ = try Self.signer.verify(Self.signer.sign(claims: ["exp": 1]), now: Self.now)
            Issue.record("expired token verified")
        } catch {
            #expect("\(error)" == "JWT expired")
        }
    }

    @Test func wrongSecretAndTampering() throws {
        #expect(reason(Self.pyjwtAnon, signer: JWTSigner(secret: "another-secret-another-secret-another-secret")) == .invalidSignature)
        let parts = Self.pyjwtAnon.split(separator: ".").map(String.init)
        let tampered = [parts[0], segment(#"{"role":"service_role","iss":"supabase-demo","exp":1983812996}"#), parts[2]]
        #expect(reason(tampered.joined(separator: ".")) == .invalidSignature)
        #expect(reason(parts[0] + "." + parts[1] + ".") == .invalidSignature)
        do {
            _ = try JWTSigner(secret: "x").verify(Self.pyjwtAnon, now: Self.now)
            Issue.record("wrong secret verified")
        } catch let error as JWTError {
            #expect(error.message == "JWSError JWSInvalidSignature")
            #expect(!error.message.contains(Self.pyjwtAnon))
        }
    }

    @Test func algorithmConfusionRejected() {
        let payload = segment(#"{"role":"service_role"}"#)
        #expect(reason(segment(#"{"alg":"none","typ":"JWT"}"#) + "." + payload + ".") == .unsupportedAlgorithm)
        #expect(reason(segment(#"{"alg":"none"}"#) + "." + payload + ".") == .unsupportedAlgorithm)
        #expect(reason(Self.pyjwtHS512) == .unsupportedAlgorithm)
        #expect(reason(segment(#"{"typ":"JWT"}"#) + "." + payload + ".") == .unsupportedAlgorithm)
        #expect(reason(segment(#"{"alg":"RS256","typ":"JWT"}"#) + "." + payload + ".") == .unsupportedAlgorithm)
        #expect(reason(segment(#"{"alg":"hs256","typ":"JWT"}"#) + "." + payload + ".") == .unsupportedAlgorithm)
        // A correctly keyed HS256 MAC under a non-HS256 header must still fail.
        let input = segment(#"{"alg":"HS384","typ":"JWT"}"#) + "." + payload
        let mac = JWTBase64URL.encode(HMAC.sha256(key: Array(Self.secret.utf8), message: Array(input.utf8)))
        #expect(reason(input + "." + mac) == .unsupportedAlgorithm)
    }

    @Test func malformedTokens() {
        let parts = Self.pyjwtAnon.split(separator: ".").map(String.init)
        #expect(reason(parts[0] + "." + parts[1]) == .malformed)
        #expect(reason(Self.pyjwtAnon + ".x") == .malformed)
        #expect(reason("") == .malformed)
        #expect(reason("not a token") == .malformed)
        #expect(reason(parts[0] + "." + parts[1] + "=." + parts[2]) == .invalidBase64)
        #expect(reason("e!J." + parts[1] + "." + parts[2]) == .invalidBase64)
        #expect(reason(segment("{not json") + "." + parts[1] + "." + parts[2]) == .invalidJSON)
        #expect(reason(segment(#"["HS256"]"#) + "." + parts[1] + "." + parts[2]) == .invalidJSON)
        // A correctly signed payload that is not a JSON object.
        let input = parts[0] + "." + segment("[1,2]")
        let mac = JWTBase64URL.encode(HMAC.sha256(key: Array(Self.secret.utf8), message: Array(input.utf8)))
        #expect(reason(input + "." + mac) == .invalidJSON)
    }

    @Test func secretIsRedacted() {
        #expect(!"\(Self.signer)".contains(Self.secret))
        #expect(!String(reflecting: Self.signer).contains(Self.secret))
        var dumped = ""
        dump(Self.signer, to: &dumped)
        #expect(!dumped.contains(Self.secret))
    }
}
