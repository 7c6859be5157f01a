import Foundation
import SwitchboardCore
import TestSupport
import Testing

/// One example of every delivery state, with the details `init?(storageName:...)` needs to rebuild it.
private let allDeliveryStates: [DeliveryState] = [
    .draft, .pending, .uploading(progress: 0.42), .sending, .sent, .delivered, .read,
    .failed(reason: "offline", retryable: true), .failed(reason: "rejected", retryable: false), .received,
]

@Suite("DeliveryState")
struct DeliveryStateTests {
    @Test("storageName round-trips for every case", arguments: allDeliveryStates)
    func storageRoundTrip(state: DeliveryState) throws {
        var progress = 0.0, reason: String?, retryable = true
        if case .uploading(let p) = state { progress = p }
        if case .failed(let r, let flag) = state { (reason, retryable) = (r, flag) }
        let rebuilt = try #require(DeliveryState(storageName: state.storageName, progress: progress, reason: reason,
                                                 retryable: retryable))
        #expect(rebuilt == state)
        #expect(rebuilt.storageName == state.storageName)
    }

    @Test("storage names are the documented stable words")
    func storageNames() {
        #expect(allDeliveryStates.map(\.storageName) == [
            "draft", "pending", "uploading", "sending", "sent", "delivered", "read", "failed", "failed", "received",
        ])
    }

    @Test("an unknown stored name gives nil", arguments: ["", "Pending", "SENT", "queued", "failed ", "uploaded"])
    func unknownStorageName(name: String) {
        #expect(DeliveryState(storageName: name) == nil)
    }

    @Test("a stored failed state without details defaults to an unknown, retryable failure")
    func failedDefaults() {
        #expect(DeliveryState(storageName: "failed") == .failed(reason: "unknown", retryable: true))
        #expect(DeliveryState(storageName: "uploading") == .uploading(progress: 0))
    }

    @Test("the ladder draft → pending → uploading → sending → sent → delivered → read strictly climbs")
    func ladderRanks() {
        let ladder: [DeliveryState] = [.draft, .pending, .uploading(progress: 0.5), .sending, .sent, .delivered, .read]
        let ranks = ladder.map(\.rank)
        #expect(ranks == ranks.sorted())
        #expect(Set(ranks).count == ranks.count)
        #expect(zip(ranks, ranks.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test("failed sits between sending and sent; received is above read")
    func failedAndReceivedRanks() {
        let failed = DeliveryState.failed(reason: "x", retryable: true)
        #expect(DeliveryState.sending.rank < failed.rank)
        #expect(failed.rank < DeliveryState.sent.rank)
        #expect(DeliveryState.failed(reason: "y", retryable: false).rank == failed.rank)
        #expect(DeliveryState.read.rank < DeliveryState.received.rank)
        #expect(DeliveryState.uploading(progress: 0).rank == DeliveryState.uploading(progress: 1).rank)
    }

    @Test("isPublished is true exactly for sent, delivered, read and received", arguments: allDeliveryStates)
    func isPublished(state: DeliveryState) {
        let expected: Bool = switch state {
        case .sent, .delivered, .read, .received: true
        default: false
        }
        #expect(state.isPublished == expected)
        #expect(state.isPublished == (state.rank >= DeliveryState.sent.rank))
    }

    @Test("isFailed is true only for failed", arguments: allDeliveryStates)
    func isFailed(state: DeliveryState) {
        #expect(state.isFailed == (state.storageName == "failed"))
    }

    @Test("description is short and readable", arguments: [
        (DeliveryState.draft, "draft"),
        (.uploading(progress: 0.5), "uploading(50%)"),
        (.uploading(progress: 0.004), "uploading(0%)"),
        (.uploading(progress: 1), "uploading(100%)"),
        (.failed(reason: "offline", retryable: true), "failed(offline, retryable)"),
        (.failed(reason: "rejected", retryable: false), "failed(rejected)"),
        (.received, "received"),
    ])
    func description(state: DeliveryState, expected: String) {
        #expect(state.description == expected)
    }

    @Test("JSON round trip keeps associated values", arguments: allDeliveryStates)
    func codable(state: DeliveryState) throws {
        let data = try JSONEncoder().encode(state)
        #expect(try JSONDecoder().decode(DeliveryState.self, from: data) == state)
    }
}

@Suite("ReceiptState")
struct ReceiptStateTests {
    @Test("delivered is below read; the order is strict")
    func ordering() {
        #expect(ReceiptState.delivered < .read)
        #expect(!(ReceiptState.read < .delivered))
        #expect(!(ReceiptState.read < .read))
        #expect(!(ReceiptState.delivered < .delivered))
        #expect(ReceiptState.read > .delivered)
        #expect(ReceiptState.delivered <= .delivered)
        #expect([ReceiptState.read, .delivered, .read].sorted() == [.delivered, .read, .read])
        #expect([ReceiptState.delivered, .read].max() == .read)
    }

