import Foundation
import SwitchboardCore
import Testing

/// What a server says about an error fits on the one line of the error that carries it.
@Suite("Server error text on one line")
struct ServerErrorTextTests {
    @Test("trimmed, line breaks and runs of blanks folded into one space, control characters dropped", arguments: [
        ("not found\n", "not found"),
        ("  request body larger than 10 bytes\r\n", "request body larger than 10 bytes"),
        ("first line\nsecond\tline\n\n", "first line second line"),
        ("<html>\n  <body>oops</body>\n</html>\n", "<html> <body>oops</body> </html>"),
        ("bell\u{7} here", "bell here"),
        ("\n \n", "(empty body)"),
        ("", "(empty body)"),
    ])
    func oneLine(text: String, expected: String) {
        #expect(ServerErrorText.oneLine(text) == expected)
        #expect(ServerErrorText.oneLine(Data(text.utf8)) == expected)
    }

    @Test("a long body is cut to the limit, ending in an ellipsis")
    func cut() {
        let text = ServerErrorText.oneLine(String(repeating: "é", count: 1000) + "\n", limit: 300)
        #expect(text.count == 300)
        #expect(text.hasSuffix("…"))
        #expect(ServerErrorText.oneLine(Data(String(repeating: "ab\n", count: 500).utf8), limit: 10) == "ab ab ab …")
    }
}
