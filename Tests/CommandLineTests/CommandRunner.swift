import Foundation
import TestSupport

/// Runs the built `switchboard` command as a child process, as a user types it.
enum SwitchboardCommand {
    /// Runs `switchboard` with `arguments` (and `environment` on top of ours) to completion, at most `timeout`.
    static func run(_ arguments: [String], environment: [String: String] = [:],
                    timeout: Duration = .seconds(60)) async throws -> ProcessResult {
        try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments, environment: environment,
                                           timeout: timeout)
    }

    /// Runs `switchboard` with `arguments`, which must succeed, and returns its standard output's single line.
    static func line(_ arguments: [String], environment: [String: String] = [:]) async throws -> String {
        let result = try await run(arguments, environment: environment)
        guard result.status == 0 else {
            throw TestSetupError("switchboard \(arguments.prefix(3).joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        let lines = result.stdout.split(separator: "\n")
        guard lines.count == 1 else { throw TestSetupError("expected one line, got: \(result.stdout)") }
        return String(lines[0])
    }
}

/// A fresh folder under /tmp that other users can traverse (a private PostgreSQL cluster runs as `postgres`).
func makeTemporaryFolder(_ prefix: String) throws -> URL {
    let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8).lowercased())")
    try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
    return root
}
