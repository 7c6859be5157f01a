import Foundation
import Testing
@testable import SwitchboardCore

/// `UUIDText`: the same bytes as Foundation for every well-formed UUID text, and nothing for what is not one.
@Suite("UUID text")
struct UUIDTextTests {
    /// The 16 bytes of a Foundation UUID.
    func bytes(_ uuid: UUID) -> [UInt8] {
        withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    @Test("Well-formed texts in any case read as Foundation reads them")
    func agreesWithFoundation() {
        for index in 0..<2000 {
            let uuid = UUID()
            let lower = uuid.uuidString.lowercased()
            let mixed = String(lower.enumerated().map { $0.offset % 3 == index % 3 ? Character($0.element.uppercased()) : $0.element })
            for text in [lower, uuid.uuidString, mixed] {
                #expect(UUIDText.bytes(text) == bytes(uuid))
                #expect(UUIDText.isUUID(text))
                #expect(UUIDText.canonical(text) == lower)
                #expect(UUIDText.isCanonical(text) == (text == lower))
                #expect(MessageID(text).isCanonical == (text == lower))
            }
        }
    }

    @Test("Texts that sscanf would stretch into a UUID are refused", arguments: [
        " f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11", "+f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11", "0x1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11",
        "6f1c9a52-+d1e-4f6b-9a55-3e2b8c0d4a11", "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a 1", "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a1",
        "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a111", "6f1c9a527d1e-4f6b-9a55-3e2b8c0d4a11-", "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a1g",
        "{6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a1}", "", "6f1c9a52_7d1e_4f6b_9a55_3e2b8c0d4a11", "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4aé",
    ])
    func refusesNonUUIDs(_ text: String) {
        #expect(UUIDText.bytes(text) == nil)
        #expect(!UUIDText.isUUID(text))
        #expect(UUIDText.canonical(text) == nil)
        #expect(!MessageID(text).isCanonical)
    }

    @Test("UUIDv7 timestamps read through UUIDText")
    func uuidv7Millis() {
        let text = UUIDv7Generator().make(millis: 1_800_000_000_123)
        #expect(UUIDv7.millis(of: text) == 1_800_000_000_123)
        #expect(UUIDv7.millis(of: text.uppercased()) == 1_800_000_000_123)
        #expect(UUIDv7.millis(of: " " + text.dropFirst()) == nil)
        #expect(UUIDv7.millis(of: UUID().uuidString) == nil)
    }
}
