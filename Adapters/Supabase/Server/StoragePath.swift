import Foundation
import SwitchboardCore

/// Validation of bucket names and object keys, and their mapping to files; pure, so tested without sockets.
///
/// Keys follow supabase/storage's S3-safe alphabet (`A-Z a-z 0-9 _ / ! . * ' ( ) space & $ = @ ; : + , ? -`),
/// which leaves out `%`, `\`, NUL, `~` and every control character. The server hands the handler a path that
/// civetweb already percent-decoded; because `%` can never appear in a valid key, a key is never decoded a second
/// time and an encoded traversal (`%2e%2e`, `%2f`) either arrives decoded (and is refused as a dot or empty
/// segment) or arrives encoded (and is refused for its `%`). On disk an object lives in
/// `<root>/<bucket>/<key>/~<version>`: the `~` (never valid in a key) keeps versions apart from key folders.
enum StoragePath {
    /// The bytes an object key may contain.
    static let keyAlphabet: Set<UInt8> = {
        var bytes = Set<UInt8>()
        for range in [UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                      UInt8(ascii: "0")...UInt8(ascii: "9")] {
            bytes.formUnion(range)
        }
        bytes.formUnion("_/!.*'() &$=@;:+,?-".utf8)
        return bytes
    }()

    /// The longest key accepted, in bytes (S3's limit).
    static let maximumKeyLength = 1024
    /// The longest single key segment, in bytes (the file-system name limit).
    static let maximumSegmentLength = 255

    /// `name` if it is a valid bucket name (1–100 bytes of the key alphabet minus `/`, not `.` or `..`).
    static func validateBucketName(_ name: String) throws(StorageError) -> String {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 100, name != ".", name != "..",
              bytes.allSatisfy({ keyAlphabet.contains($0) && $0 != UInt8(ascii: "/") }) else {
            throw StorageError.invalidBucketName(name)
        }
        return name
    }

    /// The segments of `key` if it is a valid relative object key: not empty, no leading `/`, no empty, `.` or
    /// `..` segment, only key-alphabet bytes (so no `%`, `\` or NUL), at most 1024 bytes, segments at most 255.
    @discardableResult
    static func validateKey(_ key: String) throws(StorageError) -> [Substring] {
        let bytes = Array(key.utf8)
        guard !bytes.isEmpty, bytes.count <= maximumKeyLength, bytes.allSatisfy({ keyAlphabet.contains($0) }) else {
            throw StorageError.invalidKey(key)
        }
        let segments = key.split(separator: "/", omittingEmptySubsequences: false)
        for segment in segments {
            guard !segment.isEmpty, segment != ".", segment != "..", segment.utf8.count <= maximumSegmentLength else {
                throw StorageError.invalidKey(key)
            }
        }
        return segments
    }

    /// Whether `version` has the shape this service writes (`~` and a lower-case UUID).
    static func isValidVersion(_ version: String) -> Bool {
        version.hasPrefix("~") && UUIDText.isCanonical(String(version.dropFirst()))
    }

    /// A fresh version name.
    static func newVersion() -> String { "~" + UUID().uuidString.lowercased() }

    /// The folder of `bucket` under `root`, checked to stay directly below it.
    static func bucketDirectory(root: URL, bucket: String) throws(StorageError) -> URL {
        let name = try validateBucketName(bucket)
        let directory = root.appendingPathComponent(name, isDirectory: true).standardizedFileURL
        guard directory.deletingLastPathComponent().standardizedFileURL.path == root.standardizedFileURL.path else {
            throw StorageError.invalidBucketName(bucket)
        }
        return directory
    }

    /// The folder standing for `key` inside the bucket folder.
    static func keyDirectory(root: URL, bucket: String, key: String) throws(StorageError) -> URL {
        let bucketDirectory = try bucketDirectory(root: root, bucket: bucket)
        var directory = bucketDirectory
        for segment in try validateKey(key) {
            directory.appendPathComponent(String(segment), isDirectory: true)
        }
        directory = directory.standardizedFileURL
        guard isInside(directory, bucketDirectory) else { throw StorageError.invalidKey(key) }
        return directory
    }

    /// The file holding `version` of `key`; the resolved path is checked to stay under the bucket folder.
    static func objectFile(root: URL, bucket: String, key: String, version: String) throws(StorageError) -> URL {
        guard isValidVersion(version) else { throw StorageError.internalError }
        let bucketDirectory = try bucketDirectory(root: root, bucket: bucket)
        let file = try keyDirectory(root: root, bucket: bucket, key: key)
            .appendingPathComponent(version, isDirectory: false).standardizedFileURL
        guard isInside(file, bucketDirectory) else { throw StorageError.invalidKey(key) }
        return file
    }

    /// Whether `url` lies strictly below `directory` (compared on standardized paths).
    static func isInside(_ url: URL, _ directory: URL) -> Bool {
        let base = directory.standardizedFileURL.path
        let path = url.standardizedFileURL.path
        return path.hasPrefix(base.hasSuffix("/") ? base : base + "/") && path.count > base.count + 1
    }

    /// `key` with each segment percent-encoded for a URL path (the form signed URLs are handed out in).
    static func encodedKey(_ key: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%;")
        return key.split(separator: "/", omittingEmptySubsequences: false)
            .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }
            .joined(separator: "/")
    }
}
