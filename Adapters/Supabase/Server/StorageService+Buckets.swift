import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardPostgres
import SwitchboardNet

/// The bucket endpoints: `GET|POST /bucket`, `GET|PUT|DELETE /bucket/{id}`, `POST /bucket/{id}/empty`.
extension StorageService {
    /// `GET /bucket`: the buckets the caller may see (`?search=`, `?limit=`, `?offset=` honoured).
    func listBuckets(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let role = try identity(request).role
        var rows = try await database { try StorageCatalog.buckets($0) }
            .filter { StorageAccessPolicy.canSeeBucket(role, bucketIsPublic: $0.isPublic) }
        if let search = request.queryValue("search"), !search.isEmpty {
            rows = rows.filter { $0.name.localizedCaseInsensitiveContains(search) }
        }
        let offset = max(0, request.queryValue("offset").flatMap { Int($0) } ?? 0)
        let limit = max(0, request.queryValue("limit").flatMap { Int($0) } ?? rows.count)
        let page = rows.dropFirst(offset).prefix(limit)
        return json(.array(page.map(\.json)))
    }

    /// `GET /bucket/{id}`.
    func getBucket(_ id: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let role = try identity(request).role
        guard let row = try await database({ try StorageCatalog.bucket($0, id: id) }),
              StorageAccessPolicy.canSeeBucket(role, bucketIsPublic: row.isPublic) else {
            throw StorageError.noSuchBucket
        }
        return json(row.json)
    }

    /// `POST /bucket` `{"id","name","public","file_size_limit","allowed_mime_types"}` → `{"name"}`; service_role only.
    func createBucket(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let identity = try bucketManager(request)
        let body = try jsonBody(request)
        let name = try StoragePath.validateBucketName(try requiredString(body, "name"))
        let id = try StoragePath.validateBucketName(body["id"]?.stringValue ?? name)
        let isPublic = StorageValues.bool(body["public"]) ?? false
        let limit = try StorageValues.sizeLimit(body["file_size_limit"])
        let mimeTypes = try StorageValues.mimeTypes(body["allowed_mime_types"])
        let owner = identity.userID
        let inserted = try await database { connection in
            try StorageCatalog.insertBucket(connection, id: id, name: name, owner: owner, isPublic: isPublic,
                                            fileSizeLimit: limit, allowedMimeTypes: mimeTypes)
        }
        guard inserted else { throw StorageError.duplicateBucket }
        let files = self.files
        try await StorageFiles.offload { try files.createBucket(id) }
        return json(.object([(key: "name", value: .string(name))]))
    }

    /// `PUT /bucket/{id}` `{"public","file_size_limit","allowed_mime_types"}` → `{"message":"Successfully updated"}`.
    func updateBucket(_ id: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        _ = try bucketManager(request)
        let body = try jsonBody(request)
        let isPublic = StorageValues.bool(body["public"])
        let limitValue = body["file_size_limit"]
        let limit = try StorageValues.sizeLimit(limitValue)
        let mimeValue = body["allowed_mime_types"]
        let mimeTypes = try StorageValues.mimeTypes(mimeValue)
        let mimeJSON: JSONValue? = mimeValue == nil ? nil : (mimeTypes.map { .array($0.map(JSONValue.string)) } ?? .null)
        let updated = try await database { connection in
            try StorageCatalog.updateBucket(connection, id: id, isPublic: isPublic, fileSizeLimit: limitValue,
                                            allowedMimeTypes: mimeJSON, parsedLimit: limit)
        }
        guard updated else { throw StorageError.noSuchBucket }
        return message("Successfully updated")
    }

    /// `POST /bucket/{id}/empty`: deletes every object → `{"message":"Successfully emptied"}`.
    func emptyBucket(_ id: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        _ = try bucketManager(request)
        let files = self.files
        try await database { connection in
            let removed = try connection.transaction { connection -> [StorageObjectRow] in
                try Self.lockBucket(connection, id: id)
                return try StorageCatalog.deleteAllObjects(connection, bucket: id)
            }
            for row in removed { files.remove(bucket: id, key: row.name, version: row.version) }
        }
        return message("Successfully emptied")
    }

    /// `DELETE /bucket/{id}`: only an empty bucket → `{"message":"Successfully deleted"}`.
    func deleteBucket(_ id: String, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        _ = try bucketManager(request)
        let files = self.files
        try await database { connection in
            try connection.transaction { connection in
                try Self.lockBucket(connection, id: id)
                guard try !StorageCatalog.bucketHasObjects(connection, id: id) else { throw StorageError.bucketNotEmpty }
                _ = try StorageCatalog.deleteBucket(connection, id: id)
            }
            files.removeBucket(id)
        }
        return message("Successfully deleted")
    }

    /// The caller's identity when it may manage buckets (service_role only); row-level security refuses the rest.
    private func bucketManager(_ request: HTTPServerRequest) throws -> RequestIdentity {
        let identity = try identity(request)
        guard StorageAccessPolicy.canManageBuckets(identity.role) else { throw StorageError.rowLevelSecurity(table: "buckets") }
        return identity
    }

    /// Locks bucket `id`'s record for the transaction; no such bucket: `noSuchBucket`.
    private static func lockBucket(_ connection: PostgresConnection, id: String) throws {
        guard try StorageCatalog.bucket(connection, id: id, lock: true) != nil else { throw StorageError.noSuchBucket }
    }
}
