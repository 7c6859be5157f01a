import SwitchboardNet

/// One storage API operation, parsed from a method and the path below `/storage/v1`; pure.
enum StorageRoute: Sendable, Hashable {
    /// How a download route authorizes the caller.
    enum Access: Sendable, Hashable {
        /// `/object/{bucket}/..` and `/object/authenticated/{bucket}/..`: a valid token is required.
        case authenticated
        /// `/object/public/{bucket}/..`: no token; the bucket must be public.
        case publicBucket
    }

    /// `GET /bucket`.
    case listBuckets
    /// `POST /bucket`.
    case createBucket
    /// `GET /bucket/{id}`.
    case getBucket(String)
    /// `PUT /bucket/{id}`.
    case updateBucket(String)
    /// `DELETE /bucket/{id}`.
    case deleteBucket(String)
    /// `POST /bucket/{id}/empty`.
    case emptyBucket(String)
    /// `POST /object/list/{bucket}`.
    case listObjects(bucket: String)
    /// `POST /object/move`.
    case moveObject
    /// `POST /object/copy`.
    case copyObject
    /// `DELETE /object/{bucket}` with `{"prefixes":[..]}`.
    case deleteObjects(bucket: String)
    /// `DELETE /object/{bucket}/{key}`.
    case deleteObject(bucket: String, key: String)
    /// `POST /object/sign/{bucket}` with `{"paths":[..],"expiresIn":..}`.
    case signURLs(bucket: String)
    /// `POST /object/sign/{bucket}/{key}`.
    case signURL(bucket: String, key: String)
    /// `GET|HEAD /object/sign/{bucket}/{key}?token=`.
    case getSigned(bucket: String, key: String, head: Bool)
    /// `POST /object/upload/sign/{bucket}/{key}`.
    case signUpload(bucket: String, key: String)
    /// `PUT /object/upload/sign/{bucket}/{key}?token=`.
    case uploadSigned(bucket: String, key: String)
    /// `GET|HEAD /object[/authenticated|/public]/{bucket}/{key}`.
    case getObject(Access, bucket: String, key: String, head: Bool)
    /// `GET /object/info[/authenticated|/public]/{bucket}/{key}`.
    case objectInfo(Access, bucket: String, key: String)
    /// `POST /object/{bucket}/{key}` (create; `upsert` false) or `PUT` (update, which upserts).
    case upload(bucket: String, key: String, isUpdate: Bool)

    /// The route for `method` and `path` (the part after `/storage/v1`, already percent-decoded by the server).
    ///
    /// Bucket names and keys are validated here, so every route carries only safe names.
    static func parse(method: HTTPMethod, path: String) throws(StorageError) -> StorageRoute {
        let notFound = StorageError.routeNotFound(method: method.rawValue, path: path)
        guard path.hasPrefix("/") else { throw notFound }
        let segments = path.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard let head = segments.first else { throw notFound }
        let rest = Array(segments.dropFirst())
        switch head {
        case "bucket": return try bucketRoute(method: method, rest, notFound: notFound)
        case "object": return try objectRoute(method: method, path: path, rest, notFound: notFound)
        default: throw notFound
        }
    }

    /// The `/bucket` routes.
    private static func bucketRoute(method: HTTPMethod, _ rest: [String], notFound: StorageError) throws(StorageError) -> StorageRoute {
        if rest.isEmpty || rest == [""] {
            switch method {
            case .get: return .listBuckets
            case .post: return .createBucket
            default: throw notFound
            }
        }
        switch (method, rest.count) {
        case (.get, 1): return .getBucket(try StoragePath.validateBucketName(rest[0]))
        case (.put, 1): return .updateBucket(try StoragePath.validateBucketName(rest[0]))
        case (.delete, 1): return .deleteBucket(try StoragePath.validateBucketName(rest[0]))
        case (.post, 2) where rest[1] == "empty": return .emptyBucket(try StoragePath.validateBucketName(rest[0]))
        default: throw notFound
        }
    }

    /// The `/object` routes.
    private static func objectRoute(method: HTTPMethod, path: String, _ rest: [String],
                                    notFound: StorageError) throws(StorageError) -> StorageRoute {
        guard let first = rest.first else { throw notFound }
        let isRead = method == .get || method == .head
        // Static prefixes first, as Fastify matches them before the `/:bucketName/*` routes.
        switch (first, method) {
        case ("list", .post) where rest.count == 2:
            return .listObjects(bucket: try StoragePath.validateBucketName(rest[1]))
        case ("move", .post) where rest.count == 1: return .moveObject
        case ("copy", .post) where rest.count == 1: return .copyObject
        case ("sign", .post) where rest.count == 2:
            return .signURLs(bucket: try StoragePath.validateBucketName(rest[1]))
        case ("sign", .post):
            let (bucket, key) = try bucketAndKey(rest.dropFirst(), notFound: notFound)
            return .signURL(bucket: bucket, key: key)
        case ("sign", _) where isRead:
            let (bucket, key) = try bucketAndKey(rest.dropFirst(), notFound: notFound)
            return .getSigned(bucket: bucket, key: key, head: method == .head)
        case ("upload", .post) where rest.count > 1 && rest[1] == "sign":
            let (bucket, key) = try bucketAndKey(rest.dropFirst(2), notFound: notFound)
            return .signUpload(bucket: bucket, key: key)
        case ("upload", .put) where rest.count > 1 && rest[1] == "sign":
            let (bucket, key) = try bucketAndKey(rest.dropFirst(2), notFound: notFound)
            return .uploadSigned(bucket: bucket, key: key)
        case ("public", _) where isRead:
            let (bucket, key) = try bucketAndKey(rest.dropFirst(), notFound: notFound)
            return .getObject(.publicBucket, bucket: bucket, key: key, head: method == .head)
        case ("authenticated", _) where isRead:
            let (bucket, key) = try bucketAndKey(rest.dropFirst(), notFound: notFound)
            return .getObject(.authenticated, bucket: bucket, key: key, head: method == .head)
        case ("info", .get):
            var tail = rest.dropFirst()
            var access = Access.authenticated
            if tail.first == "public" {
                access = .publicBucket
                tail = tail.dropFirst()
            } else if tail.first == "authenticated" {
                tail = tail.dropFirst()
            }
            let (bucket, key) = try bucketAndKey(tail, notFound: notFound)
            return .objectInfo(access, bucket: bucket, key: key)
        default:
            break
        }
        if rest.count == 1 || (rest.count == 2 && rest[1].isEmpty) {
            guard method == .delete else { throw notFound }
            return .deleteObjects(bucket: try StoragePath.validateBucketName(rest[0]))
        }
        let (bucket, key) = try bucketAndKey(rest[...], notFound: notFound)
        switch method {
        case .get, .head: return .getObject(.authenticated, bucket: bucket, key: key, head: method == .head)
        case .post: return .upload(bucket: bucket, key: key, isUpdate: false)
        case .put: return .upload(bucket: bucket, key: key, isUpdate: true)
        case .delete: return .deleteObject(bucket: bucket, key: key)
        default: throw notFound
        }
    }

    /// The bucket (first segment) and validated key (the rest, re-joined with `/`).
    private static func bucketAndKey(_ segments: ArraySlice<String>, notFound: StorageError) throws(StorageError) -> (String, String) {
        guard let bucket = segments.first, segments.count >= 2 else { throw notFound }
        let key = segments.dropFirst().joined(separator: "/")
        try StoragePath.validateKey(key)
        return (try StoragePath.validateBucketName(bucket), key)
    }
}
