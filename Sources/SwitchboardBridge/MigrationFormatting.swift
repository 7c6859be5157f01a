import Foundation
import SwitchboardCore

extension MigrationProgress {
    /// A terminal progress bar: `[#####-----]  4,200/10,000  42%  1,234 msg/s  ETA 0:05` (no line feed).
    public func barLine(width: Int = 30) -> String {
        let count = total.map { "\(MigrationFormat.number(processed))/\(MigrationFormat.number($0))" }
            ?? MigrationFormat.number(processed)
        var parts: [String] = []
        if let fraction {
            let filled = Int((fraction * Double(width)).rounded(.down))
            parts.append("[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]")
            parts.append(count)
            parts.append(String(format: "%3d%%", Int((fraction * 100).rounded(.down))))
        } else {
            parts.append(count)
        }
        parts.append("\(MigrationFormat.number(Int(rate.rounded()))) msg/s")
        parts.append("ETA " + (eta.map(MigrationFormat.clock) ?? "--:--"))
        return parts.joined(separator: "  ")
    }

    /// One plain progress line for logs and pipes.
    public var plainLine: String {
        var text = "migrated \(MigrationFormat.number(processed))"
        if let total { text += " of \(MigrationFormat.number(total))" }
        if let fraction { text += " (\(Int((fraction * 100).rounded(.down)))%)" }
        text += ": \(copied) copied, \(alreadyPresent) already present, \(skippedDeleted) skipped"
        if notCopied > 0 { text += ", \(notCopied) not copied" }
        text += String(format: ", %.0f msg/s", rate)
        if let eta { text += ", ETA \(MigrationFormat.clock(eta))" }
        return text
    }
}

extension MigrationReport {
    /// The human-readable final report.
    public var summaryLines: [String] {
        var lines = ["migration \(status.rawValue)"]
        if let total { lines.append("  source messages: \(MigrationFormat.number(total))") }
        lines.append("  copied:          \(MigrationFormat.number(copied))")
        lines.append("  already present: \(MigrationFormat.number(alreadyPresent))")
        lines.append("  skipped deleted: \(MigrationFormat.number(skippedDeleted))")
        let notCopied = notCarried.filter(\.reason.isNotCopied).count
        lines.append("  not copied:      \(MigrationFormat.number(notCopied))")
        lines.append("  failed:          \(MigrationFormat.number(failed))")
        lines.append(String(format: "  duration:        %.1f s (copying %.1f s)", duration, copyDuration))
        lines.append(String(format: "  rate:            %.0f msg/s", rate))
        if let error { lines.append("  error: \(error)") }
        if !notCarried.isEmpty {
            lines.append("  not carried as they are (\(MigrationFormat.number(notCarried.count))):")
            for item in notCarried { lines.append("    \(item.sourceRemoteID) (\(item.id)): \(item.reason.text)") }
        }
        if status == .failed, errorIsPermanent {
            lines.append("  no retry can fix this error: fix what it names (the account, its access, the conversation "
                         + "or the store), then re-run the same command to resume from the last checkpoint")
        } else if status != .completed {
            lines.append("  re-run the same command to resume from the last checkpoint")
        }
        return lines
    }

    /// The report as JSON.
    public var json: JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            ("status", .string(status.rawValue)), ("copied", .int(Int64(copied))),
            ("alreadyPresent", .int(Int64(alreadyPresent))), ("skippedDeleted", .int(Int64(skippedDeleted))),
            ("failed", .int(Int64(failed))), ("durationSeconds", .double(duration)),
            ("copySeconds", .double(copyDuration)), ("rate", .double(rate)),
        ]
        members.append(("total", total.map { .int(Int64($0)) } ?? .null))
        members.append(("error", error.map(JSONValue.string) ?? .null))
        members.append(("errorIsPermanent", .bool(errorIsPermanent)))
        members.append(("notCarried", NotCarried.json(notCarried)))
        return .object(members)
    }
}

extension MigrationPlan {
    /// The human-readable plan.
    public var summaryLines: [String] {
        var lines = ["migration plan (dry run: nothing was written or copied)"]
        if resumes { lines.append("  an earlier run's checkpoint is kept: the copy resumes after it") }
        lines.append("  to copy:         \(MigrationFormat.number(toCopy))")
        lines.append("  already present: \(MigrationFormat.number(alreadyPresent))")
        if !notCarried.isEmpty {
            lines.append("  not carried as they are (\(MigrationFormat.number(notCarried.count))):")
            for item in notCarried { lines.append("    \(item.sourceRemoteID) (\(item.id)): \(item.reason.text)") }
        }
        lines.append("  a message the target refuses shows only when copying (it is listed in the report then)")
        return lines
    }

