import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet

/// The object endpoints: upload, download, info, list, delete, move, copy.
extension StorageService {
    /// `POST /object/{bucket}/{key}` (409 `Duplicate` unless `x-upsert: true`) or `PUT` (upsert) → `{"Id","Key"}`.
    func upload(_ bucket: String, _ key: String, isUpdate: Bool, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        let body = try StorageUploadBody.parse(headers: request.headers, body: request.body)
        let upsert = isUpdate || request.headers["x-upsert"]?.lowercased() == "true"
        let id = try await store(bucket: bucket, key: key, upload: body, owner: identity.userID, upsert: upsert)
        return json(.object([(key: "Id", value: .string(id)),
                             (key: "Key", value: .string(StorageSignedToken.url(bucket: bucket, key: key)))]))
    }

    /// `GET|HEAD /object[/authenticated|/public]/{bucket}/{key}`.
    ///
    /// The public route needs no token but a public bucket; the others need a token whose role may read the bucket
    /// (anon on a private bucket gets 404 `not_found`, as RLS would hide the row).
    func getObject(_ access: StorageRoute.Access, _ bucket: String, _ key: String, head: Bool,
                   _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let (row, data) = try await readChecked(access, bucket, key, withData: !head, request)
        return objectResponse(row, data: data, head: head, request: request)
    }

    /// `GET /object/info[/authenticated|/public]/{bucket}/{key}` → the object's record.
    func objectInfo(_ access: StorageRoute.Access, _ bucket: String, _ key: String,
                    _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let (row, _) = try await readChecked(access, bucket, key, withData: false, request)
        var response = json(row.infoJSON)
        response.headers["ETag"] = row.eTag
        response.headers["Cache-Control"] = row.cacheControl
        return response
    }

    /// Reads an object after the access checks of `access`.
    private func readChecked(_ access: StorageRoute.Access, _ bucket: String, _ key: String, withData: Bool,
                             _ request: HTTPServerRequest) async throws -> (StorageObjectRow, Data) {
        let role = access == .publicBucket ? nil : try identity(request).role
        let files = self.files
        return try await database { connection in
            guard let bucketRow = try StorageCatalog.bucket(connection, id: bucket) else { throw StorageError.noSuchBucket }
            if let role {
                guard StorageAccessPolicy.canRead(role, bucketIsPublic: bucketRow.isPublic) else { throw StorageError.noSuchKey }
            } else {
                guard bucketRow.isPublic else { throw StorageError.noSuchBucket }
            }
            return try Self.readObject(connection, files: files, bucket: bucket, key: key, withData: withData)
        }
    }

    /// `POST /object/list/{bucket}` `{"prefix","limit","offset","sortBy":{"column","order"},"search"}`.
    func listObjects(_ bucket: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let role = try identity(request).role
        let body = try jsonBody(request)
        var prefix = body["prefix"]?.stringValue ?? ""
        while prefix.hasPrefix("/") { prefix.removeFirst() }
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let folder = prefix.isEmpty ? "" : prefix + "/"
        let search = body["search"]?.stringValue ?? ""
        let limit = min(max(StorageValues.integer(body["limit"], fallback: 100), 0), 1000)
        let offset = max(StorageValues.integer(body["offset"], fallback: 0), 0)
        let order = StorageListOrder(column: body["sortBy"]?["column"]?.stringValue, order: body["sortBy"]?["order"]?.stringValue)
        let entries = try await database { connection -> [JSONValue] in
            guard let bucketRow = try StorageCatalog.bucket(connection, id: bucket) else { throw StorageError.noSuchBucket }
            // What RLS would do for a role without a read policy: an empty listing.
            guard StorageAccessPolicy.canRead(role, bucketIsPublic: bucketRow.isPublic) else { return [] }
            return try StorageCatalog.list(connection, bucket: bucket, folder: folder, search: search, order: order,
                                           limit: limit, offset: offset)
        }
        return json(.array(entries))
    }

    /// `DELETE /object/{bucket}` `{"prefixes":[keys]}` → the deleted records.
    func deleteObjects(_ bucket: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        guard let prefixes = try jsonBody(request)["prefixes"]?.arrayValue else {
            throw StorageError.invalidRequest("body must have required property 'prefixes'")
        }
        guard prefixes.count <= 1000 else { throw StorageError.invalidRequest("At most 1000 objects can be deleted per request.") }
        // Keys that are not valid cannot name an object, so they are skipped rather than looked up.
        let names = prefixes.compactMap(\.stringValue).filter { (try? StoragePath.validateKey($0)) != nil }
        let files = self.files
        let removed = try await database { connection -> [StorageObjectRow] in
            guard try StorageCatalog.bucket(connection, id: bucket) != nil else { throw StorageError.noSuchBucket }
            let rows = try StorageCatalog.deleteObjects(connection, bucket: bucket, names: names)
            for row in rows { files.remove(bucket: bucket, key: row.name, version: row.version) }
            return rows
        }
        return json(.array(removed.map(\.json)))
    }

