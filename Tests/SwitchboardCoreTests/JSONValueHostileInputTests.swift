import SwitchboardCore
import Testing

/// `JSONValue`'s existing depth limit (`JSONValue.maximumDepth`) against the issue's 10,000-deep input, on every
/// entry point that recurses: the parser, `objectKeys` (which checks without building values) and serialization.
@Suite struct JSONValueHostileInputTests {
    @Test("10,000-deep arrays, objects and mixes are refused with 'nesting too deep', never a stack overflow")
    func tenThousandDeep() {
        let shapes = [
            String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000),
            String(repeating: #"{"a":"#, count: 10_000) + "1" + String(repeating: "}", count: 10_000),
            String(repeating: #"[{"a":"#, count: 5_000),
        ]
        for text in shapes {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
            #expect(JSONValue.objectKeys(Array(text.utf8)) == nil)
            #expect(JSONValue.objectKeys(Array(("[{\"k\":" + text + "}]").utf8)) == nil)
        }
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(shapes[0]) }
        #expect(error?.message.contains("nesting too deep") == true, "\(String(describing: error))")
    }

    @Test("the deepest accepted value serializes and parses back")
    func deepestRoundTrip() throws {
        let depth = JSONValue.maximumDepth
        let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
        let value = try JSONValue.parse(text)
        #expect(value.serialized == text)
        #expect(try JSONValue.parse(value.serialized) == value)
    }
}
