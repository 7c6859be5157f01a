import Foundation
import SwitchboardCore
import Testing

private let namespaceDNS = UUID(uuidString: "6ba7b810-9dad-11d1-80b4-00c04fd430c8")!
private let namespaceURL = UUID(uuidString: "6ba7b811-9dad-11d1-80b4-00c04fd430c8")!
private let namespaceOID = UUID(uuidString: "6ba7b812-9dad-11d1-80b4-00c04fd430c8")!

@Suite("UUIDv5")
struct UUIDv5Tests {
    /// Expected values from Python's `uuid.uuid5`.
    @Test("matches RFC 9562 / Python uuid5", arguments: [
        (namespaceDNS, "www.example.com", "2ed6657d-e927-568b-95e1-2665a8aea6a2"),
        (namespaceURL, "https://example.com/a", "6639460f-3425-5329-8097-a58f06127860"),
        (namespaceDNS, "", "4ebd0208-8328-5d69-8c44-ec50939c0967"),
        (namespaceOID, "héllo wörld ✓", "c8004e38-3c2a-523c-ab31-d09018c387f3"),
        (UUIDv5.switchboardNamespace, "memory\u{1F}r-1", "51bba6b6-c17a-5a44-a6d9-90eb43f77ce9"),
    ])
    func knownValues(namespace: UUID, name: String, expected: String) {
        #expect(UUIDv5.make(namespace: namespace, name: name) == expected)
    }

    @Test("sets version 5 and the RFC variant, in lowercase canonical text", arguments: [
        "", "a", "www.example.com", "memory\u{1F}r-1", String(repeating: "long name ", count: 50), "🦊",
    ])
    func versionAndVariant(name: String) throws {
        let text = UUIDv5.make(namespace: namespaceDNS, name: name)
        let uuid = try #require(UUID(uuidString: text))
        #expect(text == uuid.uuidString.lowercased())
        #expect(text.count == 36)
        #expect(uuid.uuid.6 >> 4 == 5, "version nibble")
        #expect(uuid.uuid.8 & 0xC0 == 0x80, "variant bits 10")
        let characters = Array(text)
        #expect(characters[14] == "5")
        #expect("89ab".contains(characters[19]))
    }

    @Test("is deterministic and depends on namespace and name")
    func deterministic() {
        let first = UUIDv5.make(namespace: namespaceDNS, name: "x")
        #expect(UUIDv5.make(namespace: namespaceDNS, name: "x") == first)
        #expect(UUIDv5.make(namespace: namespaceURL, name: "x") != first)
        #expect(UUIDv5.make(namespace: namespaceDNS, name: "y") != first)
        #expect(UUIDv5.make(namespace: namespaceDNS, name: "X") != first)
    }
}

@Suite("MessageID")
struct MessageIDTests {
    @Test("derived IDs match the UUIDv5 of backend + US + remote in the Switchboard namespace", arguments: [
        ("memory", "r-1", "51bba6b6-c17a-5a44-a6d9-90eb43f77ce9"),
        ("memory", "r-2", "983c6d70-c9d4-5a7e-97c0-bc218115f802"),
        ("supabase:chat.example", "r-1", "1b80b2e5-ba0b-57af-8567-0f4c6d33b46c"),
    ])
    func derivedKnownValues(backend: String, remote: String, expected: String) {
        let id = MessageID.derived(backend: BackendID(backend), remote: RemoteID(remote))
        #expect(id.rawValue == expected)
        #expect(id.isCanonical)
    }

    @Test("derived IDs are deterministic")
    func derivedDeterministic() {
        let a = MessageID.derived(backend: "memory", remote: "abc")
        let b = MessageID.derived(backend: BackendID("memory"), remote: RemoteID("abc"))
        #expect(a == b)
    }

    @Test("derived IDs differ across backends and remote IDs, and the separator prevents collisions")
    func derivedDistinct() {
        let pairs: [(BackendID, RemoteID)] = [
            ("memory", "1"), ("memory", "2"), ("memory2", "1"), ("other", "1"),
            ("ab", "c"), ("a", "bc"), ("", "abc"), ("abc", ""), ("memory", "Memory"),
        ]
        let ids = pairs.map { MessageID.derived(backend: $0.0, remote: $0.1) }
        #expect(Set(ids).count == pairs.count)
        #expect(ids.allSatisfy { $0.isCanonical })
    }

