import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The machine's busy CPU time from `/proc/stat` (all processes, all cores: user, nice, system, irq, softirq), so
/// a phase's cost can be stated as CPU time per message whatever its wall-clock rate; nil where not readable.
enum MachineCPU {
    /// Busy CPU-seconds since boot, or nil when `/proc/stat` cannot be read.
    static func busySeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = text.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard fields.count >= 7 else { return nil }
        // user nice system idle iowait irq softirq …: idle and iowait are not busy.
        let busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
        #if canImport(Glibc)
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        #else
        let ticks = 100.0
        #endif
        return busy / (ticks > 0 ? ticks : 100)
    }

    /// A mark to measure from.
    struct Mark {
        private let start = MachineCPU.busySeconds()

        /// Busy CPU microseconds since the mark per `count` items, or nil when unreadable.
        func microseconds(per count: Int) -> Double? {
            guard let start, let end = MachineCPU.busySeconds(), count > 0 else { return nil }
            return (end - start) / Double(count) * 1_000_000
        }
    }
}
