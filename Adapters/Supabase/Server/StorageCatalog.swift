import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardPostgres

/// A bucket record from `storage.buckets`.
struct StorageBucketRow: Sendable, Hashable {
    /// The bucket's id (also its folder name).
    var id: String
    /// The display name.
    var name: String
    /// The `sub` of the creator, if any.
    var owner: String?
    /// Whether objects can be read without a token.
    var isPublic: Bool
    /// The per-bucket object size limit in bytes.
    var fileSizeLimit: Int64?
    /// Accepted content types (`image/*` wildcards allowed); nil accepts all.
    var allowedMimeTypes: [String]?
    /// ISO 8601 creation time.
    var createdAt: String
    /// ISO 8601 update time.
    var updatedAt: String

    /// The JSON the bucket endpoints answer (storage3's `BaseBucket`: `owner` must be a string).
    var json: JSONValue {
        .object([
            (key: "id", value: .string(id)), (key: "name", value: .string(name)), (key: "owner", value: .string(owner ?? "")),
            (key: "public", value: .bool(isPublic)), (key: "type", value: .string("STANDARD")),
            (key: "file_size_limit", value: fileSizeLimit.map { .int($0) } ?? .null),
            (key: "allowed_mime_types", value: allowedMimeTypes.map { .array($0.map(JSONValue.string)) } ?? .null),
            (key: "created_at", value: .string(createdAt)), (key: "updated_at", value: .string(updatedAt)),
        ])
    }
}

/// An object record from `storage.objects`.
struct StorageObjectRow: Sendable, Hashable {
    /// The object's UUID.
    var id: String
    /// The bucket id.
    var bucketID: String
    /// The key.
    var name: String
    /// The uploader's `sub`.
    var owner: String?
    /// The file name of the current version (`~<uuid>`).
    var version: String
    /// The stored content type.
    var contentType: String
    /// The stored cache control.
    var cacheControl: String
    /// The size in bytes.
    var size: Int64
    /// Hex SHA-256 of the bytes.
    var sha256: String
    /// User metadata (a JSON object) or nil.
    var userMetadata: JSONValue?
    /// ISO 8601 creation time.
    var createdAt: String
    /// ISO 8601 update time.
    var updatedAt: String
    /// ISO 8601 last access time.
    var lastAccessedAt: String

    /// The quoted ETag (`"<sha256>"`).
    var eTag: String { "\"\(sha256)\"" }

    /// The `metadata` object the real service keeps per object.
    var metadataJSON: JSONValue {
        .object([
            (key: "eTag", value: .string(eTag)), (key: "size", value: .int(size)), (key: "mimetype", value: .string(contentType)),
            (key: "cacheControl", value: .string(cacheControl)), (key: "lastModified", value: .string(updatedAt)),
            (key: "contentLength", value: .int(size)), (key: "httpStatusCode", value: .int(200)),
        ])
    }

    /// The row as the delete endpoint answers it.
    var json: JSONValue {
        .object([
            (key: "bucket_id", value: .string(bucketID)), (key: "name", value: .string(name)), (key: "id", value: .string(id)),
            (key: "owner", value: owner.map(JSONValue.string) ?? .null), (key: "owner_id", value: owner.map(JSONValue.string) ?? .null),
            (key: "version", value: .string(version)),
            (key: "created_at", value: .string(createdAt)), (key: "updated_at", value: .string(updatedAt)),
            (key: "last_accessed_at", value: .string(lastAccessedAt)), (key: "metadata", value: metadataJSON),
            (key: "user_metadata", value: userMetadata ?? .null),
        ])
    }

    /// The body of `GET /object/info/..`.
    var infoJSON: JSONValue {
        .object([
            (key: "id", value: .string(id)), (key: "name", value: .string(name)), (key: "version", value: .string(version)),
            (key: "bucket_id", value: .string(bucketID)), (key: "size", value: .int(size)),
            (key: "content_type", value: .string(contentType)), (key: "cache_control", value: .string(cacheControl)),
            (key: "etag", value: .string(eTag)), (key: "metadata", value: userMetadata ?? .null),
            (key: "last_modified", value: .string(updatedAt)), (key: "created_at", value: .string(createdAt)),
        ])
    }
}

/// How `POST /object/list` sorts.
struct StorageListOrder: Sendable, Hashable {
    /// A whitelisted column: `name`, `created_at`, `updated_at` or `last_accessed_at`.
    var column: String
    /// Ascending unless `desc` was asked for.
    var ascending: Bool

    /// The order from storage3's `sortBy` (unknown columns fall back to `name`, as the real `search` does).
    init(column: String?, order: String?) {
        let known = ["name", "created_at", "updated_at", "last_accessed_at"]
        let lowered = column?.lowercased() ?? "name"
        self.column = known.contains(lowered) ? lowered : "name"
        self.ascending = order?.lowercased() != "desc"
    }
}

