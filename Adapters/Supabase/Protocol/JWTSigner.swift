import SwitchboardCore
import Foundation

/// Signs and verifies HS256 JWTs (JWS compact serialization) with a shared secret.
public struct JWTSigner: Sendable, CustomStringConvertible, CustomReflectable {
    /// The HMAC key bytes.
    private let key: [UInt8]
    /// Allowed clock skew in seconds for `nbf` and `iat` (not for `exp`).
    public let leeway: TimeInterval

    /// The only header this signer emits.
    private static let header = #"{"alg":"HS256","typ":"JWT"}"#

    /// A signer keyed by the UTF-8 bytes of `secret`.
    public init(secret: String, leeway: TimeInterval = 30) {
        self.init(key: Array(secret.utf8), leeway: leeway)
    }

    /// A signer keyed by raw bytes.
    public init(key: [UInt8], leeway: TimeInterval = 30) {
        self.key = key
        self.leeway = leeway
    }

    /// Redacted, so the secret never reaches a log.
    public var description: String { "JWTSigner(secret: <redacted>)" }

    /// Redacted, so `dump` never shows the secret.
    public var customMirror: Mirror { Mirror(self, children: [:]) }

    /// A token with header `{"alg":"HS256","typ":"JWT"}` and `claims` serialized with sorted keys.
    public func sign(claims: [String: JSONValue]) -> String {
        let signingInput = JWTBase64URL.encode(Array(Self.header.utf8)) + "."
            + JWTBase64URL.encode(Array(JSONValue.object(claims).serialized.utf8))
        return signingInput + "." + JWTBase64URL.encode(HMAC.sha256(key: key, message: Array(signingInput.utf8)))
    }

    /// The longest token accepted, in bytes: far above any real access token (Supabase's are under 1 KiB), low
    /// enough that the header, parsed before the signature is checked, costs little when it is hostile.
    public static let maximumTokenLength = 16 * 1024

    /// The claims of `token` if it is a well-formed HS256 JWT signed with this key and valid at `now`.
    public func verify(_ token: String, now: Date = Date()) throws -> JWTClaims {
        guard token.utf8.count <= Self.maximumTokenLength else {
            throw JWTError(.malformed, "JWT longer than \(Self.maximumTokenLength) bytes")
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw JWTError(.malformed, "Expected 3 parts in JWT; got \(parts.count)")
        }
        guard let headerBytes = JWTBase64URL.decode(parts[0]),
              let payloadBytes = JWTBase64URL.decode(parts[1]),
              let signature = JWTBase64URL.decode(parts[2]) else {
            throw JWTError(.invalidBase64, "JWSError (CompactDecodeError Invalid base64url encoding)")
        }
        guard let header = JSONValue.parseOrNil(headerBytes)?.objectValue else {
            throw JWTError(.invalidJSON, "JWSError (CompactDecodeError Invalid JWS header JSON)")
        }
        // Only HS256 is accepted: rejecting everything else blocks `none` and alg-confusion attacks.
        guard header["alg"] == .string("HS256") else {
            throw JWTError(.unsupportedAlgorithm, "JWSError JWSAlgorithmNotSupported: only HS256 is accepted")
        }
        if let type = header["typ"], type != .string("JWT") {
            throw JWTError(.unsupportedAlgorithm, "JWSError JWSUnsupportedType: typ must be JWT")
        }
        let signingInput = Array(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard HMAC.constantTimeEquals(HMAC.sha256(key: key, message: signingInput), signature) else {
            throw JWTError(.invalidSignature, "JWSError JWSInvalidSignature")
        }
        guard let claims = JSONValue.parseOrNil(payloadBytes)?.objectValue else {
            throw JWTError(.invalidJSON, "JWSError (CompactDecodeError Invalid JWT claims JSON)")
        }
        let nowSeconds = now.timeIntervalSince1970
        if let exp = claims["exp"] {
            guard let seconds = exp.doubleValue else { throw JWTError(.invalidJSON, "JWT claim exp is not a number") }
            if nowSeconds >= seconds { throw JWTError(.expired, "JWT expired") }
        }
        for name in ["nbf", "iat"] {
            guard let claim = claims[name] else { continue }
            guard let seconds = claim.doubleValue else { throw JWTError(.invalidJSON, "JWT claim \(name) is not a number") }
            if seconds > nowSeconds + leeway { throw JWTError(.notYetValid, "JWT not yet valid") }
        }
        return JWTClaims(object: claims)
    }
}
