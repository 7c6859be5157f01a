import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet

/// One part of a `multipart/form-data` body.
struct StorageFormPart: Sendable, Hashable {
    /// The `name` of `Content-Disposition`.
    var name: String?
    /// The `filename` of `Content-Disposition`, present for file parts.
    var filename: String?
    /// The part's own `Content-Type`.
    var contentType: String?
    /// The part's bytes.
    var body: Data
}

/// A minimal RFC 7578 `multipart/form-data` reader, enough for what storage3 and supabase-js send; pure.
enum StorageMultipart {
    /// The `boundary` parameter of a `multipart/form-data` content type, or nil for other types.
    static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard let type = pieces.first, type.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            var value = pair[1].trimmingCharacters(in: .whitespaces)
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value.isEmpty || value.utf8.count > 200 ? nil : value
        }
        return nil
    }

    /// The parts of `body` delimited by `boundary`; throws `InvalidRequest` when the body is not well formed.
    static func parse(_ body: Data, boundary: String) throws(StorageError) -> [StorageFormPart] {
        let bytes = [UInt8](body)
        let delimiter = Array("--\(boundary)".utf8)
        let separator = Array("\r\n--\(boundary)".utf8)
        guard var cursor = find(delimiter, in: bytes, from: 0) else { throw malformed }
        cursor += delimiter.count
        var parts: [StorageFormPart] = []
        while true {
            // After a delimiter: `--` ends the body, otherwise CRLF starts a part.
            if bytes.count >= cursor + 2, bytes[cursor] == UInt8(ascii: "-"), bytes[cursor + 1] == UInt8(ascii: "-") { break }
            while cursor < bytes.count, bytes[cursor] == UInt8(ascii: " ") || bytes[cursor] == UInt8(ascii: "\t") { cursor += 1 }
            guard bytes.count >= cursor + 2, bytes[cursor] == 13, bytes[cursor + 1] == 10 else { throw malformed }
            cursor += 2
            let headerEnd: Int
            if bytes[cursor...].starts(with: [13, 10]) {
                headerEnd = cursor - 2
            } else {
                guard let end = find(Array("\r\n\r\n".utf8), in: bytes, from: cursor) else { throw malformed }
                headerEnd = end
            }
            let headerText = headerEnd > cursor ? String(decoding: bytes[cursor..<headerEnd], as: UTF8.self) : ""
            let bodyStart = headerEnd + 4
            guard bodyStart <= bytes.count, let bodyEnd = find(separator, in: bytes, from: bodyStart) else { throw malformed }
            var part = StorageFormPart(body: Data(bytes[bodyStart..<bodyEnd]))
            for line in headerText.components(separatedBy: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                guard pair.count == 2 else { continue }
                let value = pair[1].trimmingCharacters(in: .whitespaces)
                switch pair[0].trimmingCharacters(in: .whitespaces).lowercased() {
                case "content-disposition":
                    part.name = parameter("name", in: value)
                    part.filename = parameter("filename", in: value)
                case "content-type":
                    part.contentType = value
                default:
                    break
                }
            }
            parts.append(part)
            guard parts.count <= 16 else { throw StorageError.invalidRequest("Too many form parts") }
            cursor = bodyEnd + separator.count
        }
        return parts
    }

    /// The refusal for a body that is not well-formed multipart.
    private static let malformed = StorageError.invalidRequest("Malformed multipart/form-data body")

    /// A `name="value"` (or unquoted) parameter of a header value.
    static func parameter(_ name: String, in value: String) -> String? {
        for piece in value.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == name else { continue }
            var text = pair[1].trimmingCharacters(in: .whitespaces)
            if text.count >= 2, text.hasPrefix("\""), text.hasSuffix("\"") {
                text = String(text.dropFirst().dropLast()).replacingOccurrences(of: "\\\"", with: "\"")
            }
            return text
        }
        return nil
    }

    /// The first index at or after `start` where `needle` occurs in `haystack`.
    static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, start >= 0, haystack.count - start >= needle.count else { return nil }
        return haystack.withUnsafeBufferPointer { hay -> Int? in
            needle.withUnsafeBufferPointer { pin -> Int? in
                guard let hayBase = hay.baseAddress, let pinBase = pin.baseAddress else { return nil }
                let last = hay.count - pin.count
                var index = start
                while index <= last {
                    guard let hit = memchr(hayBase + index, Int32(pinBase[0]), last - index + 1) else { return nil }
                    let position = hayBase.distance(to: hit.assumingMemoryBound(to: UInt8.self))
                    if memcmp(hayBase + position, pinBase, pin.count) == 0 { return position }
                    index = position + 1
                }
                return nil
            }
        }
    }
}

