import Foundation
import SwitchboardCore

/// The built `switchboard` command, found next to the test bundle.
public enum SwitchboardExecutable {
    /// The executable's URL, or a `notFound` error listing where it looked.
    public static func locate() throws -> URL {
        var starts = [Bundle.main.bundleURL, Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])]
            .compactMap { $0 }
        starts += Bundle.allBundles.map(\.bundleURL)
        var searched: [String] = []
        for start in starts {
            var directory = start.standardizedFileURL
            for _ in 0..<6 {
                let candidate = directory.appendingPathComponent("switchboard")
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), !isDirectory.boolValue,
                   FileManager.default.isExecutableFile(atPath: candidate.path) {
                    return candidate
                }
                searched.append(directory.path)
                directory = directory.deletingLastPathComponent()
            }
        }
        throw SwitchboardError(.notFound, """
            the switchboard executable was not found next to the test bundle (searched \(Set(searched).sorted())); \
            build it with `swift build --build-tests` before running the crash tests
            """)
    }
}
