import Foundation
import SwitchboardCore
import Testing
@testable import SupabaseProtocol

/// Size and depth limits of the JWT verifier and the Phoenix frame decoders against hostile input.
@Suite struct ProtocolLimitsTests {
    static let signer = JWTSigner(secret: "super-secret-jwt-token-with-at-least-32-characters-long")
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// The error `verify` throws for `token`, nil when it verifies.
    private func failure(_ token: String) -> JWTError? {
        do {
            _ = try Self.signer.verify(token, now: Self.now)
            return nil
        } catch {
            return error as? JWTError
        }
    }

    @Test("a token over 16 KiB is malformed before any part of it is decoded, even when correctly signed")
    func jwtTooLong() throws {
        let padding = String(repeating: "x", count: JWTSigner.maximumTokenLength)
        let signed = Self.signer.sign(claims: ["role": "anon", "pad": .string(padding)])
        let refused = failure(signed)
        #expect(refused?.reason == .malformed)
        #expect(refused?.message == "JWT longer than \(JWTSigner.maximumTokenLength) bytes")
        // A hostile header (a megabyte of nesting) never reaches the JSON parser.
        let header = JWTBase64URL.encode(Array(String(repeating: "[", count: 1 << 20).utf8))
        #expect(failure(header + ".e30.AAAA")?.reason == .malformed)
        #expect(failure(String(repeating: ".", count: 1 << 20))?.reason == .malformed)
        // Large but legitimate claims still verify.
        let roomy = Self.signer.sign(claims: ["role": "anon", "pad": .string(String(repeating: "y", count: 8 * 1024))])
        #expect(roomy.utf8.count <= JWTSigner.maximumTokenLength)
        #expect(failure(roomy) == nil)
    }

    @Test("Phoenix text frames nested 10,000 deep are invalid JSON, not a stack overflow", arguments: [
        PhoenixTextCodec.Version.v1, .v2,
    ])
    func phoenixDeepText(version: PhoenixTextCodec.Version) {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let frame = version == .v1
            ? #"{"topic":"t","event":"e","ref":"1","payload":"# + deep + "}"
            : #"[null,"1","t","e","# + deep + "]"
        #expect(throws: PhoenixFrameError.invalidJSON) { try PhoenixTextCodec.decode(frame, version: version) }
    }

    @Test("a binary broadcast push whose JSON payload nests 10,000 deep is refused")
    func phoenixDeepBinary() throws {
        let push = PhoenixUserBroadcastPush(joinRef: "1", ref: "2", topic: "realtime:room", userEvent: "e",
                                            encoding: .json,
                                            payload: Array((String(repeating: "[", count: 10_000)
                                                + String(repeating: "]", count: 10_000)).utf8))
        let bytes = try push.encode()
        #expect(throws: PhoenixFrameError.invalidBinary("payload is not JSON")) { try PhoenixUserBroadcastPush.decode(bytes) }
    }
}
