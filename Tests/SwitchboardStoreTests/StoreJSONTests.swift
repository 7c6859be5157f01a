import Foundation
import SwitchboardCore
@testable import SwitchboardStore
import Testing

/// The stores' hand-written JSON codecs: round trips, compatibility with `JSONEncoder`/`JSONDecoder` in both
/// directions, and corrupt rows reported as corruption.
@Suite("StoreJSON")
struct StoreJSONTests {
    /// The encoder the stores used before: what rows written by earlier versions hold.
    static func foundationEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// Strings that exercise escaping and decoding.
    static let awkwardStrings: [String] = [
        "", "plain", "é (precomposed)", "e\u{301} (combining acute)", "a\u{0308}\u{0323}\u{20DD} stacked marks",
        "👍🏽 👨‍👩‍👧‍👦 🇫🇷 emoji", "中文 العربية עברית", "quote \" backslash \\ both \\\"",
        "slash / and \\/ and //", "\u{0}\u{1}\u{8}\u{9}\u{A}\u{B}\u{C}\u{D}\u{1B}\u{1F} controls", "\u{7F} DEL",
        "\u{2028}\u{2029} separators", "\u{FEFF} BOM", "\u{10FFFF} last scalar", "{\"not\": \"json\"}",
        String(repeating: "long run without escapes ", count: 400),
    ]

    /// Dictionaries to round-trip, by name.
    static let dictionaries: [(String, [String: String])] = [
        ("empty", [:]),
        ("one", ["key": "value"]),
        ("awkward values", Dictionary(uniqueKeysWithValues: awkwardStrings.enumerated().map { ("k\($0.offset)", $0.element) })),
        ("awkward keys", Dictionary(uniqueKeysWithValues: awkwardStrings.enumerated().map { ($0.element, "v\($0.offset)") })),
        ("10,000 keys", Dictionary(uniqueKeysWithValues: (0..<10_000).map { ("key-\($0)", "value \($0) ✓") })),
    ]

