import Foundation
import SupabaseProtocol
import SwitchboardCore

/// JWT HS256 verification as every Supabase-like endpoint does it, and the base64url codec under it.
enum JWTFuzzing {
    static let name = "jwt"
    static let signer = JWTSigner(secret: "fuzz-secret-with-at-least-32-characters")
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The input as a token; the input as a claims payload signed with the right key (so the claims checks run);
    /// base64url text that decodes must encode back to the same text; a JSON object signed must verify to itself.
    static func run(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        _ = try? signer.verify(text, now: now)

        // A correctly signed token carrying the input as its payload.
        let signingInput = JWTBase64URL.encode(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + JWTBase64URL.encode(bytes)
        let token = signingInput + "." + JWTBase64URL.encode(HMAC.sha256(key: Array("fuzz-secret-with-at-least-32-characters".utf8),
                                                                           message: Array(signingInput.utf8)))
        do {
            let claims = try signer.verify(token, now: now)
            try expect(JSONValue.parseOrNil(bytes)?.objectValue == claims.object, name, "verified claims differ from the payload")
            _ = claims.json
            _ = claims.effectiveRole
        } catch let error as JWTError {
            _ = error.description
        }

        for part in text.split(separator: ".", omittingEmptySubsequences: false) {
            guard let decoded = JWTBase64URL.decode(part) else { continue }
            try expect(JWTBase64URL.encode(decoded) == String(part), name, "base64url \(part) is not canonical but decoded")
        }

        if let claims = JSONValue.parseOrNil(bytes)?.objectValue {
            let signed = signer.sign(claims: claims)
            do {
                let verified = try signer.verify(signed, now: now)
                try expect(verified.object == claims, name, "signed claims \(claims) verified as \(verified.object)")
            } catch let error as JWTError {
                // Only a time claim may refuse a token this signer made.
                try expect(claims["exp"] != nil || claims["nbf"] != nil || claims["iat"] != nil, name,
                           "a token signed with the key was refused: \(error)")
            }
        }
    }
}
