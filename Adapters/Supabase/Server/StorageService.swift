import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet
import SwitchboardPostgres

/// Supabase-style storage at `/storage/v1`: buckets as folders, metadata in the `storage` schema.
///
/// Buckets live in `<dataDirectory>/storage/<bucket>/`, each object version in `<bucket>/<key>/~<version>`;
/// bucket and object records (owner, content type, size, SHA-256 ETag, times) are rows of `storage.buckets` and
/// `storage.objects`, so listing and info are queries. Errors follow supabase/storage (`StorageError`). Access
/// follows `StorageAccessPolicy`, a fixed stand-in for the RLS policies real Supabase applies.
final class StorageService: Sendable {
    /// The shared server context (configuration, pool, signer, log).
    let context: SupabaseServerContext
    /// The bucket folders.
    let files: StorageFiles

    /// Creates the `storage` schema (idempotent) and the storage folder.
    init(context: SupabaseServerContext) throws {
        self.context = context
        self.files = try StorageFiles(root: context.configuration.dataDirectory.appendingPathComponent("storage", isDirectory: true))
        try context.pool.run { try StorageCatalog.migrate($0) }
    }

    /// Answers one request below `/storage/v1`.
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        let isHead = request.method == .head
        let prefix = "/storage/v1"
        let path = request.path.hasPrefix(prefix) ? String(request.path.dropFirst(prefix.count)) : request.path
        do {
            let route = try StorageRoute.parse(method: request.method, path: path)
            return try await dispatch(route, request)
        } catch let error as StorageError {
            return error.response(forHead: isHead)
        } catch {
            context.logger.error("storage: \(request.method) \(StorageError.printable(request.path)) failed: \(error)")
            return StorageError.internalError.response(forHead: isHead)
        }
    }

    /// Runs the handler for `route`.
    private func dispatch(_ route: StorageRoute, _ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        switch route {
        case .listBuckets: return try await listBuckets(request)
        case .createBucket: return try await createBucket(request)
        case .getBucket(let id): return try await getBucket(id, request)
        case .updateBucket(let id): return try await updateBucket(id, request)
        case .deleteBucket(let id): return try await deleteBucket(id, request)
        case .emptyBucket(let id): return try await emptyBucket(id, request)
        case .listObjects(let bucket): return try await listObjects(bucket, request)
        case .moveObject: return try await moveObject(request)
        case .copyObject: return try await copyObject(request)
        case .deleteObjects(let bucket): return try await deleteObjects(bucket, request)
        case .deleteObject(let bucket, let key): return try await deleteObject(bucket, key, request)
        case .signURLs(let bucket): return try await signURLs(bucket, request)
        case .signURL(let bucket, let key): return try await signURL(bucket, key, request)
        case .getSigned(let bucket, let key, let head): return try await getSigned(bucket, key, head: head, request)
        case .signUpload(let bucket, let key): return try await signUpload(bucket, key, request)
        case .uploadSigned(let bucket, let key): return try await uploadSigned(bucket, key, request)
        case .getObject(let access, let bucket, let key, let head):
            return try await getObject(access, bucket, key, head: head, request)
        case .objectInfo(let access, let bucket, let key): return try await objectInfo(access, bucket, key, request)
        case .upload(let bucket, let key, let isUpdate): return try await upload(bucket, key, isUpdate: isUpdate, request)
        }
    }

    // MARK: Shared helpers

    /// The caller's verified identity (403 `AccessDenied` otherwise).
    func identity(_ request: HTTPServerRequest) throws(StorageError) -> RequestIdentity {
        try StorageAuthentication.identity(headers: request.headers, signer: context.signer)
    }

    /// Runs `body` with a pooled connection, off the cooperative pool.
    func database<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await context.pool.withConnection(body)
    }

    /// A JSON response.
    func json(_ value: JSONValue, status: Int = 200) -> HTTPServerResponse {
        .json(Data(value.serialized.utf8), status: status)
    }

    /// `{"message": text}`.
    func message(_ text: String) -> HTTPServerResponse { json(.object([(key: "message", value: .string(text))])) }

    /// The request body as a JSON object (an empty body reads as `{}`).
    func jsonBody(_ request: HTTPServerRequest) throws(StorageError) -> JSONValue {
        if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return .object([]) }
        guard let value = JSONValue.parseOrNil(request.body), value.objectValue != nil else {
            throw StorageError.invalidRequest("Body must be a JSON object")
        }
        return value
    }

    /// A required string member of a JSON body.
    func requiredString(_ body: JSONValue, _ name: String) throws(StorageError) -> String {
        guard let value = body[name]?.stringValue, !value.isEmpty else {
            throw StorageError.invalidRequest("body must have required property '\(name)'")
        }
        return value
    }

    /// Stores an upload's bytes as `key` in `bucket` after the bucket's size and type checks; returns the row id.
    func store(bucket: String, key: String, upload: StorageUploadBody, owner: String?, upsert: Bool) async throws -> String {
        let files = self.files
        let maxObjectSize = Int64(context.configuration.maxObjectSize)
        return try await database { connection in
            guard let bucketRow = try StorageCatalog.bucket(connection, id: bucket) else { throw StorageError.noSuchBucket }
            let limit = min(maxObjectSize, bucketRow.fileSizeLimit ?? Int64.max)
            guard Int64(upload.data.count) <= limit else { throw StorageError.entityTooLarge(limit: Int(limit)) }
            guard StorageUploadBody.isAllowed(mimeType: upload.contentType, allowed: bucketRow.allowedMimeTypes) else {
                throw StorageError.invalidMimeType(upload.contentType)
            }
            if !upsert, try StorageCatalog.object(connection, bucket: bucket, name: key) != nil {
                throw StorageError.duplicateObject
            }
            let (temporary, sha256) = try files.writeTemporary(upload.data)
            let content = StorageCatalog.Content(version: StoragePath.newVersion(), contentType: upload.contentType,
                                                 cacheControl: upload.cacheControl, size: Int64(upload.data.count),
                                                 sha256: sha256, userMetadata: upload.userMetadata)
            return try Self.commit(connection, files: files, temporary: temporary, bucket: bucket, key: key, owner: owner,
                                   upsert: upsert, content: content)
        }
    }

    /// Renames `temporary` into place as a new version and records it; on failure nothing stays behind.
    static func commit(_ connection: PostgresConnection, files: StorageFiles, temporary: URL, bucket: String, key: String,
                       owner: String?, upsert: Bool, content: StorageCatalog.Content) throws -> String {
        do {
            _ = try files.install(temporary, bucket: bucket, key: key, version: content.version)
        } catch {
            files.discard(temporary)
            throw error
        }
        do {
            let (id, oldVersion) = try connection.transaction { connection -> (String, String?) in
                if let existing = try StorageCatalog.object(connection, bucket: bucket, name: key, lock: true) {
                    guard upsert else { throw StorageError.duplicateObject }
                    try StorageCatalog.replaceObject(connection, id: existing.id, owner: owner, content: content)
                    return (existing.id, existing.version)
                }
                guard let id = try StorageCatalog.insertObject(connection, bucket: bucket, name: key, owner: owner,
                                                               content: content) else {
                    throw StorageError.duplicateObject
                }
                return (id, nil)
            }
            if let oldVersion, oldVersion != content.version { files.remove(bucket: bucket, key: key, version: oldVersion) }
            return id
        } catch {
            files.remove(bucket: bucket, key: key, version: content.version)
            throw error
        }
    }

    /// The object row and (unless `withData` is false) its bytes; retries once if an upsert replaced the file
    /// between the lookup and the read.
    static func readObject(_ connection: PostgresConnection, files: StorageFiles, bucket: String, key: String,
                           withData: Bool) throws -> (StorageObjectRow, Data) {
        var attempt = 0
        while true {
            guard let row = try StorageCatalog.object(connection, bucket: bucket, name: key) else { throw StorageError.noSuchKey }
            guard withData else { return (row, Data()) }
            do {
                return (row, try files.read(bucket: bucket, key: key, version: row.version))
            } catch {
                attempt += 1
                if attempt >= 2 { throw error }
            }
        }
    }

    /// The download response: content headers, ETag, `If-None-Match` → 304, `?download=` → attachment, and one
    /// byte range (`Range: bytes=…`, honoured unless an `If-Range` names another version) → 206 or 416.
    func objectResponse(_ row: StorageObjectRow, data: Data, head: Bool, request: HTTPServerRequest,
                        expires: Date? = nil) -> HTTPServerResponse {
        var headers: HTTPHeaders = ["Content-Type": row.contentType, "Cache-Control": row.cacheControl, "ETag": row.eTag,
                                    "Accept-Ranges": "bytes"]
        if let lastModified = Self.httpDate(fromISO: row.updatedAt) { headers["Last-Modified"] = lastModified }
        if let expires { headers["Expires"] = Self.httpDate(expires) }
        if let download = request.queryValue("download") {
            let name = download.isEmpty ? String(row.name.split(separator: "/").last ?? "") : download
            let safe = String(name.unicodeScalars.filter { $0.value >= 0x20 && $0.value < 0x7F && $0 != "\"" && $0 != "\\" })
            headers["Content-Disposition"] = "attachment; filename=\"\(safe)\""
        }
        if let match = request.headers["If-None-Match"], match.split(separator: ",").contains(where: {
            $0.trimmingCharacters(in: .whitespaces) == row.eTag || $0.trimmingCharacters(in: .whitespaces) == "*"
        }) {
            return HTTPServerResponse(status: 304, headers: headers, body: Data())
        }
        let ifRange = request.headers["If-Range"].map { $0.trimmingCharacters(in: .whitespaces) }
        let range = ifRange == nil || ifRange == row.eTag ? HTTPByteRange.resolve(request.headers["Range"], length: data.count) : .whole
        headers["Content-Range"] = range.contentRange(length: data.count)
        switch range {
        case .whole:
            return HTTPServerResponse(status: 200, headers: headers, body: head ? Data() : data)
        case let .partial(bytes):
            return HTTPServerResponse(status: 206, headers: headers, body: head ? Data() : data.subdata(in: data.startIndex + bytes.lowerBound..<data.startIndex + bytes.upperBound))
        case .unsatisfiable:
            return HTTPServerResponse(status: 416, headers: headers, body: Data())
        }
    }

    /// An RFC 9110 date.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// An RFC 9110 date from the catalog's ISO 8601 text.
    static func httpDate(fromISO text: String) -> String? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text).map(httpDate)
    }
}
