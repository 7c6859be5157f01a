import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet

/// Who may do what in storage; a stand-in for the RLS policies real Supabase puts on `storage.objects`.
///
/// anon reads objects of public buckets only; authenticated users read and write objects in every existing
/// bucket; service_role does everything, including bucket management.
enum StorageAccessPolicy {
    /// Whether `role` may read objects of a bucket that is (or is not) public.
    static func canRead(_ role: JWTRole, bucketIsPublic: Bool) -> Bool {
        bucketIsPublic || role == .authenticated || role == .serviceRole
    }

    /// Whether `role` may create, replace, move or delete objects.
    static func canWrite(_ role: JWTRole) -> Bool { role == .authenticated || role == .serviceRole }

    /// Whether `role` may create, update, empty or delete buckets.
    static func canManageBuckets(_ role: JWTRole) -> Bool { role == .serviceRole }

    /// Whether `role` may see a bucket's record (anon sees public buckets only).
    static func canSeeBucket(_ role: JWTRole, bucketIsPublic: Bool) -> Bool { canRead(role, bucketIsPublic: bucketIsPublic) }
}

/// Turns request headers into an identity with storage-shaped refusals (403 `AccessDenied`, "jwt expired").
enum StorageAuthentication {
    /// The identity of the bearer token, else of the `apikey` header; pure apart from the clock.
    static func identity(headers: HTTPHeaders, signer: JWTSigner, now: Date = Date()) throws(StorageError) -> RequestIdentity {
        var token: String?
        if let authorization = headers["Authorization"] {
            let parts = authorization.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer" else {
                throw StorageError.accessDenied("Authorization header must be 'Bearer <token>'")
            }
            token = parts[1].trimmingCharacters(in: .whitespaces)
        } else if let key = headers["apikey"], !key.isEmpty {
            token = key
        }
        guard let token, !token.isEmpty else { throw StorageError.accessDenied("jwt must be provided") }
        let claims: JWTClaims
        do {
            claims = try signer.verify(token, now: now)
        } catch {
            throw StorageError.accessDenied(message(for: error))
        }
        guard RequestAuthenticator.allowedRoles.contains(claims.effectiveRole.name) else {
            throw StorageError.accessDenied("role \"\(StorageError.printable(claims.effectiveRole.name))\" does not exist")
        }
        return RequestIdentity(claims: claims)
    }

    /// The jsonwebtoken-style message the real service reports for a failed verification.
    static func message(for error: any Error) -> String {
        guard let error = error as? JWTError else { return "invalid token" }
        switch error.reason {
        case .expired: return "jwt expired"
        case .invalidSignature: return "invalid signature"
        case .unsupportedAlgorithm: return "invalid algorithm"
        case .notYetValid: return "jwt not active"
        case .malformed, .invalidBase64, .invalidJSON: return "jwt malformed"
        }
    }
}

/// The claims of a signed download or upload URL token (an HS256 JWT under the server secret).
///
/// Like supabase/storage, `url` binds the token to `<bucket>/<key>` and `scope` to one action, so a download
/// token cannot upload and a token for one object cannot reach another.
struct StorageSignedToken: Sendable, Hashable {
    /// What the token allows.
    enum Scope: String, Sendable, Hashable {
        /// `GET /object/sign/..`.
        case download
        /// `PUT /object/upload/sign/..`.
        case upload
    }

    /// `<bucket>/<key>`.
    var url: String
    /// The one action the token allows.
    var scope: Scope
    /// The uploading user (`sub` of whoever asked for an upload URL).
    var owner: String?
    /// Whether an upload may replace an existing object.
    var upsert: Bool
    /// When the token stops working.
    var expiresAt: Date

    /// The `<bucket>/<key>` a token names.
    static func url(bucket: String, key: String) -> String { "\(bucket)/\(key)" }

    /// The claim set to sign.
    func claims(issuedAt: Date) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "url": .string(url), "scope": .string(scope.rawValue),
            "iat": .int(Int64(issuedAt.timeIntervalSince1970)), "exp": .int(Int64(expiresAt.timeIntervalSince1970.rounded(.up))),
        ]
        if scope == .upload {
            claims["upsert"] = .bool(upsert)
            if let owner { claims["owner"] = .string(owner) }
        }
        return claims
    }

    /// This token signed with `signer`.
    func sign(with signer: JWTSigner, now: Date = Date()) -> String { signer.sign(claims: claims(issuedAt: now)) }

    /// The verified token for `bucket`/`key` and `scope`: 400 `InvalidJWT` ("jwt expired", "invalid signature")
    /// when it does not verify, 400 `InvalidSignature` when it names another object or action.
    static func verify(_ token: String, bucket: String, key: String, scope: Scope, signer: JWTSigner,
                       now: Date = Date()) throws(StorageError) -> StorageSignedToken {
        let claims: JWTClaims
        do {
            claims = try signer.verify(token, now: now)
        } catch {
            throw StorageError.invalidJWT(StorageAuthentication.message(for: error))
        }
        let object = claims.object
        let tokenScope = object["scope"]?.stringValue.flatMap(Scope.init(rawValue:))
        guard tokenScope == scope else { throw StorageError.invalidSignature("Token is not scoped for \(scope.rawValue)") }
        guard object["url"]?.stringValue == url(bucket: bucket, key: key) else { throw StorageError.invalidSignature() }
        // A signed-URL token must expire; one without `exp` was not minted here.
        guard let exp = claims.exp else { throw StorageError.invalidJWT("jwt expired") }
        return StorageSignedToken(url: url(bucket: bucket, key: key), scope: scope, owner: object["owner"]?.stringValue,
                                  upsert: object["upsert"]?.boolValue ?? false, expiresAt: exp)
    }
}
