import Foundation
import SwitchboardCore
import Testing
import TestSupport
import XMTPCodec

/// `switchboard xmtp codec …` and `switchboard xmtp message-id` as a user runs them.
@Suite struct XMTPCodecCommandTests {
    /// Runs the built `switchboard` with `arguments`; returns status, standard output and standard error.
    func run(_ arguments: [String]) throws -> ProcessResult {
        try ChildProcess.run(try SwitchboardExecutable.locate().path, arguments)
    }

    /// Encode prints libxmtp's hex; decode prints the JSON description.
    @Test func encodeAndDecode() throws {
        let encoded = try run(["xmtp", "codec", "encode", "--type", "text", "--json", "\"hello\""])
        #expect(encoded.status == 0)
        #expect(encoded.stdout == helloHex + "\n")
        let reply = try run(["xmtp", "codec", "encode", "--type", "xmtp.org/reply:1.0", "--json",
                             #"{"reference":"ab","content":{"type":"text","content":"hi"}}"#])
        #expect(reply.status == 0)
        let decoded = try run(["xmtp", "codec", "decode", "--hex", reply.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(decoded.status == 0)
        let json = try JSONValue.parse(decoded.stdout)
        #expect(json["type"] == .string("xmtp.org/reply:1.0"))
        #expect(json["fallback"] == .string("Replied with \"hi\" to an earlier message"))
        #expect(json["parameters"]?["contentType"] == .string("xmtp.org/text:1.0"))
        #expect(json["content"]?["reference"] == .string("ab"))
        #expect(json["content"]?["content"]?["content"] == .string("hi"))
    }

    /// An unknown type decodes with its fallback and raw content.
    @Test func decodeUnknown() throws {
        let poll = XMTPEncodedContent(type: XMTPContentTypeID(authorityID: "example.com", typeID: "poll", versionMajor: 1, versionMinor: 0),
                                      fallback: "Poll", content: [1, 2])
        let result = try run(["xmtp", "codec", "decode", "--hex", hex(poll.encoded())])
        #expect(result.status == 0)
        let json = try JSONValue.parse(result.stdout)
        #expect(json["fallback"] == .string("Poll"))
        #expect(json["content"]?["raw"] == .string("AQI="))
    }

    /// The message ID of the fixed vector.
    @Test func messageID() throws {
        let result = try run(["xmtp", "message-id", "--group", "000102030405060708090a0b0c0d0e0f", "--key", "key-1",
                              "--content-hex", helloHex])
        #expect(result.status == 0)
        #expect(result.stdout == "3e8757d2637c8745ad3fc9980e056e859a9141273484d44175ad473e69d53b91\n")
    }

    /// Bad input is a usage error (status 2) with a message.
    @Test(arguments: [
        ["xmtp", "codec"],
        ["xmtp", "codec", "frobnicate"],
        ["xmtp", "codec", "encode", "--type", "text"],
        ["xmtp", "codec", "encode", "--type", "text", "--json", "{"],
        ["xmtp", "codec", "encode", "--type", "text", "--json", "42"],
        ["xmtp", "codec", "encode", "--type", "poll", "--json", "{}"],
        ["xmtp", "codec", "encode", "--type", "reaction", "--json", #"{"reference":"a","action":"maybe","content":"x","schema":"unicode"}"#],
        ["xmtp", "codec", "decode", "--hex", "xyz"],
        ["xmtp", "codec", "decode", "--hex", "0a"],
        ["xmtp", "codec", "decode", "--hex", "00", "--bogus", "1"],
        ["xmtp", "message-id", "--group", "00", "--content-hex", "00"],
        ["xmtp", "message-id", "--group", "0", "--key", "k", "--content-hex", "00"],
    ])
    func usageErrors(_ arguments: [String]) throws {
        let result = try run(arguments)
        #expect(result.status == 2, "\(arguments): \(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("switchboard:"))
    }
}
