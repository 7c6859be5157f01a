import Foundation
import SwitchboardCore
import Testing

/// `RemoteMessage` hashes only its identity and version fields; sets and dictionaries must still tell every
/// field apart.
@Suite("RemoteMessage hashing")
struct RemoteMessageHashingTests {
    private func message(text: String = "hello", metadata: [String: String] = [:], edited: Double? = nil) -> RemoteMessage {
        RemoteMessage(remoteID: "r-1", conversation: "room", idempotencyKey: nil, sender: "bob", text: text,
                      metadata: metadata, sentAt: Date(timeIntervalSince1970: 1_000),
                      editedAt: edited.map { Date(timeIntervalSince1970: $0) })
    }

    @Test("a repeated delivery is equal, hashes alike and is kept once")
    func repeatsCollapse() {
        let first = message(), again = message()
        #expect(first == again)
        #expect(first.hashValue == again.hashValue)
        #expect(Set([first, again]).count == 1)
        #expect(Set([RemoteChange.message(first), .message(again)]).count == 1)
    }

    @Test("versions that differ only in text, metadata or attachments stay distinct")
    func otherFieldsStillCompared() {
        let original = message()
        var withAttachment = original
        withAttachment.attachments = [Attachment(filename: "a.png", mimeType: "image/png", byteCount: 1,
                                                 sha256: String(repeating: "ab", count: 32), upload: .uploaded)]
        let variants = [original, message(text: "hello!"), message(metadata: ["k": "v"]), withAttachment]
        #expect(Set(variants).count == variants.count)
        #expect(Set(variants.map(RemoteChange.message)).count == variants.count)
    }

    @Test("an edit is a different change")
    func editsDiffer() {
        #expect(message() != message(text: "hello", edited: 2_000))
        #expect(Set([message(), message(edited: 2_000), message(edited: 3_000)]).count == 3)
    }
}