    /// `DELETE /object/{bucket}/{key}` → `{"message":"Successfully deleted"}`.
    func deleteObject(_ bucket: String, _ key: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        let files = self.files
        try await database { connection in
            guard try StorageCatalog.bucket(connection, id: bucket) != nil else { throw StorageError.noSuchBucket }
            guard let row = try StorageCatalog.deleteObjects(connection, bucket: bucket, names: [key]).first else {
                throw StorageError.noSuchKey
            }
            files.remove(bucket: bucket, key: row.name, version: row.version)
        }
        return message("Successfully deleted")
    }

    /// The `bucketId`, `sourceKey`, `destinationBucket` and `destinationKey` of a move or copy body, validated.
    private func transfer(_ request: HTTPServerRequest) throws(StorageError) -> (String, String, String, String) {
        let body = try jsonBody(request)
        let bucket = try StoragePath.validateBucketName(try requiredString(body, "bucketId"))
        let source = try requiredString(body, "sourceKey")
        let destination = try requiredString(body, "destinationKey")
        try StoragePath.validateKey(source)
        try StoragePath.validateKey(destination)
        let destinationBucket = try StoragePath.validateBucketName(body["destinationBucket"]?.stringValue ?? bucket)
        return (bucket, source, destinationBucket, destination)
    }

    /// `POST /object/move` `{"bucketId","sourceKey","destinationKey","destinationBucket"?}`.
    func moveObject(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        let (bucket, source, destinationBucket, destination) = try transfer(request)
        let files = self.files
        let id = try await database { connection -> String in
            var moved: StorageObjectRow?
            do {
                return try connection.transaction { connection -> String in
                    guard try StorageCatalog.bucket(connection, id: bucket) != nil,
                          try StorageCatalog.bucket(connection, id: destinationBucket) != nil else { throw StorageError.noSuchBucket }
                    guard let row = try StorageCatalog.object(connection, bucket: bucket, name: source, lock: true) else {
                        throw StorageError.noSuchKey
                    }
                    guard bucket != destinationBucket || source != destination else { return row.id }
                    guard try StorageCatalog.object(connection, bucket: destinationBucket, name: destination) == nil else {
                        throw StorageError.duplicateObject
                    }
                    try StorageCatalog.renameObject(connection, id: row.id, bucket: destinationBucket, name: destination)
                    try files.move(bucket: bucket, key: source, version: row.version, toBucket: destinationBucket, toKey: destination)
                    moved = row
                    return row.id
                }
            } catch {
                // The commit failed after the file moved: put it back where the catalog still says it is.
                if let moved {
                    try? files.move(bucket: destinationBucket, key: destination, version: moved.version,
                                    toBucket: bucket, toKey: source)
                }
                throw error
            }
        }
        return json(.object([(key: "message", value: .string("Successfully moved")), (key: "Id", value: .string(id)),
                             (key: "Key", value: .string(destination))]))
    }

    /// `POST /object/copy` `{"bucketId","sourceKey","destinationKey","destinationBucket"?}` (`x-upsert` honoured).
    func copyObject(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try identity(request)
        guard StorageAccessPolicy.canWrite(identity.role) else { throw StorageError.rowLevelSecurity(table: "objects") }
        let (bucket, source, destinationBucket, destination) = try transfer(request)
        let upsert = request.headers["x-upsert"]?.lowercased() == "true"
        let owner = identity.userID
        let files = self.files
        let id = try await database { connection -> String in
            guard try StorageCatalog.bucket(connection, id: bucket) != nil,
                  try StorageCatalog.bucket(connection, id: destinationBucket) != nil else { throw StorageError.noSuchBucket }
            guard let row = try StorageCatalog.object(connection, bucket: bucket, name: source) else { throw StorageError.noSuchKey }
            if !upsert, try StorageCatalog.object(connection, bucket: destinationBucket, name: destination) != nil {
                throw StorageError.duplicateObject
            }
            let temporary = try files.copyToTemporary(bucket: bucket, key: source, version: row.version)
            let content = StorageCatalog.Content(version: StoragePath.newVersion(), contentType: row.contentType,
                                                 cacheControl: row.cacheControl, size: row.size, sha256: row.sha256,
                                                 userMetadata: row.userMetadata)
            return try Self.commit(connection, files: files, temporary: temporary, bucket: destinationBucket, key: destination,
                                   owner: owner, upsert: upsert, content: content)
        }
        return json(.object([(key: "Id", value: .string(id)),
                             (key: "Key", value: .string(StorageSignedToken.url(bucket: destinationBucket, key: destination)))]))
    }
}
