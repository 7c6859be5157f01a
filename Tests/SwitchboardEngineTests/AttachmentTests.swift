import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Attachments: progress, all or some failing, restart mid-upload, bad sources")
struct AttachmentTests {
    private static func bytes(_ seed: UInt8, count: Int = 4096) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    private static func sources(_ names: [String]) -> [AttachmentSource] {
        names.enumerated().map { index, name in
            .data(bytes(UInt8(index + 1)), filename: name, mimeType: "application/octet-stream")
        }
    }

    @Test("upload progress events stay between 0 and 1 and precede the sent state")
    func progressBetweenZeroAndOne() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.uploadDelayAfter = .milliseconds(100) }  // lets progress land before the upload settles
            let alice = try await h.opened(h.alice, adapter: wrapped)
            let log = try await EventLog.recording(alice, h.room)
            let message = try await alice.send("two files", in: h.room, attachments: Self.sources(["a.bin", "b.bin"]))
            #expect(message.delivery == .uploading(progress: 0))
            try #require(await eventually { try await alice.isPublished(message.id) })
            // The recorder may lag the store: wait until it has seen the sent state too.
            #expect(await log.waitUntil { _ in log.events(of: message.id).contains { $0.message?.delivery.isPublished == true } })

            let deliveries = log.events(of: message.id).compactMap(\.message?.delivery)
            let progress = deliveries.compactMap(\.uploadProgress)
            #expect(!progress.isEmpty)
            #expect(progress.allSatisfy { (0...1).contains($0) }, "\(progress)")
            #expect(progress.contains { $0 > 0 && $0 < 1 }, "no intermediate progress in \(progress)")
            let lastUploading = try #require(deliveries.lastIndex { $0.uploadProgress != nil })
            let firstPublished = try #require(deliveries.firstIndex { $0.isPublished })
            #expect(lastUploading < firstPublished)
            #expect(deliveries.last == .sent)
        }
    }

    @Test("all uploads succeed: one message carries every attachment, the peer fetches the same bytes",
          arguments: IDScheme.allCases)
    func allSucceed(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            let names = ["a.bin", "b.bin", "c.bin"]
            let message = try await alice.send("three files", in: h.room, attachments: Self.sources(names))
            try #require(await eventually { try await alice.isPublished(message.id) })

            let rows = h.rows(key: message.id)
            #expect(rows.count == 1)
            #expect(h.rows.count == 1, "a single send made \(h.rows.count) backend messages")
            #expect(rows.first?.attachments.map(\.filename) == names)
            let stored = try #require(try await alice.message(message.id))
            #expect(stored.content.attachments.map(\.filename) == names)
            #expect(stored.content.attachments.allSatisfy { $0.upload == .uploaded && $0.remoteLocation != nil })
            // The local copy stays displayed.
            #expect(stored.content.attachments.allSatisfy { $0.localPath.map(FileManager.default.fileExists) == true })

            try #require(await eventually { try await bob.message(message.id)?.content.attachments.count == 3 })
            let received = try #require(try await bob.message(message.id))
            for (index, attachment) in received.content.attachments.enumerated() {
                #expect(try await bob.adapter.asUploader.download(attachment) == Self.bytes(UInt8(index + 1)))
            }
        }
    }

    @Test("one of three fails: the message carries two, a failed placeholder holds one and retries",
          arguments: IDScheme.allCases)
    func oneOfThreeFails(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            h.backend.faults.failUploads(named: "b.bin")
            let message = try await alice.send("three files", in: h.room, attachments: Self.sources(["a.bin", "b.bin", "c.bin"]))
            try #require(await eventually { try await alice.isPublished(message.id) })

            #expect(try await alice.message(message.id)?.content.attachments.map(\.filename) == ["a.bin", "c.bin"])
            #expect(h.row(key: message.id)?.attachments.map(\.filename) == ["a.bin", "c.bin"])
            let stored = try await alice.storedMessages(in: h.room)
            #expect(stored.count == 2)
            let placeholder = try #require(stored.first { $0.content.metadata["switchboard.splitFrom"] == message.id.rawValue })
            #expect(placeholder.delivery.isRetryableFailure, "\(placeholder.delivery)")
            #expect(placeholder.content.attachments.map(\.filename) == ["b.bin"])
            #expect(placeholder.isOutgoing)
            if case .failed = placeholder.content.attachments.first?.upload {} else {
                Issue.record("the failed attachment shows \(String(describing: placeholder.content.attachments.first?.upload))")
            }
            #expect(h.rows(key: placeholder.id).isEmpty)
            #expect(h.rows.count == 1)

            h.backend.faults.stopFailingUploads(named: "b.bin")
            try await alice.retry(placeholder.id)
            try #require(await eventually { try await alice.isPublished(placeholder.id) })
            #expect(h.rows(key: placeholder.id).first?.attachments.map(\.filename) == ["b.bin"])
            #expect(h.rows(key: placeholder.id).count == 1)
            #expect(h.rows(key: message.id).first?.attachments.map(\.filename) == ["a.bin", "c.bin"])
            #expect(h.rows.count == 2)
            try #require(await eventually { try await bob.message(placeholder.id)?.content.attachments.count == 1 })
            await #expect(try bob.storedMessages(in: h.room).count == 2)
        }
    }

    @Test("all uploads fail: the message is failed and retryable, nothing goes out; retry sends it whole")
    func allFail() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            for name in ["a.bin", "b.bin", "c.bin"] { h.backend.faults.failUploads(named: name) }
            let message = try await alice.send("doomed", in: h.room, attachments: Self.sources(["a.bin", "b.bin", "c.bin"]))
            try #require(await eventually { try await alice.delivery(message.id)?.isFailed == true })
            #expect(try await alice.delivery(message.id)?.isRetryableFailure == true)
            #expect(h.rows.isEmpty)
            await #expect(try alice.storedMessages(in: h.room).map(\.id) == [message.id], "no placeholder when nothing uploaded")
            #expect(try await alice.message(message.id)?.content.attachments.count == 3)

            for name in ["a.bin", "b.bin", "c.bin"] { h.backend.faults.stopFailingUploads(named: name) }
            try await alice.retry(message.id)
            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.rows(key: message.id).first?.attachments.count == 3)
            #expect(h.rows.count == 1)
        }
    }

    @Test("a restart mid-upload restores the message and sends it once with every attachment",
          arguments: IDScheme.allCases)
    func restartMidUpload(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let slow = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            slow.configure { $0.uploadDelayBefore = .seconds(30) }
            let first = try await h.opened(h.alice, store: "alice", adapter: slow)
            let message = try await first.send("two files", in: h.room, attachments: Self.sources(["a.bin", "b.bin"]))
            try #require(await eventually { slow.uploadsStarted == 2 }, "the uploads never started")
            await first.stop()

            let disk = try SQLiteStore(path: h.storePath("alice"))
            let restored = try await #require(try disk.read { tx in try tx.message(message.id) })
            disk.close()
            #expect(restored.delivery.uploadProgress != nil || restored.delivery == .pending, "\(restored.delivery)")
            #expect(restored.content.attachments.count == 2)
            #expect(h.rows.isEmpty)

            let second = try await h.opened(h.alice, store: "alice")
            try #require(await eventually { try await second.isPublished(message.id) })
            #expect(await second.waitUntilIdle(timeout: 5))
            #expect(h.rows(key: message.id).count == 1)
            #expect(h.rows.count == 1)
            #expect(h.row(key: message.id)?.attachments.map(\.filename) == ["a.bin", "b.bin"])
            let sent = try #require(try await second.message(message.id))
            #expect(sent.content.attachments.allSatisfy { $0.upload == .uploaded })
            await #expect(try second.storedMessages(in: h.room).count == 1)
            for (index, attachment) in sent.content.attachments.enumerated() {
                #expect(try await second.adapter.asUploader.download(attachment) == Self.bytes(UInt8(index + 1)))
            }
        }
    }

    @Test("a file attachment that does not exist is an invalid argument; nothing is stored")
    func missingFile() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            let path = h.directory.appendingPathComponent("nope.png").path
            await expectError(.invalidArgument, "missing file") {
                try await alice.send("see attached", in: h.room, attachments: [.file(path: path)])
            }
            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            #expect(try await alice.timeline(of: h.room).isEmpty)
        }
    }

    @Test("oversize attachments are refused as content too large, as data or as a file")
    func oversize() async throws {
        try await withHarness(limits: MemoryWire.Limits(maxAttachmentBytes: 1024)) { h in
            let alice = try await h.opened(h.alice)
            await expectError(.contentTooLarge, "oversize data") {
                try await alice.send("big", in: h.room,
                                     attachments: [.data(Data(count: 1025), filename: "big.bin", mimeType: "application/octet-stream")])
            }
            let file = h.directory.appendingPathComponent("big.txt")
            try Data(count: 4096).write(to: file)
            await expectError(.contentTooLarge, "oversize file") {
                try await alice.send("big", in: h.room, attachments: [.file(path: file.path)])
            }
            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            // Exactly at the limit is fine.
            let fits = try await alice.send("fits", in: h.room,
                                            attachments: [.data(Data(count: 1024), filename: "ok.bin", mimeType: "application/octet-stream")])
            try #require(await eventually { try await alice.isPublished(fits.id) })
            #expect(h.row(key: fits.id)?.attachments.first?.byteCount == 1024)
        }
    }
}

extension ChatAdapter {
    /// This adapter as an uploader (every adapter in these tests is one).
    var asUploader: any UploadingAdapter {
        get throws {
            guard let uploader = self as? any UploadingAdapter else {
                throw SwitchboardError(.notSupported, "\(backend) does not host attachments")
            }
            return uploader
        }
    }
}
