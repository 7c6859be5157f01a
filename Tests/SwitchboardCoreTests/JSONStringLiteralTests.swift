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
}