    /// Prepared messages to round-trip, by name.
    static let preparedMessages: [(String, PreparedMessage)] = {
        var generator = SystemRandomNumberGenerator()
        let large = Data((0..<(1 << 18) + 1).map { _ in UInt8.random(in: 0...255, using: &generator) })
        return [
            ("empty payload, no remote ID", PreparedMessage(id: "m-1", conversation: "c-1", remoteID: nil, payload: Data())),
            ("typical", PreparedMessage(id: MessageID.make(), conversation: "room-1", remoteID: "remote-42",
                                        payload: Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 37) }))),
            ("one byte", PreparedMessage(id: "m", conversation: "c", remoteID: "", payload: Data([0xFF]))),
            ("two bytes", PreparedMessage(id: "m", conversation: "c", remoteID: nil, payload: Data([0xFB, 0xFF]))),
            ("awkward identifiers", PreparedMessage(id: MessageID(awkwardStrings[5]), conversation: ConversationID(awkwardStrings[7]),
                                                    remoteID: RemoteID(awkwardStrings[9]), payload: Data("/?>".utf8))),
            ("256 KiB random payload", PreparedMessage(id: MessageID.make(), conversation: "c", remoteID: "r", payload: large)),
        ]
    }()

    // MARK: Round trips

    @Test("A dictionary reads back equal", arguments: 0..<dictionaries.count)
    func dictionaryRoundTrip(_ index: Int) throws {
        let (name, dictionary) = Self.dictionaries[index]
        let text = StoreJSON.encode(dictionary)
        #expect(StoreJSON.decodeStringDictionary(text) == dictionary, "\(name)")
        // Keys are sorted, so equal dictionaries give equal text whatever their insertion history.
        #expect(StoreJSON.encode(Dictionary(uniqueKeysWithValues: dictionary.map { ($0.key, $0.value) }.reversed())) == text,
                "\(name)")
    }

    @Test("A string array reads back equal, in order")
    func arrayRoundTrip() throws {
        for strings in [[], [""], Self.awkwardStrings, Self.awkwardStrings.reversed(), (0..<10_000).map { "id-\($0)" }] {
            #expect(StoreJSON.decodeStringArray(StoreJSON.encode(strings)) == strings)
        }
    }

    @Test("A prepared message reads back equal", arguments: 0..<preparedMessages.count)
    func preparedRoundTrip(_ index: Int) throws {
        let (name, prepared) = Self.preparedMessages[index]
        #expect(StoreJSON.decodePreparedMessage(StoreJSON.encode(prepared)) == prepared, "\(name)")
    }

    // MARK: Compatibility with JSONEncoder / JSONDecoder

    @Test("Dictionaries written by JSONEncoder read back equal, and JSONDecoder reads ours",
          arguments: 0..<dictionaries.count)
    func dictionaryCompatibility(_ index: Int) throws {
        let (name, dictionary) = Self.dictionaries[index]
        let old = String(decoding: try Self.foundationEncoder().encode(dictionary), as: UTF8.self)
        #expect(StoreJSON.decodeStringDictionary(old) == dictionary, "\(name)")
        let new = StoreJSON.encode(dictionary)
        #expect(try JSONDecoder().decode([String: String].self, from: Data(new.utf8)) == dictionary, "\(name)")
    }

    @Test("String arrays written by JSONEncoder read back equal, and JSONDecoder reads ours")
    func arrayCompatibility() throws {
        for strings in [[], Self.awkwardStrings, (0..<1000).map { _ in MessageID.make().rawValue }] {
            let old = String(decoding: try Self.foundationEncoder().encode(strings), as: UTF8.self)
            #expect(StoreJSON.decodeStringArray(old) == strings)
            let new = StoreJSON.encode(strings)
            #expect(try JSONDecoder().decode([String].self, from: Data(new.utf8)) == strings)
        }
    }

    @Test("Prepared messages written by JSONEncoder read back equal, and JSONDecoder reads ours",
          arguments: 0..<preparedMessages.count)
    func preparedCompatibility(_ index: Int) throws {
        let (name, prepared) = Self.preparedMessages[index]
        let old = try Self.foundationEncoder().encode(prepared)
        #expect(StoreJSON.decodePreparedMessage(old) == prepared, "\(name)")
        let new = StoreJSON.encode(prepared)
        #expect(try JSONDecoder().decode(PreparedMessage.self, from: new) == prepared, "\(name)")
    }

    @Test("Ours is JSONEncoder's form with unescaped slashes: same keys, order and base64")
    func preparedExactForm() throws {
        let encoder = Self.foundationEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (name, prepared) in Self.preparedMessages where name != "awkward identifiers" {
            #expect(StoreJSON.encode(prepared) == (try encoder.encode(prepared)), "\(name)")
        }
        let typical = Self.preparedMessages[1].1
        let text = String(decoding: StoreJSON.encode(typical), as: UTF8.self)
        #expect(text.hasPrefix(#"{"conversation":"room-1","id":""#))
        #expect(text.hasSuffix(#"","remoteID":"remote-42"}"#))
        let noRemote = String(decoding: StoreJSON.encode(Self.preparedMessages[0].1), as: UTF8.self)
        #expect(noRemote == #"{"conversation":"c-1","id":"m-1","payload":""}"#)
        #expect(StoreJSON.encode(["b": "2", "a": "1", "B": "3"]) == #"{"B":"3","a":"1","b":"2"}"#)
        #expect(StoreJSON.encode([String: String]()) == "{}")
        #expect(StoreJSON.encode([String]()) == "[]")
    }

    @Test("Escapes JSONEncoder or another writer may use are read: \\/, \\uXXXX, surrogate pairs, whitespace")
    func escapesAndWhitespace() throws {
        #expect(StoreJSON.decodeStringDictionary(#"{"a\/b":"c\/\/d"}"#) == ["a/b": "c//d"])
        #expect(StoreJSON.decodeStringDictionary(#"{"\u00e9":"\u0065\u0301","x":"\ud83d\ude00\uD83D\uDC4D"}"#)
                == ["é": "e\u{301}", "x": "😀👍"])
        #expect(StoreJSON.decodeStringDictionary(#"{"c":"\u0000\u001f\b\f\n\r\t\"\\"}"#)
                == ["c": "\u{0}\u{1F}\u{8}\u{C}\n\r\t\"\\"])
        #expect(StoreJSON.decodeStringDictionary(" \n{ \"a\" : \"1\" ,\t\"b\":\"2\" }\r\n") == ["a": "1", "b": "2"])
        #expect(StoreJSON.decodeStringArray(#" [ "\/" , "\u00FC" ] "#) == ["/", "ü"])
        let prepared = StoreJSON.decodePreparedMessage(Data("""
            { "remoteID" : null, "payload" : "AQID\\/w==", "id" : "m\\u00e9", "conversation" : "c", "extra": [1, {}] }
            """.utf8))
        #expect(prepared == PreparedMessage(id: "mé", conversation: "c", remoteID: nil, payload: Data([1, 2, 3, 0xFF])))
    }

    // MARK: Corruption

    /// Texts that are not a JSON object of strings.
    static let corruptDictionaries = [
        "", "not json", "{", "{\"a\":\"b\"", "{\"a\":\"b\"}x", "[\"a\",\"b\"]", "\"a\"", "null", "{\"a\":1}",
        "{\"a\":null}", "{\"a\":[\"b\"]}", "{\"a\":{\"b\":\"c\"}}", "{\"a\":true}", "{a:\"b\"}", "{\"a\":\"\\x\"}",
        "{\"a\":\"\u{1}\"}", "{\"a\":\"\\ud83d\"}",
    ]

    @Test("Anything but an object of strings is refused, as JSONDecoder refuses it", arguments: corruptDictionaries)
    func corruptDictionary(_ text: String) {
        #expect(StoreJSON.decodeStringDictionary(text) == nil)
        #expect((try? JSONDecoder().decode([String: String].self, from: Data(text.utf8))) == nil)
    }

    @Test("Anything but an array of strings is refused", arguments: ["", "[", "{}", "[1]", "[null]", "[\"a\",]"])
    func corruptArray(_ text: String) {
        #expect(StoreJSON.decodeStringArray(text) == nil)
        // JSONDecoder tolerates a trailing comma, which no writer of these columns ever produced; the reader is strict.
        if !text.hasSuffix(",]") {
            #expect((try? JSONDecoder().decode([String].self, from: Data(text.utf8))) == nil)
        }
    }

    /// Bytes that are not a prepared message.
    static let corruptPrepared = [
        "", "not json", "[]", "\"x\"", #"{"conversation":"c","payload":""}"#, #"{"id":"m","payload":""}"#,
        #"{"id":"m","conversation":"c"}"#, #"{"id":1,"conversation":"c","payload":""}"#,
        #"{"id":"m","conversation":null,"payload":""}"#, #"{"id":"m","conversation":"c","payload":"not base64!"}"#,
        #"{"id":"m","conversation":"c","payload":"AQI"}"#, #"{"id":"m","conversation":"c","payload":7}"#,
        #"{"id":"m","conversation":"c","payload":"","remoteID":5}"#, #"{"id":"m","conversation":"c","payload":""}]"#,
    ]

    @Test("A prepared message missing a member or with a mistyped one is refused, as JSONDecoder refuses it",
          arguments: corruptPrepared)
    func corruptPreparedMessage(_ text: String) {
        #expect(StoreJSON.decodePreparedMessage(Data(text.utf8)) == nil)
        #expect((try? JSONDecoder().decode(PreparedMessage.self, from: Data(text.utf8))) == nil)
    }

    @Test("A stored row holding corrupt metadata, remote parameters or prepared request is reported as corruption",
          arguments: ["metadata", "remote_parameters", "prepared"])
    func corruptRows(_ column: String) throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let (path, store) = (file.path, file.store)
        var message = Fixtures.message()
        message.content.metadata = ["k": "v"]
        message.content.attachments = [Fixtures.attachment("a.png", upload: .uploaded)]
        let entry = Fixtures.outbox(message.id, created: 0, due: 0, prepared: Self.preparedMessages[1].1)
        try store.writeBlocking { transaction in
            try transaction.upsertMessage(message)
            try transaction.upsertOutbox(entry)
        }
        #expect(try store.readBlocking { try $0.message(message.id) } == message)
        #expect(try store.readBlocking { try $0.outboxEntry(message.id) } == entry)

        let raw = try RawDatabase(path: path)
        let corruptions: [String] = column == "prepared"
            ? ["CAST('not json' AS BLOB)", "CAST('[]' AS BLOB)", "CAST('{\"conversation\":\"c\",\"payload\":\"\"}' AS BLOB)"]
            : ["'not json'", "'[\"a\"]'", "'{\"a\":1}'"]
        for corruption in corruptions {
            switch column {
            case "metadata": try raw.execute("UPDATE messages SET metadata = \(corruption)")
            case "remote_parameters": try raw.execute("UPDATE attachments SET remote_parameters = \(corruption)")
            default: try raw.execute("UPDATE outbox SET prepared = \(corruption)")
            }
            let error = #expect(throws: SwitchboardError.self, "\(column) = \(corruption)") {
                if column == "prepared" {
                    _ = try store.readBlocking { try $0.outboxEntry(message.id) }
                } else {
                    _ = try store.readBlocking { try $0.message(message.id) }
                }
            }
            #expect(error?.code == .corruptStore)
            #expect(error?.message.contains(path) == true)
        }
    }

    @Test("Rows written by earlier versions (JSONEncoder, escaped slashes) still read back")
    func earlierRowsStillRead() throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let (path, store) = (file.path, file.store)
        var message = Fixtures.message()
        message.content.metadata = ["path": "a/b", "emoji": "👍🏽", "quote": "\"\\"]
        let prepared = PreparedMessage(id: message.id, conversation: "room-1", remoteID: "r/1",
                                       payload: Data((0..<300).map { UInt8(truncatingIfNeeded: $0 &* 91) }))
        let entry = Fixtures.outbox(message.id, created: 0, due: 0, prepared: prepared)
        try store.writeBlocking { transaction in
            try transaction.upsertMessage(message)
            try transaction.upsertOutbox(entry)
        }
        let encoder = Self.foundationEncoder()
        let oldMetadata = String(decoding: try encoder.encode(message.content.metadata), as: UTF8.self)
        let oldPrepared = try encoder.encode(prepared)
        #expect(oldMetadata.contains(#"\/"#) && String(decoding: oldPrepared, as: UTF8.self).contains(#"\/"#))
        let raw = try RawDatabase(path: path)
        try raw.execute("UPDATE messages SET metadata = '\(oldMetadata.replacingOccurrences(of: "'", with: "''"))'")
        try raw.execute("UPDATE outbox SET prepared = X'\(oldPrepared.map { String(format: "%02x", $0) }.joined())'")
        #expect(try raw.text("SELECT metadata FROM messages") == oldMetadata)
        #expect(try store.readBlocking { try $0.message(message.id) } == message)
        #expect(try store.readBlocking { try $0.outboxEntry(message.id) } == entry)
    }
}
