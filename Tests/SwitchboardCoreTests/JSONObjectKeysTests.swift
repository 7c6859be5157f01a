import Testing
@testable import SwitchboardCore

/// `JSONValue.objectKeys` reads the member names of an array of objects (or one object) without building values,
/// and must accept exactly what `JSONValue.parse` accepts for those shapes.
@Suite("JSON object keys")
struct JSONObjectKeysTests {
    /// What `objectKeys` should answer for `text`, derived from the full parser.
    private func expected(_ text: String) -> (isArray: Bool, keys: [[String]])? {
        guard let value = try? JSONValue.parse(text) else { return nil }
        switch value {
        case .object(let members): return (false, [members.map(\.key)])
        case .array(let items):
            var keys: [[String]] = []
            for item in items {
                guard case .object(let members) = item else { return nil }
                keys.append(members.map(\.key))
            }
            return (true, keys)
        default: return nil
        }
    }

    /// Checks `objectKeys` against the full parser on `text`.
    private func agree(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let got = JSONValue.objectKeys(Array(text.utf8))
        let want = expected(text)
        #expect(got?.isArray == want?.isArray && got?.keys == want?.keys, "\(text.debugDescription)",
                sourceLocation: sourceLocation)
    }

    @Test("rows' member names in order, duplicates kept; nested values, escapes and non-ASCII text skipped over")
    func shapes() {
        let body = #"[{"id":"a","n":-1.5e3,"meta":{"k":[1,{"x":null}]}},{"id":"b\u00e9\"","n":0,"n":true}, {"é":"ü"}]"#
        let keys = JSONValue.objectKeys(Array(body.utf8))
        #expect(keys?.isArray == true)
        #expect(keys?.keys == [["id", "n", "meta"], ["id", "n", "n"], ["é"]])
        #expect(JSONValue.objectKeys(Array(#" {"a\n":1} "#.utf8))?.keys == [["a\n"]])
        #expect(JSONValue.objectKeys(Array("[]".utf8))?.keys == [])
        for text in ["[1]", "[{}, 2]", "\"x\"", "3", "null", "[[]]", ""] { agree(text) }
    }

    @Test("invalid JSON is refused wherever parse refuses it", arguments: [
        #"[{"a":1}"#, #"[{"a":1},]"#, #"[{"a":01}]"#, #"[{"a":1.}]"#, #"[{"a":"\x"}]"#, #"[{"a":"\ud800"}]"#,
        "[{\"a\":\"\u{01}\"}]", #"[{"a":tru}]"#, #"[{"a" 1}]"#, #"[{a:1}]"#, #"{"a":1} x"#, #"[{"a":[1,]}]"#,
        #"[{"a":-}]"#, #"[{"a":1e}]"#, #"[{"a":"unterminated}]"#, #"[{"a":{"b":1}]"#,
    ])
    func invalid(_ text: String) {
        #expect(JSONValue.objectKeys(Array(text.utf8)) == nil)
        agree(text)
    }

    @Test("invalid UTF-8 inside a skipped value is refused, as parse refuses it")
    func invalidUTF8() {
        var bytes = Array(#"[{"a":"x"#.utf8)
        bytes += [0xC3, 0x28]
        bytes += Array(#""}]"#.utf8)
        #expect(JSONValue.objectKeys(bytes) == nil)
        #expect((try? JSONValue.parse(bytes)) == nil)
    }

    @Test("nesting deeper than the limit is refused, as parse refuses it")
    func depth() {
        let deep = "[{\"a\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + "}]"
        #expect(JSONValue.objectKeys(Array(deep.utf8), maximumDepth: 20) == nil)
        #expect((try? JSONValue.parse(deep, maximumDepth: 20)) == nil)
        #expect(JSONValue.objectKeys(Array(deep.utf8))?.keys == [["a"]])
    }

    @Test("on 3,000 mutations of a bulk body it agrees with the full parser")
    func mutations() {
        let body = Array(#"[{"id":"5b1c","body":"héllo \"q\" \\ \u00e9","meta":{"a":[1,2.5,-3e2,true,false,null]}},{"id":"x","body":"","meta":{}}]"#.utf8)
        let alphabet = Array(#"{}[]",:\"0-9.eE+ tfnlu\#u{00e9}x"#.utf8)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<3000 {
            var bytes = body
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let at = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes.remove(at: at)
                case 1: bytes.insert(alphabet.randomElement(using: &generator)!, at: at)
                default: bytes[at] = alphabet.randomElement(using: &generator)!
                }
            }
            let got = JSONValue.objectKeys(bytes)
            let want = expected(String(decoding: bytes, as: UTF8.self))
            let parsed = (try? JSONValue.parse(bytes)) != nil
            // Invalid UTF-8 decodes to U+FFFD in `expected`'s text; compare on the bytes' own parse then.
            if !parsed { #expect(got == nil, "\(String(decoding: bytes, as: UTF8.self).debugDescription)"); continue }
            #expect(got?.isArray == want?.isArray && got?.keys == want?.keys,
                    "\(String(decoding: bytes, as: UTF8.self).debugDescription)")
        }
    }
}
