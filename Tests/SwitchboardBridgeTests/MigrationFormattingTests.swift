import Foundation
import SwitchboardBridge
import SwitchboardCore
import Testing

/// The migration's progress and report texts.
@Suite("Migration progress and report formatting")
struct MigrationFormattingTests {
    @Test("the bar shows count, percentage, rate and ETA; the plain line the same in words")
    func progressLines() {
        let progress = MigrationProgress(processed: 4_200, total: 10_000, copied: 4_000, alreadyPresent: 200, skippedDeleted: 0,
                                         elapsed: 4, processedThisRun: 4_000)
        let bar = progress.barLine(width: 10)
        #expect(bar == "[####------]  4,200/10,000   42%  1,000 msg/s  ETA 0:06", "\(bar)")
        #expect(progress.plainLine == "migrated 4,200 of 10,000 (42%): 4000 copied, 200 already present, 0 skipped, 1000 msg/s, ETA 0:06")
        let unknown = MigrationProgress(processed: 7, total: nil, copied: 7, alreadyPresent: 0, skippedDeleted: 0, elapsed: 0,
                                        processedThisRun: 7)
        #expect(unknown.barLine() == "7  0 msg/s  ETA --:--")
    }

    @Test("the report lists every count and says how to resume when not completed; JSON carries the same")
    func reportLines() throws {
        let report = MigrationReport(status: .interrupted, copied: 10, alreadyPresent: 5, skippedDeleted: 1, failed: 0, total: 100,
                                     duration: 2, copyDuration: 1, error: nil)
        let text = report.summaryLines.joined(separator: "\n")
        #expect(text.contains("migration interrupted") && text.contains("copied:          10") && text.contains("re-run"))
        let json = try #require(JSONValue.parseOrNil(Data(report.json.serialized.utf8)))
        #expect(json["status"]?.stringValue == "interrupted" && json["copied"]?.intValue == 10 && json["alreadyPresent"]?.intValue == 5)
        #expect(json["rate"]?.intValue == 10 || json["rate"]?.stringValue == nil)
    }
}
