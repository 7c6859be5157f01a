import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet

/// Signed download and upload URLs: HS256 tokens under the server secret, bound to one object and one action.
extension StorageService {
    /// `POST /object/sign/{bucket}/{key}` `{"expiresIn"}` → `{"signedURL":"/object/sign/{bucket}/{key}?token=.."}`.
    func signURL(_ bucket: String, _ key: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let role = try identity(request).role
        let expiresIn = try StorageValues.expiresIn(try jsonBody(request)["expiresIn"])
        try await database { connection in
            guard let bucketRow = try StorageCatalog.bucket(connection, id: bucket) else { throw StorageError.noSuchBucket }
            guard StorageAccessPolicy.canRead(role, bucketIsPublic: bucketRow.isPublic),
                  try StorageCatalog.object(connection, bucket: bucket, name: key) != nil else { throw StorageError.noSuchKey }
        }
        return json(.object([(key: "signedURL", value: .string(signedDownloadPath(bucket, key, expiresIn: expiresIn)))]))
    }

    /// `POST /object/sign/{bucket}` `{"paths":[..],"expiresIn"}` → `[{"error","path","signedURL"}]`.
    func signURLs(_ bucket: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let role = try identity(request).role
        let body = try jsonBody(request)
        let expiresIn = try StorageValues.expiresIn(body["expiresIn"])
        guard let paths = body["paths"]?.arrayValue?.compactMap(\.stringValue) else {
            throw StorageError.invalidRequest("body must have required property 'paths'")
        }
        guard paths.count <= 1000 else { throw StorageError.invalidRequest("At most 1000 paths per request") }
        let valid = paths.filter { (try? StoragePath.validateKey($0)) != nil }
        let existing = try await database { connection -> Set<String> in
            guard let bucketRow = try StorageCatalog.bucket(connection, id: bucket) else { throw StorageError.noSuchBucket }
            guard StorageAccessPolicy.canRead(role, bucketIsPublic: bucketRow.isPublic) else { return [] }
            return Set(try StorageCatalog.objects(connection, bucket: bucket, names: valid).map(\.name))
        }
        let results: [JSONValue] = paths.map { path in
            let found = existing.contains(path)
            return .object([
                (key: "error", value: found ? .null : .string("Either the object does not exist or you do not have access to it")),
                (key: "path", value: .string(path)),
                (key: "signedURL", value: found ? .string(signedDownloadPath(bucket, path, expiresIn: expiresIn)) : .null),
            ])
        }
        return json(.array(results))
    }

    /// `/object/sign/{bucket}/{encoded key}?token=..` for a download token valid `expiresIn` seconds.
    private func signedDownloadPath(_ bucket: String, _ key: String, expiresIn: Int64) -> String {
        let now = Date()
        let token = StorageSignedToken(url: StorageSignedToken.url(bucket: bucket, key: key), scope: .download, owner: nil,
                                       upsert: false, expiresAt: now.addingTimeInterval(TimeInterval(expiresIn)))
            .sign(with: context.signer, now: now)
        return "/object/sign/\(bucket)/\(StoragePath.encodedKey(key))?token=\(token)"
    }

    /// `GET|HEAD /object/sign/{bucket}/{key}?token=..`: no auth header; the token must be a download token for
    /// exactly this object and unexpired (400 `InvalidJWT` "jwt expired" otherwise).
    func getSigned(_ bucket: String, _ key: String, head: Bool, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let token = try StorageSignedToken.verify(try tokenParameter(request), bucket: bucket, key: key, scope: .download,
                                                  signer: context.signer)
        let files = self.files
        let (row, data) = try await database { connection in
            guard try StorageCatalog.bucket(connection, id: bucket) != nil else { throw StorageError.noSuchBucket }
            return try Self.readObject(connection, files: files, bucket: bucket, key: key, withData: !head)
        }
        return objectResponse(row, data: data, head: head, request: request, expires: token.expiresAt)
    }

    /// `POST /object/upload/sign/{bucket}/{key}` → `{"url":"/object/upload/sign/{bucket}/{key}?token=..","token"}`.
    ///
    /// The caller must be allowed to write; the token carries the caller's `sub` as owner, the `x-upsert` choice
    /// and expires after `configuration.signedUploadLifetime`.
    func signUpload(_ bucket: String, _ key: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        let upsert = request.headers["x-upsert"]?.lowercased() == "true"
        try await database { connection in
            guard try StorageCatalog.bucket(connection, id: bucket) != nil else { throw StorageError.noSuchBucket }
            if !upsert, try StorageCatalog.object(connection, bucket: bucket, name: key) != nil {
                throw StorageError.duplicateObject
            }
        }
        let lifetime = context.configuration.signedUploadLifetime.components
        let seconds = TimeInterval(lifetime.seconds) + TimeInterval(lifetime.attoseconds) / 1e18
        let now = Date()
        let token = StorageSignedToken(url: StorageSignedToken.url(bucket: bucket, key: key), scope: .upload,
                                       owner: identity.userID, upsert: upsert, expiresAt: now.addingTimeInterval(seconds))
            .sign(with: context.signer, now: now)
        let url = "/object/upload/sign/\(bucket)/\(StoragePath.encodedKey(key))?token=\(token)"
        return json(.object([(key: "url", value: .string(url)), (key: "token", value: .string(token))]))
    }

    /// `PUT /object/upload/sign/{bucket}/{key}?token=..` without auth → `{"Key":"bucket/key"}`.
    func uploadSigned(_ bucket: String, _ key: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let token = try StorageSignedToken.verify(try tokenParameter(request), bucket: bucket, key: key, scope: .upload,
                                                  signer: context.signer)
        let body = try StorageUploadBody.parse(headers: request.headers, body: request.body)
        _ = try await store(bucket: bucket, key: key, upload: body, owner: token.owner, upsert: token.upsert)
        return json(.object([(key: "Key", value: .string(StorageSignedToken.url(bucket: bucket, key: key)))]))
    }

    /// The `token` query parameter (400 when missing).
    private func tokenParameter(_ request: HTTPServerRequest) throws(StorageError) -> String {
        guard let token = request.queryValue("token"), !token.isEmpty else {
            throw StorageError.invalidRequest("querystring must have required property 'token'")
        }
        return token
    }
}
