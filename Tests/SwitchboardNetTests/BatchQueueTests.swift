import Testing
import SwitchboardNet

/// The writer's batch queue shared by the realtime hub and the XMTP node's subscriptions.
@Suite struct BatchQueueTests {
    /// Everything appended since the last take comes out at once, in order, up to the limit.
    @Test func takesWhatIsQueued() async {
        let queue = BatchQueue<Int>()
        #expect(queue.append(contentsOf: [1, 2, 3]))
        queue.append(4)
        #expect(queue.count == 4)
        #expect(await queue.next(limit: 3) == [1, 2, 3])
        #expect(await queue.next() == [4])
        #expect(queue.count == 0)
    }

    /// A waiting writer wakes on the next append.
    @Test func wakesTheWriter() async throws {
        let queue = BatchQueue<String>()
        let writer = Task { await queue.next() }
        try await Task.sleep(for: .milliseconds(50))
        queue.append("a")
        #expect(await writer.value == ["a"])
    }

    /// After `finish` the queued items still come out, later appends are refused, then nil.
    @Test func finishDrainsThenEnds() async {
        let queue = BatchQueue<Int>()
        queue.append(contentsOf: [1, 2])
        queue.finish()
        #expect(!queue.append(3))
        #expect(await queue.next() == [1, 2])
        #expect(await queue.next() == nil)
    }

    /// Many producers, one writer: nothing lost or doubled, each producer's items in its order.
    @Test func manyProducers() async {
        let queue = BatchQueue<Int>()
        await withTaskGroup(of: Void.self) { group in
            for producer in 0..<4 {
                group.addTask { for index in 0..<1_000 { queue.append(producer * 10_000 + index) } }
            }
        }
        queue.finish()
        var seen: [Int] = []
        while let batch = await queue.next(limit: 256) { seen += batch }
        #expect(seen.count == 4_000)
        for producer in 0..<4 {
            #expect(seen.filter { $0 / 10_000 == producer } == (0..<1_000).map { producer * 10_000 + $0 })
        }
    }
}
