import Foundation
import SwitchboardCore
import Testing

@Suite("JSONStringLiteral")
struct JSONStringLiteralTests {
    @Test("quotes, backslashes and control characters are escaped; everything else passes through whole")
    func escapes() {
        #expect(JSONStringLiteral.quoted("") == #""""#)
        #expect(JSONStringLiteral.quoted("plain text") == #""plain text""#)
        #expect(JSONStringLiteral.quoted("say \"hi\" \\ bye") == #""say \"hi\" \\ bye""#)
        #expect(JSONStringLiteral.quoted("a\nb\rc\td\u{08}e\u{0C}f") == #""a\nb\rc\td\be\ff""#)
        #expect(JSONStringLiteral.quoted("\u{00}\u{1F}x") == #""\u0000\u001fx""#)
        #expect(JSONStringLiteral.quoted("line\r\nnext") == #""line\r\nnext""#)
        #expect(JSONStringLiteral.quoted("é 👍🏽 中文 \u{7F}") == "\"é 👍🏽 中文 \u{7F}\"")
        #expect(JSONStringLiteral.quoted("\"") == #""\"""#)
    }

    @Test("whatever the string, Foundation's parser reads back exactly it", arguments: [
        "", "x", "\"\"", "\\\\\\", "tab\tend", "\u{01}\u{02}\u{1E}", "mixed \"é\" \n 👍🏽\r\n end\\",
        String(repeating: "long run without escapes ", count: 40) + "\u{0}",
    ])
    func roundTrip(_ value: String) throws {
        let json = "[" + JSONStringLiteral.quoted(value) + "]"
        let parsed = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
        #expect(parsed == [value])
    }

    @Test("appending to UTF-8 bytes writes exactly what appending to a string writes", arguments: [
        "", "x", "\"\"", "\\\\\\", "tab\tend", "\u{01}\u{02}\u{1E}", "mixed \"é\" \n 👍🏽\r\n end\\", "e\u{301}",
        String(repeating: "long run without escapes ", count: 40) + "\u{0}",
    ])
    func bytesMatchString(_ value: String) {
        var bytes: [UInt8] = [0x2C]
        JSONStringLiteral.append(value, to: &bytes)
        #expect(bytes == Array(("," + JSONStringLiteral.quoted(value)).utf8))
    }

    @Test("the parser reads back every string, escaped or not, and refuses invalid UTF-8 and raw control characters")
    func parserStrings() throws {
        for value in ["", "ascii", "é 👍🏽 中文", "e\u{301}", "a\"b\\c\nd\u{1}", "\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}",
                      String(repeating: "é/", count: 500) + "\u{0}"] {
            #expect(try JSONValue.parse(JSONStringLiteral.quoted(value)) == .string(value))
        }
        #expect(try JSONValue.parse(#""\u00e9\/\ud83d\ude00 x""#) == .string("é/😀 x"))
        #expect(try JSONValue.parse(#""caf\u00e9 tail é""#) == .string("café tail é"))
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0x61, 0x5C, 0x6E, 0xE2, 0x82, 0x22],
                               [0x22, 0xF0, 0x9F, 0x98, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0x01, 0x22],
                               [0x22, 0x61, 0x62], [0x22, 0x5C, 0x6E, 0x0A, 0x22]] {
            #expect(JSONValue.parseOrNil(bytes) == nil, "\(bytes)")
        }
    }
}