    /// The plan as JSON.
    public var json: JSONValue {
        .object([
            ("toCopy", .int(Int64(toCopy))), ("alreadyPresent", .int(Int64(alreadyPresent))), ("resumes", .bool(resumes)),
            ("notCarried", NotCarried.json(notCarried)),
        ])
    }
}

extension NotCarried {
    /// A list of entries as JSON.
    static func json(_ entries: [NotCarried]) -> JSONValue {
        .array(entries.map { item in
            .object([("id", .string(item.id.rawValue)), ("sourceRemoteID", .string(item.sourceRemoteID.rawValue)),
                     ("reason", .string(item.reason.name)), ("detail", .string(item.reason.text))])
        })
    }
}

extension MigrationVerification {
    /// The human-readable verification report.
    public var summaryLines: [String] {
        var lines = ["verification \(isClean ? "clean" : "found differences")"]
        lines.append("  source: \(MigrationFormat.number(sourceMessages)) live, \(MigrationFormat.number(sourceDeleted)) deleted; "
                     + "target: \(MigrationFormat.number(targetMessages)) live; matched: \(MigrationFormat.number(matched))")
        lines.append("  missing on target: \(missingCount)")
        for message in missing {
            lines.append("    \(message.idempotencyKey?.rawValue ?? message.remoteID.rawValue) (source \(message.remoteID)): "
                         + MigrationFormat.quote(message.text))
        }
        lines.append("  extra on target: \(extraCount)")
        for item in extra {
            lines.append("    \(item.targetRemoteID) (\(item.reason)): \(MigrationFormat.quote(item.text))")
        }
        lines.append("  mismatches: \(mismatchCount)")
        for item in mismatches {
            lines.append("    \(item.id) \(item.field): source \(MigrationFormat.quote(item.expected)), "
                         + "target \(MigrationFormat.quote(item.found)) (target \(item.targetRemoteID))")
        }
        return lines
    }

    /// The verification as JSON.
    public var json: JSONValue {
        .object([
            ("clean", .bool(isClean)), ("sourceMessages", .int(Int64(sourceMessages))),
            ("sourceDeleted", .int(Int64(sourceDeleted))), ("targetMessages", .int(Int64(targetMessages))),
            ("matched", .int(Int64(matched))), ("missingCount", .int(Int64(missingCount))),
            ("missing", .array(missing.map { message in
                .object([("id", .string(message.idempotencyKey?.rawValue ?? "")), ("sourceRemoteID", .string(message.remoteID.rawValue)),
                         ("text", .string(message.text))])
            })),
            ("extraCount", .int(Int64(extraCount))),
            ("extra", .array(extra.map { item in
                .object([("targetRemoteID", .string(item.targetRemoteID.rawValue)), ("key", item.key.map { .string($0.rawValue) } ?? .null),
                         ("reason", .string(item.reason)), ("text", .string(item.text))])
            })),
            ("mismatchCount", .int(Int64(mismatchCount))),
            ("mismatches", .array(mismatches.map { item in
                .object([("id", .string(item.id.rawValue)), ("sourceRemoteID", .string(item.sourceRemoteID.rawValue)),
                         ("targetRemoteID", .string(item.targetRemoteID.rawValue)), ("field", .string(item.field)),
                         ("expected", .string(item.expected)), ("found", .string(item.found))])
            })),
        ])
    }
}

/// Number, time and text formatting for migration output.
enum MigrationFormat {
    /// `10000` → `10,000`.
    static func number(_ value: Int) -> String {
        let digits = String(abs(value))
        var grouped = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { grouped.append(",") }
            grouped.append(character)
        }
        return value < 0 ? "-" + grouped : grouped
    }

    /// Seconds as `m:ss` or `h:mm:ss`.
    static func clock(_ seconds: TimeInterval) -> String {
        let total = Int(seconds.rounded(.up))
        let (hours, minutes, rest) = (total / 3600, (total % 3600) / 60, total % 60)
        return hours > 0 ? String(format: "%d:%02d:%02d", hours, minutes, rest) : String(format: "%d:%02d", minutes, rest)
    }

    /// Text quoted and cut to 60 characters for a report line.
    static func quote(_ text: String) -> String {
        let cut = text.count > 60 ? String(text.prefix(57)) + "..." : text
        return "\"" + cut.replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