/// The `storage` schema and every query storage runs; all SQL binds its values as parameters.
enum StorageCatalog {
    /// Idempotent DDL creating the `storage` schema; no grants, so REST roles cannot reach it.
    static let schemaSQL = """
        SELECT pg_advisory_xact_lock(7319002117);
        CREATE SCHEMA IF NOT EXISTS storage;
        REVOKE ALL ON SCHEMA storage FROM PUBLIC;
        CREATE TABLE IF NOT EXISTS storage.buckets (
            id text PRIMARY KEY,
            name text NOT NULL UNIQUE,
            owner text,
            public boolean NOT NULL DEFAULT false,
            file_size_limit bigint,
            allowed_mime_types text[],
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE IF NOT EXISTS storage.objects (
            id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
            bucket_id text NOT NULL REFERENCES storage.buckets(id),
            name text NOT NULL COLLATE "C",
            owner text,
            version text NOT NULL,
            content_type text NOT NULL,
            cache_control text NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            user_metadata jsonb,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now(),
            last_accessed_at timestamptz NOT NULL DEFAULT now(),
            UNIQUE (bucket_id, name)
        );
        """

    /// Applies `schemaSQL` in one transaction.
    static func migrate(_ connection: PostgresConnection) throws {
        _ = try connection.transaction { try $0.execute(schemaSQL) }
    }

    /// `column` rendered as ISO 8601 UTC with milliseconds (constant SQL; `column` is never user input).
    private static func iso(_ column: String) -> String {
        "to_char(\(column) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
    }

    /// The bucket columns `bucket(_:)` reads, in order.
    private static var bucketColumns: String {
        "id, name, owner, public, file_size_limit, array_to_json(allowed_mime_types)::text, \(iso("created_at")), \(iso("updated_at"))"
    }

    /// The object columns `object(_:)` reads, in order.
    private static var objectColumns: String {
        "id::text, bucket_id, name, owner, version, content_type, cache_control, size, sha256, user_metadata::text, "
            + "\(iso("created_at")), \(iso("updated_at")), \(iso("last_accessed_at"))"
    }

    /// A bucket from a `bucketColumns` row.
    private static func bucket(_ row: [String?]) -> StorageBucketRow? {
        guard row.count >= 8, let id = row[0], let name = row[1] else { return nil }
        let mimeTypes = row[5].flatMap(JSONValue.parseOrNil)?.arrayValue?.compactMap(\.stringValue)
        return StorageBucketRow(id: id, name: name, owner: row[2], isPublic: row[3] == "t",
                                fileSizeLimit: row[4].flatMap { Int64($0) }, allowedMimeTypes: mimeTypes,
                                createdAt: row[6] ?? "", updatedAt: row[7] ?? "")
    }

    /// An object from an `objectColumns` row.
    private static func object(_ row: [String?]) -> StorageObjectRow? {
        guard row.count >= 13, let id = row[0], let bucketID = row[1], let name = row[2], let version = row[4] else { return nil }
        return StorageObjectRow(id: id, bucketID: bucketID, name: name, owner: row[3], version: version,
                                contentType: row[5] ?? "application/octet-stream", cacheControl: row[6] ?? "no-cache",
                                size: row[7].flatMap { Int64($0) } ?? 0, sha256: row[8] ?? "",
                                userMetadata: row[9].flatMap(JSONValue.parseOrNil), createdAt: row[10] ?? "",
                                updatedAt: row[11] ?? "", lastAccessedAt: row[12] ?? "")
    }

    // MARK: Buckets

    /// Every bucket, by name.
    static func buckets(_ connection: PostgresConnection) throws -> [StorageBucketRow] {
        try connection.query("SELECT \(bucketColumns) FROM storage.buckets ORDER BY name COLLATE \"C\"").rows.compactMap(bucket)
    }

    /// The bucket `id`, optionally locked for the rest of the transaction.
    static func bucket(_ connection: PostgresConnection, id: String, lock: Bool = false) throws -> StorageBucketRow? {
        try connection.query("SELECT \(bucketColumns) FROM storage.buckets WHERE id = $1\(lock ? " FOR UPDATE" : "")", [id])
            .rows.first.flatMap(bucket)
    }