    @Test("raw values and JSON are the stable words")
    func rawValues() throws {
        #expect(ReceiptState(rawValue: "delivered") == .delivered)
        #expect(ReceiptState(rawValue: "read") == .read)
        #expect(ReceiptState(rawValue: "seen") == nil)
        #expect(String(decoding: try JSONEncoder().encode(ReceiptState.read), as: UTF8.self) == "\"read\"")
    }
}

@Suite("UploadState")
struct UploadStateTests {
    @Test("storageName round-trips for every case", arguments: [
        UploadState.pending, .uploading(progress: 0.25), .uploaded, .failed(reason: "disk full"),
    ])
    func storageRoundTrip(state: UploadState) throws {
        var progress = 0.0, reason: String?
        if case .uploading(let p) = state { progress = p }
        if case .failed(let r) = state { reason = r }
        let rebuilt = try #require(UploadState(storageName: state.storageName, progress: progress, reason: reason))
        #expect(rebuilt == state)
        let data = try JSONEncoder().encode(state)
        #expect(try JSONDecoder().decode(UploadState.self, from: data) == state)
    }

    @Test("storage names, defaults, unknown names and descriptions")
    func namesAndDescriptions() {
        #expect([UploadState.pending, .uploading(progress: 0.1), .uploaded, .failed(reason: "x")].map(\.storageName)
            == ["pending", "uploading", "uploaded", "failed"])
        #expect(UploadState(storageName: "failed") == .failed(reason: "unknown"))
        #expect(UploadState(storageName: "uploading") == .uploading(progress: 0))
        #expect(UploadState(storageName: "sent") == nil)
        #expect(UploadState(storageName: "") == nil)
        #expect(UploadState.uploading(progress: 0.256).description == "uploading(26%)")
        #expect(UploadState.failed(reason: "disk full").description == "failed(disk full)")
        #expect(UploadState.uploaded.description == "uploaded")
    }
}

@Suite("TimelinePosition")
struct TimelinePositionTests {
    private let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    @Test("orders by time first, then by identifier")
    func ordering() {
        let earlyZ = TimelinePosition(timestamp: t0, id: "z")
        let lateA = TimelinePosition(timestamp: t0.addingTimeInterval(0.000_001), id: "a")
        let earlyA = TimelinePosition(timestamp: t0, id: "a")
        #expect(earlyZ < lateA, "time wins over identifier")
        #expect(!(lateA < earlyZ))
        #expect(earlyA < earlyZ, "same time: identifier breaks the tie")
        #expect(!(earlyA < earlyA))
        #expect([lateA, earlyZ, earlyA].sorted() == [earlyA, earlyZ, lateA])
    }

    @Test("timestamps are kept in whole microseconds, rounded to nearest", arguments: [
        (1.0, Int64(1_000_000)),
        (1.000_000_4, Int64(1_000_000)),
        (1.000_000_6, Int64(1_000_001)),
        (0.0, Int64(0)),
        (-1.5, Int64(-1_500_000)),
        (1_700_000_000.123456789, Int64(1_700_000_000_123_457)),
        (1_700_000_000.5, Int64(1_700_000_000_500_000)),
    ])
    func micros(seconds: Double, expected: Int64) {
        let date = Date(timeIntervalSince1970: seconds)
        #expect(TimelinePosition.micros(date) == expected)
        #expect(TimelinePosition(timestamp: date, id: "m").micros == expected)
    }

    @Test("dates less than half a microsecond apart share a position")
    func subMicrosecondEquality() {
        let a = TimelinePosition(timestamp: Date(timeIntervalSince1970: 100.000_000_1), id: "m")
        let b = TimelinePosition(timestamp: Date(timeIntervalSince1970: 100.000_000_3), id: "m")
        #expect(a == b)
        #expect(a.micros == 100_000_000)
    }

    @Test("roundedToMicroseconds is idempotent and preserves the micros")
    func roundingIdempotent() {
        var generator = SeededGenerator(seed: 7)
        var dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_700_000_000.123456789),
                     Date(timeIntervalSince1970: 4_102_444_800.999_999_7), Date(timeIntervalSince1970: -86_400.000_000_5),
                     Date(timeIntervalSinceReferenceDate: 0.000_000_5)]
        for _ in 0..<2000 {
            dates.append(Date(timeIntervalSince1970: Double.random(in: 0..<4_102_444_800, using: &generator)))
        }
        for date in dates {
            let once = date.roundedToMicroseconds
            #expect(once.roundedToMicroseconds == once, "\(date.timeIntervalSince1970)")
            #expect(TimelinePosition.micros(once) == TimelinePosition.micros(date))
            #expect(abs(once.timeIntervalSince(date)) < 0.000_001)
        }
    }

    /// Up to 2096: beyond 2^32 seconds a Double holds a date only to about a microsecond.
    @Test("date(micros:) and micros(_:) are inverse")
    func microsRoundTrip() {
        var generator = SeededGenerator(seed: 11)
        var values: [Int64] = [0, 1, -1, 999_999, 1_700_000_000_123_457, 4_102_444_800_000_000]
        for _ in 0..<2000 { values.append(Int64.random(in: -1_000_000_000_000_000...4_000_000_000_000_000, using: &generator)) }
        for micros in values {
            #expect(TimelinePosition.micros(TimelinePosition.date(micros: micros)) == micros)
        }
    }

    @Test("a message's position is its timestamp and identifier")
    func messagePosition() {
        let message = Fixture.message("m1", at: 1.25)
        #expect(message.position == TimelinePosition(timestamp: Fixture.epoch.addingTimeInterval(1.25), id: "m1"))
        #expect(message.position.micros == 1_700_000_001_250_000)
    }

    @Test("JSON round trip")
    func codable() throws {
        let position = TimelinePosition(timestamp: t0, id: "m-9")
        let data = try JSONEncoder().encode(position)
        #expect(try JSONDecoder().decode(TimelinePosition.self, from: data) == position)
    }
}

