import SwitchboardCore
import Testing

/// Where a JSON syntax error is, as a person editing the file counts: line and column, not a byte offset.
@Suite("JSON syntax errors: line and column")
struct JSONParseErrorPositionTests {
    @Test("line and column count lines from 1 and characters (not bytes) from 1", arguments: [
        ("", "unexpected end at line 1, column 1"),
        ("{\"a\": tru}", "invalid literal at line 1, column 10"),
        ("{\n  \"a\": 1,\n  \"b\" 2\n}", "expected ':' at line 3, column 7"),
        ("{\"é\": \"ü\",\n\"ñ\"}", "expected ':' at line 2, column 4"),
        ("[1,\r\n\t2,]", "invalid number at line 2, column 4"),
        ("{}\n\n x", "trailing characters at line 3, column 2"),
    ])
    func position(text: String, expected: String) {
        do {
            _ = try JSONValue.parse(text)
            Issue.record("\(text) parsed")
        } catch {
            #expect(error.locatedMessage(in: text) == expected)
            #expect(error.message == "\(error.reason) at offset \(error.offset)", "the byte offset stays for servers")
        }
    }
}
