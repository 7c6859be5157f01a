import SwitchboardCore

/// `JSONValue`, the JSON reader every server and codec shares (REST bodies, Phoenix frames, JWTs, configs).
enum JSONFuzzing {
    static let name = "json"

    /// Whatever parses must serialize to text that parses to the same value and serializes the same again;
    /// `objectKeys` (the key scan that skips building values) must accept exactly what `parse` accepts in its
    /// shapes, with the same keys. Base64 of the input must decode back to it.
    static func run(_ bytes: [UInt8]) throws {
        let keys = JSONValue.objectKeys(bytes)
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            try expect(keys == nil, name, "objectKeys read \(String(describing: keys)) where parse failed: \(error)")
            let text = String(decoding: bytes, as: UTF8.self)
            if error.offset <= text.utf8.count { _ = error.locatedMessage(in: text) }
            try checkBase64(bytes)
            return
        }
        let serialized = value.serialized
        let again: JSONValue
        do {
            again = try JSONValue.parse(serialized)
        } catch {
            throw FuzzFailure(target: name, message: "serialized \(serialized) does not parse: \(error)")
        }
        try expect(again == value, name, "\(serialized) parsed as a different value")
        try expect(again.serialized == serialized, name, "\(serialized) serialized again as \(again.serialized)")
        switch value {
        case .object(let members):
            try expect(keys?.isArray == false && keys?.keys == [members.map(\.key)], name,
                       "objectKeys read \(String(describing: keys)) for the object \(serialized)")
        case .array(let elements) where elements.allSatisfy({ $0.members != nil }):
            let expected = elements.map { $0.members!.map(\.key) }
            try expect(keys?.isArray == true && keys?.keys == expected, name,
                       "objectKeys read \(String(describing: keys)) for the array of objects \(serialized)")
        default:
            try expect(keys == nil, name, "objectKeys read \(String(describing: keys)) for \(serialized)")
        }
        _ = value.parameterText
        _ = value.intValue
        _ = value.doubleValue
        _ = value.objectValue
        var hasher = Hasher()
        value.hash(into: &hasher)
        _ = hasher.finalize()
        try checkBase64(bytes)
    }

    private static func checkBase64(_ bytes: [UInt8]) throws {
        let encoded = Base64.encode(bytes)
        try expect(Base64.decode(encoded) == bytes, name, "base64 \(encoded) does not decode back to its bytes")
        let text = String(decoding: bytes, as: UTF8.self)
        if let decoded = Base64.decode(text) {
            try expect(Base64.decode(Base64.encode(decoded)) == decoded, name, "base64 of \(decoded) does not round-trip")
        }
        _ = Base64.decodeLenient(text)
    }
}