    /// Inserts a bucket; false when the id or name is taken.
    static func insertBucket(_ connection: PostgresConnection, id: String, name: String, owner: String?, isPublic: Bool,
                             fileSizeLimit: Int64?, allowedMimeTypes: [String]?) throws -> Bool {
        let mimes = allowedMimeTypes.map { JSONValue.array($0.map(JSONValue.string)).serialized }
        let result = try connection.query("""
            INSERT INTO storage.buckets (id, name, owner, public, file_size_limit, allowed_mime_types)
            SELECT $1, $2, $3, $4::boolean, $5::bigint,
                   CASE WHEN $6::jsonb IS NULL THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text($6::jsonb)) END
            ON CONFLICT DO NOTHING RETURNING id
            """, [id, name, owner, isPublic ? "true" : "false", fileSizeLimit.map(String.init), mimes])
        return !result.rows.isEmpty
    }

    /// Updates the given settings of bucket `id` (nil leaves a setting alone); false when it does not exist.
    static func updateBucket(_ connection: PostgresConnection, id: String, isPublic: Bool?, fileSizeLimit: JSONValue?,
                             allowedMimeTypes: JSONValue?, parsedLimit: Int64?) throws -> Bool {
        let mimes: String? = allowedMimeTypes.map { $0.isNull ? "null" : $0.serialized }
        let result = try connection.query("""
            UPDATE storage.buckets SET
                public = COALESCE($2::boolean, public),
                file_size_limit = CASE WHEN $3::boolean THEN $4::bigint ELSE file_size_limit END,
                allowed_mime_types = CASE WHEN $5::jsonb IS NULL THEN allowed_mime_types
                                          WHEN jsonb_typeof($5::jsonb) = 'null' THEN NULL
                                          ELSE ARRAY(SELECT jsonb_array_elements_text($5::jsonb)) END,
                updated_at = now()
            WHERE id = $1 RETURNING id
            """, [id, isPublic.map { $0 ? "true" : "false" }, fileSizeLimit == nil ? "false" : "true",
                  parsedLimit.map(String.init), mimes])
        return !result.rows.isEmpty
    }

    /// Deletes bucket `id` if it holds no objects.
    static func deleteBucket(_ connection: PostgresConnection, id: String) throws -> Int {
        try connection.query("DELETE FROM storage.buckets WHERE id = $1", [id]).affectedRows
    }

    /// Whether bucket `id` holds any object.
    static func bucketHasObjects(_ connection: PostgresConnection, id: String) throws -> Bool {
        try !connection.query("SELECT 1 FROM storage.objects WHERE bucket_id = $1 LIMIT 1", [id]).rows.isEmpty
    }

    // MARK: Objects

    /// The object `name` in `bucket`, optionally locked for the rest of the transaction.
    static func object(_ connection: PostgresConnection, bucket: String, name: String, lock: Bool = false) throws -> StorageObjectRow? {
        try connection.query("SELECT \(objectColumns) FROM storage.objects WHERE bucket_id = $1 AND name = $2\(lock ? " FOR UPDATE" : "")",
                             [bucket, name]).rows.first.flatMap(object)
    }

    /// The objects among `names` in `bucket`.
    static func objects(_ connection: PostgresConnection, bucket: String, names: [String]) throws -> [StorageObjectRow] {
        let array = JSONValue.array(names.map(JSONValue.string)).serialized
        return try connection.query("""
            SELECT \(objectColumns) FROM storage.objects
            WHERE bucket_id = $1 AND name = ANY(ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))
            """, [bucket, array]).rows.compactMap(object)
    }

    /// The content fields written on upload.
    struct Content: Sendable {
        /// The version file name.
        var version: String
        /// The content type.
        var contentType: String
        /// The cache control.
        var cacheControl: String
        /// The size in bytes.
        var size: Int64
        /// Hex SHA-256.
        var sha256: String
        /// User metadata or nil.
        var userMetadata: JSONValue?
    }

    /// Inserts an object row; nil when the key already exists.
    static func insertObject(_ connection: PostgresConnection, bucket: String, name: String, owner: String?,
                             content: Content) throws -> String? {
        try connection.query("""
            INSERT INTO storage.objects (bucket_id, name, owner, version, content_type, cache_control, size, sha256, user_metadata)
            VALUES ($1, $2, $3, $4, $5, $6, $7::bigint, $8, $9::jsonb)
            ON CONFLICT (bucket_id, name) DO NOTHING RETURNING id::text
            """, [bucket, name, owner, content.version, content.contentType, content.cacheControl, String(content.size),
                  content.sha256, content.userMetadata?.serialized]).rows.first?.first ?? nil
    }

    /// Replaces the content of an existing object row.
    static func replaceObject(_ connection: PostgresConnection, id: String, owner: String?, content: Content) throws {
        try connection.query("""
            UPDATE storage.objects SET owner = $2, version = $3, content_type = $4, cache_control = $5, size = $6::bigint,
                sha256 = $7, user_metadata = $8::jsonb, updated_at = now()
            WHERE id = $1::uuid
            """, [id, owner, content.version, content.contentType, content.cacheControl, String(content.size), content.sha256,
                  content.userMetadata?.serialized])
    }

