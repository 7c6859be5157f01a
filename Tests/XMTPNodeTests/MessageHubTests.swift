import Foundation
import Testing
@testable import XMTPNode

/// The node's fan-out of stored messages to live subscriptions.
@Suite("XMTP node message hub")
struct MessageHubTests {
    private let group = XMTPNodeGroupID(bytes: Array(repeating: 1, count: 16))!
    private let other = XMTPNodeGroupID(bytes: Array(repeating: 2, count: 16))!

    private func messages(_ ids: ClosedRange<UInt64>, in group: XMTPNodeGroupID) -> [XMTPNodeStoredMessage] {
        ids.map { XMTPNodeStoredMessage(id: $0, createdNs: $0, groupID: group, data: [1], senderHMAC: [], shouldPush: true) }
    }

    @Test("a listener takes everything published since its last read in one batch, in order, only its groups")
    func batches() async throws {
        let hub = MessageHub(bufferLimit: 100)
        let listener = hub.add(groups: [group])
        hub.publish(messages(1...3, in: group) + messages(4...4, in: other))
        hub.publish(messages(5...6, in: group))
        #expect(await listener.next()?.map(\.id) == [1, 2, 3, 5, 6])
        hub.publish(messages(7...7, in: group))
        #expect(await listener.next()?.map(\.id) == [7])
        hub.remove(listener)
        #expect(await listener.next() == nil)
        #expect(!listener.overflowed)
        #expect(hub.listenerCount == 0)
    }

    @Test("a reader waiting for messages wakes when they are published")
    func wakes() async throws {
        let hub = MessageHub(bufferLimit: 100)
        let listener = hub.add(groups: [group])
        let reader = Task { await listener.next()?.map(\.id) }
        try await Task.sleep(for: .milliseconds(50))
        hub.publish(messages(1...2, in: group))
        #expect(await reader.value == [1, 2])
        hub.finishAll()
        #expect(await listener.next() == nil)
    }

    @Test("a listener more than its limit behind hands out what it held, then ends overflowed")
    func overflow() async throws {
        let hub = MessageHub(bufferLimit: 5)
        let listener = hub.add(groups: [group])
        hub.publish(messages(1...4, in: group))
        hub.publish(messages(5...6, in: group))
        hub.publish(messages(7...7, in: group))
        #expect(listener.overflowed)
        #expect(await listener.next()?.map(\.id) == [1, 2, 3, 4])
        #expect(await listener.next() == nil)
    }
}
