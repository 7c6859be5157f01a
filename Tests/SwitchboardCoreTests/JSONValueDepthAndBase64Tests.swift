import Foundation
import SwitchboardCore
import Testing

/// `JSONValue.parse(_:maximumDepth:)` and the shared `Base64` helper.
@Suite struct JSONValueDepthAndBase64Tests {
    /// Nesting up to the limit parses; one level more is refused, for text and bytes alike.
    @Test func maximumDepth() throws {
        let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(try JSONValue.parse(deepest, maximumDepth: 64).arrayValue?.count == 1)
        #expect(throws: JSONParseError.self) { try JSONValue.parse("[" + deepest + "]", maximumDepth: 64) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(("[" + deepest + "]").utf8), maximumDepth: 64) }
        #expect(try JSONValue.parse("[" + deepest + "]").arrayValue?.count == 1, "the default limit is deeper")
        let tooDeep = String(repeating: "[", count: JSONValue.maximumDepth + 1)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(tooDeep + String(repeating: "]", count: JSONValue.maximumDepth + 1)) }
    }

    /// Numbers keep their text, so 64-bit integers survive a round trip.
    @Test func largeIntegers() throws {
        let value = try JSONValue.parse(#"{"a":18446744073709551615,"b":-9223372036854775808}"#)
        #expect(value["a"] == .number("18446744073709551615"))
        #expect(value["b"]?.intValue == Int64.min)
        #expect(value.serialized == #"{"a":18446744073709551615,"b":-9223372036854775808}"#)
    }

    /// Compact serialization: members in order, escapes for quotes, backslashes and control characters only,
    /// non-ASCII kept as UTF-8; the byte and the text writers agree, and the text parses back to the same value.
    @Test func serialization() throws {
        let value: JSONValue = ["text": "a \"quote\", a \\ backslash, a\nnew line, a\ttab, \u{01}, é, 😀 / slash",
                                "list": [1, 2.5, true, false, nil, [], [:]], "empty": "", "nested": ["k": ["x": -3]]]
        let expected = #"{"text":"a \"quote\", a \\ backslash, a\nnew line, a\ttab, \u0001, é, 😀 / slash","#
            + #""list":[1,2.5,true,false,null,[],{}],"empty":"","nested":{"k":{"x":-3}}}"#
        #expect(value.serialized == expected)
        var bytes: [UInt8] = Array("prefix ".utf8)
        value.write(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "prefix " + expected)
        var text = "prefix "
        value.write(to: &text)
        #expect(text == "prefix " + expected)
        #expect(try JSONValue.parse(expected) == value)
        #expect(try JSONSerialization.jsonObject(with: Data(expected.utf8)) is [String: Any])
    }

    /// Standard padded base64, both ways, with strict decoding.
    @Test func base64() {
        #expect(Base64.encode(Array("".utf8)) == "")
        #expect(Base64.encode(Array("f".utf8)) == "Zg==")
        #expect(Base64.encode(Array("fo".utf8)) == "Zm8=")
        #expect(Base64.encode(Array("foo".utf8)) == "Zm9v")
        #expect(Base64.encode([0xFB, 0xFF]) == "+/8=")
        #expect(Base64.decode("Zg==") == Array("f".utf8))
        #expect(Base64.decode("+/8=") == [0xFB, 0xFF])
        for bad in ["Zg=", "Zg", "Z===", "Zg==Zg==", "-_8=", "Zm9v!"] {
            #expect(Base64.decode(bad) == nil, "\(bad)")
        }
    }

    /// The lenient reader takes either alphabet with or without padding, as protobuf JSON does.
    @Test func lenientBase64() {
        #expect(Base64.decodeLenient("-_8") == [0xFB, 0xFF])
        #expect(Base64.decodeLenient("+/8=") == [0xFB, 0xFF])
        #expect(Base64.decodeLenient("Zg") == Array("f".utf8))
        #expect(Base64.decodeLenient("AQI") == [1, 2])
        for bad in ["Zg=", "!!!", "Z"] {
            #expect(Base64.decodeLenient(bad) == nil, "\(bad)")
        }
    }
}