    /// Renames an object row (possibly into another bucket).
    static func renameObject(_ connection: PostgresConnection, id: String, bucket: String, name: String) throws {
        try connection.query("UPDATE storage.objects SET bucket_id = $2, name = $3, updated_at = now() WHERE id = $1::uuid",
                             [id, bucket, name])
    }

    /// Deletes the objects among `names` in `bucket`, returning them.
    static func deleteObjects(_ connection: PostgresConnection, bucket: String, names: [String]) throws -> [StorageObjectRow] {
        let array = JSONValue.array(names.map(JSONValue.string)).serialized
        return try connection.query("""
            DELETE FROM storage.objects
            WHERE bucket_id = $1 AND name = ANY(ARRAY(SELECT jsonb_array_elements_text($2::jsonb)))
            RETURNING \(objectColumns)
            """, [bucket, array]).rows.compactMap(object)
    }

    /// Deletes every object of `bucket`, returning them.
    static func deleteAllObjects(_ connection: PostgresConnection, bucket: String) throws -> [StorageObjectRow] {
        try connection.query("DELETE FROM storage.objects WHERE bucket_id = $1 RETURNING \(objectColumns)", [bucket])
            .rows.compactMap(object)
    }

    /// One level of `bucket` below `folder` (`""` or ending in `/`): sub-folders (no id) and objects, relative names.
    static func list(_ connection: PostgresConnection, bucket: String, folder: String, search: String,
                     order: StorageListOrder, limit: Int, offset: Int) throws -> [JSONValue] {
        let direction = order.ascending ? "ASC" : "DESC"
        let orderSQL = order.column == "name"
            ? "entry COLLATE \"C\" \(direction)"
            : "is_folder DESC, sort_key \(direction) NULLS FIRST, entry COLLATE \"C\" ASC"
        let sortKey = order.column == "name" ? "NULL::timestamptz" : order.column
        let sql = """
            WITH level AS (
                SELECT substr(name, length($2) + 1) AS rest, id, created_at, updated_at, last_accessed_at,
                       version, content_type, cache_control, size, sha256
                FROM storage.objects
                WHERE bucket_id = $1 AND left(name, length($2)) = $2
            ), entries AS (
                SELECT split_part(rest, '/', 1) AS entry, position('/' in rest) > 0 AS is_folder, * FROM level
            ), merged AS (
                SELECT entry, true AS is_folder, NULL::text AS id, NULL::timestamptz AS created_at,
                       NULL::timestamptz AS updated_at, NULL::timestamptz AS last_accessed_at, NULL::text AS content_type,
                       NULL::text AS cache_control, NULL::bigint AS size, NULL::text AS sha256, NULL::timestamptz AS sort_key
                FROM entries WHERE is_folder GROUP BY entry
                UNION ALL
                SELECT entry, false, id::text, created_at, updated_at, last_accessed_at, content_type, cache_control,
                       size, sha256, \(sortKey)
                FROM entries WHERE NOT is_folder
            )
            SELECT entry, id, \(iso("updated_at")), \(iso("created_at")), \(iso("last_accessed_at")),
                   content_type, cache_control, size, sha256
            FROM merged
            WHERE lower(left(entry, length($3))) = lower($3)
            ORDER BY \(orderSQL)
            LIMIT $4::int OFFSET $5::int
            """
        let result = try connection.query(sql, [bucket, folder, search, String(limit), String(offset)])
        return result.rows.map { row in
            let name = JSONValue.string(row[0] ?? "")
            guard let id = row[1] else {
                return .object([(key: "name", value: name), (key: "id", value: .null), (key: "updated_at", value: .null),
                                (key: "created_at", value: .null), (key: "last_accessed_at", value: .null),
                                (key: "metadata", value: .null)])
            }
            let size = row[7].flatMap { Int64($0) } ?? 0
            let metadata = JSONValue.object([
                (key: "eTag", value: .string("\"\(row[8] ?? "")\"")), (key: "size", value: .int(size)),
                (key: "mimetype", value: .string(row[5] ?? "")), (key: "cacheControl", value: .string(row[6] ?? "")),
                (key: "lastModified", value: .string(row[2] ?? "")), (key: "contentLength", value: .int(size)),
                (key: "httpStatusCode", value: .int(200)),
            ])
            return .object([(key: "name", value: name), (key: "id", value: .string(id)),
                            (key: "updated_at", value: .string(row[2] ?? "")), (key: "created_at", value: .string(row[3] ?? "")),
                            (key: "last_accessed_at", value: .string(row[4] ?? "")), (key: "metadata", value: metadata)])
        }
    }
}