@Suite("SwitchboardError")
struct SwitchboardErrorTests {
    private struct Boom: Error, CustomStringConvertible {
        var description: String { "boom happened" }
    }

    @Test("description is `code: message`, also for Foundation")
    func description() {
        let error = SwitchboardError(.editWindowExpired, "too late to edit m1")
        #expect(error.description == "editWindowExpired: too late to edit m1")
        #expect(error.errorDescription == "editWindowExpired: too late to edit m1")
        #expect("\(error)" == "editWindowExpired: too late to edit m1")
        #expect(!error.isRetryable, "not retryable by default")
        #expect(SwitchboardError(.transport, "x", retryable: true).isRetryable)
    }

    @Test("codes describe themselves by name", arguments: [
        (SwitchboardError.Code.emptyMessage, "emptyMessage"), (.contentTooLarge, "contentTooLarge"),
        (.unknownMessage, "unknownMessage"), (.unknownConversation, "unknownConversation"),
        (.editWindowExpired, "editWindowExpired"), (.deleteWindowExpired, "deleteWindowExpired"),
        (.notSupported, "notSupported"), (.alreadyPublished, "alreadyPublished"), (.refused, "refused"),
        (.transport, "transport"), (.storage, "storage"), (.corruptStore, "corruptStore"),
        (.invalidArgument, "invalidArgument"), (.notFound, "notFound"), (.unauthorized, "unauthorized"),
        (.cancelled, "cancelled"), (.notOwner, "notOwner"), (.conflict, "conflict"),
    ])
    func codeNames(code: SwitchboardError.Code, name: String) {
        #expect(code.description == name)
        #expect(SwitchboardError(code, "m").description == "\(name): m")
    }

    @Test("codes are distinct")
    func codesDistinct() {
        let codes: [SwitchboardError.Code] = [.emptyMessage, .contentTooLarge, .unknownMessage, .unknownConversation,
                                              .editWindowExpired, .deleteWindowExpired, .notSupported, .alreadyPublished,
                                              .refused, .transport, .storage, .corruptStore, .invalidArgument, .notFound,
                                              .unauthorized, .cancelled, .notOwner, .conflict, .forbidden, .internal]
        #expect(Set(codes).count == codes.count)
        #expect(SwitchboardError.Code.refused == .refused)
    }

    @Test("wrapping keeps a SwitchboardError exactly as it is", arguments: [
        SwitchboardError(.refused, "no", retryable: false),
        SwitchboardError(.transport, "timeout", retryable: true),
        SwitchboardError(.cancelled, "stop", retryable: false),
    ])
    func wrappingKeeps(error: SwitchboardError) {
        let wrapped = SwitchboardError.wrapping(error)
        #expect(wrapped == error)
        #expect(wrapped.isRetryable == error.isRetryable)
    }

    @Test("wrapping turns CancellationError into a retryable cancelled error")
    func wrappingCancellation() {
        let wrapped = SwitchboardError.wrapping(CancellationError())
        #expect(wrapped.code == .cancelled)
        #expect(wrapped.isRetryable)
    }

    @Test("wrapping turns an error nothing classified into a non-retryable internal error describing it")
    func wrappingOther() {
        let wrapped = SwitchboardError.wrapping(Boom())
        #expect(wrapped.code == .internal)
        #expect(!wrapped.isRetryable)
        #expect(wrapped.message == "boom happened")
        #expect(wrapped.description == "internal: boom happened")

        let decoding = SwitchboardError.wrapping(DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "bad")))
        #expect(decoding.code == .internal)
        #expect(!decoding.isRetryable)
        #expect(decoding.message.contains("bad"))
    }

    @Test("wrapping asks an error that classifies itself", arguments: [
        SwitchboardError(.transport, "reset", retryable: true, retryAfter: .seconds(3)),
        SwitchboardError(.storage, "disk full"),
    ])
    func wrappingConvertible(classification: SwitchboardError) {
        #expect(SwitchboardError.wrapping(SelfClassified(classification: classification)) == classification)
    }
}

/// An error that says what it means itself.
private struct SelfClassified: SwitchboardErrorConvertible {
    /// What it says.
    let classification: SwitchboardError
    var switchboardError: SwitchboardError { classification }
}
