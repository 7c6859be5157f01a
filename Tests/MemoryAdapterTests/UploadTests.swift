import Foundation
import MemoryAdapter
import SwitchboardCore
import Testing

/// Progress values reported by an upload.
final class ProgressLog: Sendable {
    private let values = Locked<[Double]>([])
    /// Records one value.
    func record(_ value: Double) { values.withLock { $0.append(value) } }
    /// Everything recorded.
    var all: [Double] { values.withLock { $0 } }
}

@Suite("Memory uploads")
struct UploadTests {
    static func attachment(_ bytes: Data, named filename: String = "photo.jpg") -> SwitchboardCore.Attachment {
        SwitchboardCore.Attachment(filename: filename, mimeType: "image/jpeg", byteCount: Int64(bytes.count),
                   sha256: Digest.sha256Hex(bytes), localPath: "/tmp/\(filename)")
    }

    @Test("uploads report progress, and the attachment travels and downloads", arguments: IDScheme.allCases)
    func uploadReportsProgressAndDownloads(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let bytes = Data((0..<5000).map { UInt8($0 % 251) })
        let progress = ProgressLog()
        let uploaded = try await f.alice.upload(Self.attachment(bytes), data: bytes, in: f.room,
                                                progress: { progress.record($0) })
        #expect(progress.all == [0.25, 0.5, 0.75, 1])
        #expect(uploaded.upload == .uploaded)
        #expect(uploaded.remoteLocation?.hasPrefix("memory://blobs/") == true)
        #expect(uploaded.localPath == "/tmp/photo.jpg", "the adapter keeps the local copy's path")

        let prepared = try await f.alice.prepare(f.outgoing("", from: f.alice, attachments: [uploaded]), noSend: false)
        _ = try await f.alice.publish(prepared)
        let page = try await f.bob.history(in: f.room, before: nil, limit: 1)
        let remote = try #require(page.messages.first?.attachments.first)
        #expect(remote.localPath == nil)
        #expect(try await f.bob.download(remote) == bytes)
    }

    @Test("an upload of a failing name fails after some progress; others go through", arguments: IDScheme.allCases)
    func namedUploadsFail(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let bytes = Data("bad".utf8)
        f.backend.faults.failUploads(named: "bad.jpg")
        let progress = ProgressLog()
        await expectError(.transport, retryable: true) {
            _ = try await f.alice.upload(Self.attachment(bytes, named: "bad.jpg"), data: bytes, in: f.room,
                                         progress: { progress.record($0) })
        }
        #expect(!progress.all.isEmpty)
        #expect(progress.all.allSatisfy { $0 < 1 })
        await expectError(.transport) {
            _ = try await f.alice.upload(Self.attachment(bytes, named: "bad.jpg"), data: bytes, in: f.room, progress: { _ in })
        }
        _ = try await f.alice.upload(Self.attachment(bytes, named: "good.jpg"), data: bytes, in: f.room, progress: { _ in })
        f.backend.faults.stopFailingUploads(named: "bad.jpg")
        _ = try await f.alice.upload(Self.attachment(bytes, named: "bad.jpg"), data: bytes, in: f.room, progress: { _ in })
    }

    @Test("the next uploads fail, then uploads succeed", arguments: IDScheme.allCases)
    func nextUploadsFail(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let bytes = Data("x".utf8)
        f.backend.faults.failNextUploads(2)
        for _ in 0..<2 {
            await expectError(.transport, retryable: true) {
                _ = try await f.alice.upload(Self.attachment(bytes), data: bytes, in: f.room, progress: { _ in })
            }
        }
        let uploaded = try await f.alice.upload(Self.attachment(bytes), data: bytes, in: f.room, progress: { _ in })
        #expect(try await f.alice.download(uploaded) == bytes)
    }

    @Test("downloads verify the digest; unknown locations are not found", arguments: IDScheme.allCases)
    func downloadChecksDigest(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let bytes = Data("the real bytes".utf8)
        var uploaded = try await f.alice.upload(Self.attachment(bytes), data: bytes, in: f.room, progress: { _ in })
        uploaded.sha256 = Digest.sha256Hex(Data("other bytes".utf8))
        await expectError(.conflict) { _ = try await f.bob.download(uploaded) }
        uploaded.remoteLocation = "memory://blobs/missing"
        await expectError(.notFound) { _ = try await f.bob.download(uploaded) }
        await expectError(.invalidArgument) {
            _ = try await f.alice.upload(Self.attachment(Data("claimed".utf8)), data: bytes, in: f.room, progress: { _ in })
        }
        let big = Data(count: 10 * 1024 * 1024 + 1)
        await expectError(.contentTooLarge) {
            _ = try await f.backend.upload(big, filename: "big.bin", in: f.room, as: "alice", progress: { _ in })
        }
        await expectError(.unauthorized) {
            _ = try await f.carol.upload(Self.attachment(bytes), data: bytes, in: f.room, progress: { _ in })
        }
    }
}