    @Test("make() mints distinct canonical lowercase UUIDs")
    func make() throws {
        let ids = (0..<200).map { _ in MessageID.make() }
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.isCanonical)
            #expect(id.rawValue == id.rawValue.lowercased())
            #expect(id.rawValue.count == 36)
            let uuid = try #require(UUID(uuidString: id.rawValue))
            #expect(uuid.uuid.6 >> 4 == 7, "fresh IDs are time-ordered version 7")
        }
    }

    @Test("AttachmentID.make() mints distinct lowercase UUIDs")
    func attachmentMake() {
        let ids = (0..<100).map { _ in AttachmentID.make() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.rawValue == $0.rawValue.lowercased() && UUID(uuidString: $0.rawValue) != nil })
    }

    @Test("isCanonical accepts only lowercase hyphenated UUID text", arguments: [
        ("2ed6657d-e927-568b-95e1-2665a8aea6a2", true),
        ("00000000-0000-0000-0000-000000000000", true),
        ("2ED6657D-E927-568B-95E1-2665A8AEA6A2", false),
        ("2ed6657d-E927-568b-95e1-2665a8aea6a2", false),
        ("2ed6657de927568b95e12665a8aea6a2", false),
        ("{2ed6657d-e927-568b-95e1-2665a8aea6a2}", false),
        (" 2ed6657d-e927-568b-95e1-2665a8aea6a2", false),
        ("2ed6657d-e927-568b-95e1-2665a8aea6a2\n", false),
        ("2ed6657d-e927-568b-95e1-2665a8aea6a", false),
        ("2ed6657d-e927-568b-95e1-2665a8aea6ag", false),
        ("not-a-uuid", false),
        ("", false),
    ])
    func isCanonical(text: String, expected: Bool) {
        #expect(MessageID(text).isCanonical == expected)
    }
}

@Suite("String identifiers")
struct StringIdentifierTests {
    /// Encodes `id` alone and inside an array, checks both are bare JSON strings, and decodes them back.
    private func checkRoundTrip<ID: StringIdentifier>(_ id: ID, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let single = try encoder.encode(id)
        let expected = try encoder.encode(id.rawValue)
        #expect(String(decoding: single, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
                sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode(ID.self, from: single) == id, sourceLocation: sourceLocation)

        let list = try encoder.encode([id, id])
        #expect(try JSONDecoder().decode([String].self, from: list) == [id.rawValue, id.rawValue],
                sourceLocation: sourceLocation)
        #expect(try JSONDecoder().decode([ID].self, from: list) == [id, id], sourceLocation: sourceLocation)
    }

    @Test("every identifier encodes as a bare JSON string and decodes back")
    func codableRoundTrip() throws {
        try checkRoundTrip(MessageID("2ed6657d-e927-568b-95e1-2665a8aea6a2"))
        try checkRoundTrip(RemoteID("r/1 \"quoted\""))
        try checkRoundTrip(BackendID("supabase:chat.example"))
        try checkRoundTrip(ConversationID("room-ü"))
        try checkRoundTrip(UserID(""))
        try checkRoundTrip(AttachmentID("a-1"))
        try checkRoundTrip(Cursor("42"))
    }

    @Test("a bare string in JSON is exactly the raw value")
    func bareString() throws {
        let data = try JSONEncoder().encode(MessageID("m-1"))
        #expect(String(decoding: data, as: UTF8.self) == "\"m-1\"")
        #expect(try JSONDecoder().decode(Cursor.self, from: Data("\"c9\"".utf8)) == Cursor("c9"))
    }

    @Test("identifiers inside models encode as plain string fields")
    func nestedInModel() throws {
        let outgoing = OutgoingMessage(id: "m-1", conversation: "room", sender: "alice", text: "hi", replyTo: "r-0",
                                       createdAt: Date(timeIntervalSince1970: 0))
        let data = try JSONEncoder().encode(outgoing)
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["id"] as? String == "m-1")
        #expect(object["conversation"] as? String == "room")
        #expect(object["sender"] as? String == "alice")
        #expect(object["replyTo"] as? String == "r-0")
        #expect(try JSONDecoder().decode(OutgoingMessage.self, from: data) == outgoing)
    }

    @Test("decoding something other than a string fails")
    func decodingNonString() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(MessageID.self, from: Data("42".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UserID.self, from: Data("{\"rawValue\":\"x\"}".utf8)) }
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Cursor.self, from: Data("null".utf8)) }
    }

    @Test("literals, description and ordering use the raw text")
    func literalDescriptionOrdering() {
        let literal: ConversationID = "room-7"
        #expect(literal == ConversationID("room-7"))
        #expect(literal.description == "room-7")
        #expect("\(UserID("bob"))" == "bob")
        #expect(MessageID("a") < MessageID("b"))
        #expect(!(MessageID("b") < MessageID("a")))
        #expect(!(MessageID("a") < MessageID("a")))
        #expect([Cursor("10"), Cursor("2"), Cursor("1")].sorted() == [Cursor("1"), Cursor("10"), Cursor("2")])
    }
}