/// What an upload request carries once raw or multipart framing is removed; pure.
struct StorageUploadBody: Sendable {
    /// The object's bytes.
    var data: Data
    /// The stored content type (`application/octet-stream` when none was sent).
    var contentType: String
    /// The stored cache control (`max-age=<n>` from a multipart `cacheControl` field, or the header, or `no-cache`).
    var cacheControl: String
    /// User metadata (multipart `metadata` field or base64 JSON `x-metadata` header), an object.
    var userMetadata: JSONValue?

    /// The upload in `body` as described by `headers`, following supabase/storage's uploader.
    static func parse(headers: HTTPHeaders, body: Data) throws(StorageError) -> StorageUploadBody {
        let contentType = headers["Content-Type"]?.trimmingCharacters(in: .whitespaces) ?? ""
        if contentType.lowercased().hasPrefix("multipart/form-data") {
            guard let boundary = StorageMultipart.boundary(contentType: contentType) else {
                throw StorageError.invalidRequest("Missing multipart boundary")
            }
            let parts = try StorageMultipart.parse(body, boundary: boundary)
            guard let file = parts.first(where: { $0.filename != nil }) ?? parts.first(where: { $0.name == "file" }) else {
                throw StorageError.invalidRequest("No content provided")
            }
            /// The text of form field `name`.
            func field(_ name: String) -> String? {
                parts.first { $0.filename == nil && $0.name == name }.map { String(decoding: $0.body, as: UTF8.self) }
            }
            let cacheTime = field("cacheControl").flatMap { $0.isEmpty ? nil : $0 }
            let mime = field("contentType").flatMap { $0.isEmpty ? nil : $0 } ?? file.contentType ?? "application/octet-stream"
            return StorageUploadBody(data: file.body, contentType: mime,
                                     cacheControl: cacheTime.map { "max-age=\($0)" } ?? "no-cache",
                                     userMetadata: try field("metadata").map(parseMetadata))
        }
        var metadata: JSONValue?
        if let header = headers["x-metadata"] {
            guard let decoded = Data(base64Encoded: header) else { throw StorageError.invalidRequest("Invalid metadata header") }
            metadata = try parseMetadata(String(decoding: decoded, as: UTF8.self))
        }
        return StorageUploadBody(data: body, contentType: contentType.isEmpty ? "application/octet-stream" : contentType,
                                 cacheControl: headers["Cache-Control"] ?? "no-cache", userMetadata: metadata)
    }

    /// User metadata must be a JSON object.
    static func parseMetadata(_ text: String) throws(StorageError) -> JSONValue {
        guard let value = JSONValue.parseOrNil(text), value.objectValue != nil else {
            throw StorageError.invalidRequest("Invalid metadata: expected a JSON object")
        }
        return value
    }

    /// Whether `mimeType` is allowed by a bucket's list (`image/*` wildcards; parameters such as charset ignored).
    static func isAllowed(mimeType: String, allowed: [String]?) -> Bool {
        guard let allowed, !allowed.isEmpty else { return true }
        let essence = mimeType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        let parts = essence.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else { return false }
        for entry in allowed {
            let allowedParts = entry.lowercased().split(separator: "/", omittingEmptySubsequences: false)
            guard allowedParts.count == 2, allowedParts[0] == parts[0] else { continue }
            if allowedParts[1] == "*" || allowedParts[1] == parts[1] { return true }
        }
        return false
    }
}
