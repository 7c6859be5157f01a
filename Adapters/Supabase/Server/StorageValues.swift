import SwitchboardCore
import Foundation
import SupabaseProtocol

/// Parsing of the loosely typed values storage bodies carry (storage3 sends numbers as strings); pure.
enum StorageValues {
    /// A `file_size_limit`: a non-negative integer or a string such as `"20MB"` (`B`, `KB`, `MB`, `GB`; 1024-based);
    /// `null` or 0 means no limit.
    static func sizeLimit(_ value: JSONValue?) throws(StorageError) -> Int64? {
        guard let value, !value.isNull else { return nil }
        if let number = value.intValue {
            guard number >= 0 else { throw invalidSize }
            return number == 0 ? nil : number
        }
        guard let text = value.stringValue?.trimmingCharacters(in: .whitespaces).uppercased(), !text.isEmpty else {
            throw invalidSize
        }
        let units: [(String, Int64)] = [("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)]
        var digits = Substring(text)
        var multiplier: Int64 = 1
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            digits = text.dropLast(suffix.count)
            multiplier = factor
            break
        }
        guard let number = Int64(digits.trimmingCharacters(in: .whitespaces)), number >= 0 else { throw invalidSize }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: multiplier)
        guard !overflow else { throw invalidSize }
        return bytes == 0 ? nil : bytes
    }

    /// The refusal for an unreadable size.
    private static let invalidSize = StorageError.invalidRequest("Invalid file size format, hint: use 20GB / 20MB / 30KB / 3B")

    /// An `expiresIn` in seconds: a positive integer, given as a number or a numeric string, at most ten years.
    static func expiresIn(_ value: JSONValue?) throws(StorageError) -> Int64 {
        let number = value?.intValue ?? value?.stringValue.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        guard let number else { throw StorageError.invalidRequest("body must have required property 'expiresIn'") }
        guard number >= 1, number <= 10 * 365 * 24 * 3600 else {
            throw StorageError.invalidRequest("body/expiresIn must be >= 1 and at most ten years")
        }
        return number
    }

    /// A non-negative integer option (`limit`, `offset`) given as a number or numeric string, else `fallback`.
    static func integer(_ value: JSONValue?, fallback: Int) -> Int {
        if let number = value?.intValue { return Int(clamping: number) }
        if let text = value?.stringValue, let number = Int(text) { return number }
        return fallback
    }

    /// `allowed_mime_types`: an array of strings (empty entries dropped) or `null`.
    static func mimeTypes(_ value: JSONValue?) throws(StorageError) -> [String]? {
        guard let value, !value.isNull else { return nil }
        guard let array = value.arrayValue else { throw StorageError.invalidRequest("allowed_mime_types must be an array") }
        var types: [String] = []
        for element in array {
            guard let text = element.stringValue else { throw StorageError.invalidRequest("allowed_mime_types must hold strings") }
            if !text.isEmpty { types.append(text) }
        }
        return types
    }

    /// A boolean given as JSON `true`/`false` or the strings `"true"`/`"false"`.
    static func bool(_ value: JSONValue?) -> Bool? {
        if let flag = value?.boolValue { return flag }
        switch value?.stringValue?.lowercased() {
        case "true": return true
        case "false": return false
        default: return nil
        }
    }
}
