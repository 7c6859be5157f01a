import Foundation

/// Renders a `BenchReport` as a table or JSON.
public enum BenchFormat {
    /// A number with at most three significant decimals and thousands kept readable (`12345.6` → `12346`).
    public static func number(_ value: Double) -> String {
        guard value.isFinite else { return "\(value)" }
        let magnitude = abs(value)
        if magnitude >= 1000 { return String(format: "%.0f", value) }
        if magnitude >= 100 { return String(format: "%.1f", value) }
        if magnitude >= 1 { return String(format: "%.2f", value) }
        if magnitude == 0 { return "0" }
        return String(format: "%.4f", value)
    }

    /// The report as an aligned plain-text table with the header lines and notes.
    public static func table(_ report: BenchReport) -> String {
        var lines: [String] = []
        lines.append("command: \(report.command)")
        lines.append("date:    \(iso8601(report.date))")
        lines.append("machine: \(report.machine.cores) cores, \(report.machine.cpu)")
        lines.append("")
        let header = ["scenario", "figure", "unit", "median", "min", "max", "baseline", "base median", "ratio", "goal", "met"]
        var rows = [header]
        for figure in report.figures {
            rows.append([
                figure.scenario, figure.figure, figure.unit, number(figure.summary.median), number(figure.summary.min),
                number(figure.summary.max), figure.baseline?.name ?? "—",
                figure.baseline.map { number($0.summary.median) } ?? "—",
                figure.ratio.map { number($0) + "×" } ?? "—", figure.goal.text(unit: figure.unit),
                figure.met.map { $0 ? "yes" : "NO" } ?? "—",
            ])
        }
        var widths = [Int](repeating: 0, count: header.count)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        for (number, row) in rows.enumerated() {
            let cells = row.enumerated().map { index, cell in cell.padding(toLength: widths[index], withPad: " ", startingAt: 0) }
            lines.append(cells.joined(separator: "  ").trimmingCharacters(in: .whitespaces))
            if number == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        let figureNotes = report.figures.compactMap { figure in figure.note.map { "\(figure.scenario) / \(figure.figure): \($0)" } }
        if !figureNotes.isEmpty || !report.notes.isEmpty {
            lines.append("")
            lines.append("notes:")
            for note in report.notes + figureNotes { lines.append("  - \(note)") }
        }
        if !report.notBuilt.isEmpty {
            lines.append("")
            lines.append("not built yet: \(report.notBuilt.joined(separator: ", "))")
        }
        return lines.joined(separator: "\n")
    }

    /// The report as one JSON object: command, date, machine, notes, notBuilt and a `results` array of figures.
    public static func json(_ report: BenchReport) -> String {
        let results: [Any] = report.figures.map { figure -> [String: Any] in
            var object: [String: Any] = [
                "scenario": figure.scenario, "figure": figure.figure, "unit": figure.unit,
                "median": figure.summary.median, "min": figure.summary.min, "max": figure.summary.max,
                "goal": figure.goal.text(unit: figure.unit),
            ]
            if let baseline = figure.baseline {
                object["baseline"] = ["name": baseline.name, "unit": baseline.unit, "median": baseline.summary.median,
                                      "min": baseline.summary.min, "max": baseline.summary.max] as [String: Any]
            } else {
                object["baseline"] = NSNull()
            }
            object["ratio"] = figure.ratio.map { $0 as Any } ?? NSNull()
            object["met"] = figure.met.map { $0 as Any } ?? NSNull()
            if let note = figure.note { object["note"] = note }
            return object
        }
        let top: [String: Any] = [
            "command": report.command, "date": iso8601(report.date),
            "machine": ["cores": report.machine.cores, "cpu": report.machine.cpu] as [String: Any],
            "notes": report.notes, "notBuilt": report.notBuilt, "results": results,
        ]
        let data = (try? JSONSerialization.data(withJSONObject: top, options: [.prettyPrinted, .sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// A date as ISO 8601 in UTC.
    static func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601)
    }
}
