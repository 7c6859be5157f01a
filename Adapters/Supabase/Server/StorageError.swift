import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet

/// A storage API failure in supabase/storage's shape: `{"statusCode":"409","code","error","message"}`.
///
/// Like the real service, every non-500 failure is answered with HTTP 400 and the meaningful status travels as a
/// string in `statusCode`; internal failures answer 500. Unknown routes answer a real 404 (as Fastify does).
struct StorageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The status the real service reports in the body (`"404"`, `"409"`, …).
    let statusCode: Int
    /// The machine-readable code (`NoSuchKey`, `ResourceAlreadyExists`, …).
    let code: String
    /// The legacy `error` field (`not_found`, `Duplicate`, `Unauthorized`, …).
    let error: String
    /// What went wrong, for people; never contains a token or secret.
    let message: String
    /// The HTTP status actually sent; `nil` means the storage rule (400, or 500 for internal errors).
    var httpStatusOverride: Int?

    /// An error with every field given.
    init(statusCode: Int, code: String, error: String? = nil, message: String, httpStatus: Int? = nil) {
        self.statusCode = statusCode
        self.code = code
        self.error = error ?? code
        self.message = message
        self.httpStatusOverride = httpStatus
    }

    /// The HTTP status: 500 for internal errors, otherwise 400 (unless overridden).
    var httpStatus: Int { httpStatusOverride ?? (statusCode >= 500 ? 500 : 400) }

    /// `code: message`.
    var description: String { "\(statusCode) \(code): \(message)" }

    /// The JSON body, members in the real service's order.
    var json: JSONValue {
        .object([(key: "statusCode", value: .string(String(statusCode))), (key: "code", value: .string(code)),
                 (key: "error", value: .string(error)), (key: "message", value: .string(message))])
    }

    /// The HTTP response carrying this error (an empty body for `HEAD`).
    func response(forHead: Bool = false) -> HTTPServerResponse {
        HTTPServerResponse(status: httpStatus, headers: ["Content-Type": "application/json"],
                           body: forHead ? Data() : Data(json.serialized.utf8))
    }

    /// 404 `NoSuchBucket` "Bucket not found".
    static let noSuchBucket = StorageError(statusCode: 404, code: "NoSuchBucket", error: "Bucket not found",
                                           message: "Bucket not found")
    /// 404 `NoSuchKey` "Object not found" (`error: not_found`, which storage3's `exists()` looks for).
    static let noSuchKey = StorageError(statusCode: 404, code: "NoSuchKey", error: "not_found", message: "Object not found")
    /// 409 `ResourceAlreadyExists` for an object that exists and was not upserted.
    static let duplicateObject = StorageError(statusCode: 409, code: "ResourceAlreadyExists", error: "Duplicate",
                                              message: "The resource already exists")
    /// 409 `BucketAlreadyExists`.
    static let duplicateBucket = StorageError(statusCode: 409, code: "BucketAlreadyExists", error: "Duplicate",
                                              message: "The resource already exists")
    /// 409 `ResourceNotEmpty` when deleting a bucket that still holds objects.
    static let bucketNotEmpty = StorageError(statusCode: 409, code: "ResourceNotEmpty",
                                             message: "The bucket you tried to delete is not empty")
    /// 500 `InternalError` (details go to the log only).
    static let internalError = StorageError(statusCode: 500, code: "InternalError", error: "Internal",
                                            message: "Internal server error")

    /// 413 `EntityTooLarge` ("Payload too large").
    static func entityTooLarge(limit: Int) -> StorageError {
        StorageError(statusCode: 413, code: "EntityTooLarge", error: "Payload too large",
                     message: "The object exceeded the maximum allowed size (\(limit) bytes)")
    }

    /// 403 `AccessDenied` (`error: Unauthorized`), as for a bad auth token or a refused role.
    static func accessDenied(_ message: String) -> StorageError {
        StorageError(statusCode: 403, code: "AccessDenied", error: "Unauthorized", message: message)
    }

    /// 403 `AccessDenied` as PostgreSQL row-level security reports a refused write.
    static func rowLevelSecurity(table: String) -> StorageError {
        accessDenied("new row violates row-level security policy for table \"\(table)\"")
    }

    /// 400 `InvalidJWT` for a signed-URL token that does not verify (`jwt expired`, `invalid signature`).
    static func invalidJWT(_ message: String) -> StorageError {
        StorageError(statusCode: 400, code: "InvalidJWT", message: message)
    }

    /// 400 `InvalidSignature` for a token minted for another object or action.
    static func invalidSignature(_ message: String = "Invalid signature") -> StorageError {
        StorageError(statusCode: 400, code: "InvalidSignature", message: message)
    }

    /// 400 `InvalidKey` naming the refused key.
    static func invalidKey(_ key: String) -> StorageError {
        StorageError(statusCode: 400, code: "InvalidKey", message: "Invalid key: \(printable(key))")
    }

    /// 400 `InvalidBucketName`.
    static func invalidBucketName(_ name: String) -> StorageError {
        StorageError(statusCode: 400, code: "InvalidBucketName", error: "Invalid Input", message: "Bucket name invalid")
    }

    /// 400 `InvalidRequest` with `message`.
    static func invalidRequest(_ message: String) -> StorageError {
        StorageError(statusCode: 400, code: "InvalidRequest", message: message)
    }

    /// 415 `InvalidMimeType`.
    static func invalidMimeType(_ mimeType: String) -> StorageError {
        StorageError(statusCode: 415, code: "InvalidMimeType", error: "invalid_mime_type",
                     message: "mime type \(printable(mimeType)) is not supported")
    }

    /// A real 404 for a path no storage route serves.
    static func routeNotFound(method: String, path: String) -> StorageError {
        StorageError(statusCode: 404, code: "NotFound", error: "Not Found",
                     message: "Route \(method):\(printable(path)) not found", httpStatus: 404)
    }

    /// `text` with control characters escaped and length capped, safe to echo in a message.
    static func printable(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars.prefix(200) {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                out += String(format: "\\x%02X", scalar.value)
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
