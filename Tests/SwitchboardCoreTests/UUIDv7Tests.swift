import Foundation
import SwitchboardCore
import Testing

@Suite("UUIDv7")
struct UUIDv7Tests {
    @Test("sets version 7 and the RFC variant in lowercase canonical text, and carries its millisecond")
    func layout() throws {
        let generator = UUIDv7Generator()
        let millis: UInt64 = 1_800_000_000_123
        let text = generator.make(millis: millis)
        let uuid = try #require(UUID(uuidString: text))
        #expect(text == uuid.uuidString.lowercased())
        #expect(uuid.uuid.6 >> 4 == 7, "version nibble")
        #expect(uuid.uuid.8 & 0xC0 == 0x80, "variant bits 10")
        #expect(UUIDv7.millis(of: text) == millis)
        #expect(text.hasPrefix(String(millis, radix: 16).leftPadded(to: 12).prefix(8)))
        #expect(UUIDv7.millis(of: UUIDv5.make(namespace: UUIDv5.switchboardNamespace, name: "x")) == nil)
        #expect(UUIDv7.millis(of: "not a uuid") == nil)
    }

    @Test("IDs minted in one millisecond, across a clock step back and past 4,096 per millisecond stay increasing")
    func strictlyIncreasing() {
        let generator = UUIDv7Generator()
        var previous = ""
        var stamps: [UInt64] = []
        // 10,000 in one millisecond overflow the 12-bit counter; then the clock steps back by a second.
        for millis in Array(repeating: UInt64(1_800_000_000_000), count: 10_000) + [1_799_999_999_000, 1_800_000_000_500] {
            let text = generator.make(millis: millis)
            #expect(text > previous, "\(text) after \(previous)")
            previous = text
            stamps.append(UUIDv7.millis(of: text) ?? 0)
        }
        #expect(stamps.first == 1_800_000_000_000)
        #expect(stamps[9_999] > 1_800_000_000_000, "the counter's overflow borrows the next millisecond")
        #expect(stamps[9_999] < 1_800_000_000_010)
        #expect(stamps[10_000] >= stamps[9_999], "a clock stepping back does not move IDs back")
        #expect(stamps[10_001] == 1_800_000_000_500, "a clock past the borrowed time is used as it is")
    }

    @Test("random bits differ between generators minting the same millisecond")
    func randomTail() {
        let texts = (0..<100).map { _ in UUIDv7Generator().make(millis: 1_800_000_000_000) }
        #expect(Set(texts).count == 100)
    }

    @Test("MessageID.make and AttachmentID.make mint canonical, time-ordered UUIDv7s")
    func identifiers() {
        let before = UInt64(Date().timeIntervalSince1970 * 1000)
        let ids = (0..<1_000).map { _ in MessageID.make() }
        let after = UInt64(Date().timeIntervalSince1970 * 1000) + 5
        #expect(ids == ids.sorted())
        #expect(Set(ids).count == ids.count)
        for id in ids {
            #expect(id.isCanonical)
            let millis = UUIDv7.millis(of: id.rawValue) ?? 0
            #expect(millis >= before && millis <= after)
        }
        #expect(UUIDv7.millis(of: AttachmentID.make().rawValue) != nil)
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
