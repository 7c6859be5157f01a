import CLibPQ
import Foundation
import SwitchboardCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private PostgreSQL 15 server in its own data directory, for tests and for `serve` without a database URL.
///
/// It listens on 127.0.0.1 only, with `trust` authentication (any local process may connect as any role,
/// `postgres` included), and by default with `fsync=off` (fast, but an operating-system crash or power loss can
/// lose or corrupt its data); `durable` keeps fsync on.
public final class PostgresCluster: Sendable {
    /// The directory holding the server's binaries.
    public static let binaryDirectory = URL(fileURLWithPath: "/usr/lib/postgresql/15/bin")

    private struct State {
        var port: Int?
        var running = false
    }

    /// The cluster's data directory.
    public let dataDirectory: URL
    /// The process whose exit stops the server (see `init`).
    public let owner: pid_t
    /// Whether the server syncs its writes to disk (`fsync=on`); when false it runs with `fsync=off`.
    public let durable: Bool
    private let state: Locked<State>
    /// Picks the port when none was given (a free one by default).
    private let choosePort: @Sendable () throws -> Int

    /// How often `start` tries a newly chosen port when another process took the chosen one before the server
    /// could bind it (the kernel hands the same ephemeral ports to outgoing connections).
    static let portAttempts = 5

    /// Describes a cluster in `dataDirectory` on `port`, or on a free port chosen at start when `nil`. Once
    /// started, the server stops when process `owner` (this one by default) ends, even when it is killed and
    /// cannot stop the server itself: a watchdog started with the server checks every second. With `durable` the
    /// server keeps fsync on (slower writes that survive an operating-system crash).
    public convenience init(dataDirectory: URL, port: Int? = nil, owner: pid_t = getpid(), durable: Bool = false) {
        self.init(dataDirectory: dataDirectory, port: port, owner: owner, durable: durable, choosingPortsWith: Self.freePort)
    }

    /// `init(dataDirectory:port:owner:durable:)` with the way a port is chosen when none is given (tests).
    init(dataDirectory: URL, port: Int?, owner: pid_t, durable: Bool = false,
         choosingPortsWith choosePort: @escaping @Sendable () throws -> Int) {
        self.dataDirectory = dataDirectory.standardizedFileURL
        self.owner = owner
        self.durable = durable
        self.state = Locked(State(port: port))
        self.choosePort = choosePort
    }

    deinit {
        try? stop()
    }

    /// Whether this object started the server and has not stopped it.
    public var isRunning: Bool { state.withLock { $0.running } }

    /// The connection URL of the running server, or `nil` when it is stopped.
    public var connectionURL: String? {
        state.withLock { state in
            guard state.running, let port = state.port else { return nil }
            return Self.url(port: port)
        }
    }

    /// Initialises the data directory when needed, starts the server and returns its connection URL.
    @discardableResult
    public func start() throws -> String {
        try state.withLock { state in
            if state.running, let port = state.port { return Self.url(port: port) }
            let runAsPostgres = geteuid() == 0
            try prepareDirectory(runAsPostgres: runAsPostgres)
            let requested = state.port
            let path = dataDirectory.path
            if let version = try? String(contentsOf: dataDirectory.appendingPathComponent("PG_VERSION"), encoding: .utf8) {
                let major = version.trimmingCharacters(in: .whitespacesAndNewlines)
                guard major == "15" else {
                    throw failure("data directory \(path) holds a PostgreSQL \(major) cluster and this runs PostgreSQL 15: "
                                  + "use another data directory (or upgrade that cluster with pg_upgrade)")
                }
            } else {
                try checkEmptyForInitdb()
                try run("initdb", ["-D", path, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C"],
                        asPostgres: runAsPostgres, step: "initdb")
            }
            if FileManager.default.fileExists(atPath: dataDirectory.appendingPathComponent("postmaster.pid").path) {
                // A previous owner was killed without stopping its server: stop that orphan before starting ours.
                try? run("pg_ctl", ["-D", path, "-m", "fast", "-w", "stop"], asPostgres: runAsPostgres, step: "pg_ctl stop (orphan)")
            }
            var attempt = 1
            var port = 0
            while true {
                port = try requested ?? choosePort()
                let logStart = logSize()
                do {
                    let options = "-c listen_addresses=127.0.0.1 -p \(port) -k \(path) -c fsync=\(durable ? "on" : "off")"
                    try run("pg_ctl", ["-D", path, "-o", options, "-w", "-l", logURL.path, "start"],
                            asPostgres: runAsPostgres, step: "pg_ctl start")
                    state.port = port
                    break
                } catch let error as PostgresError {
                    // A port chosen here and taken by someone else before the server bound it: choose again. A
                    // port the caller named is theirs to pick, so that failure stands.
                    guard requested == nil, attempt < Self.portAttempts,
                          logText(from: logStart).contains("Address already in use") else { throw error }
                    attempt += 1
                }
            }
            state.running = true
            try startWatchdog()
            return Self.url(port: port)
        }
    }

    /// Stops the server with a fast shutdown and waits for it; does nothing when it is not running.
    public func stop() throws {
        try state.withLock { state in
            guard state.running else { return }
            try run("pg_ctl", ["-D", dataDirectory.path, "-m", "fast", "-w", "stop"],
                    asPostgres: geteuid() == 0, step: "pg_ctl stop")
            state.running = false
        }
    }

    /// The server's process ID from `postmaster.pid` (its first line), or nil when the file is missing.
    public var serverProcess: pid_t? {
        guard let text = try? String(contentsOf: dataDirectory.appendingPathComponent("postmaster.pid"), encoding: .utf8),
              let line = text.split(separator: "\n").first else { return nil }
        return pid_t(line.trimmingCharacters(in: .whitespaces))
    }

    // MARK: - Private

    /// Starts a detached shell loop that waits while both `owner` and the server live, then, if the owner is gone
    /// and `postmaster.pid` still names the same server (not one started since), asks it for a fast shutdown
    /// (SIGINT). It exits on its own when the server stops first.
    private func startWatchdog() throws {
        guard let server = serverProcess else { throw failure("pg_ctl start left no postmaster.pid in \(dataDirectory.path)") }
        let script = """
            ( while [ -e /proc/$1 ] && [ -e /proc/$2 ]; do sleep 1; done
              if [ -e /proc/$2 ] && [ "$(head -n 1 "$3/postmaster.pid" 2>/dev/null)" = "$2" ]; then kill -INT "$2"; fi
            ) </dev/null >/dev/null 2>&1 &
            """
        try execute(URL(fileURLWithPath: "/bin/sh"),
                    ["-c", script, "switchboard-pg-watchdog", String(owner), String(server), dataDirectory.path],
                    step: "starting the cluster's watchdog")
    }

    private var logURL: URL { dataDirectory.appendingPathComponent("server.log") }

    private static func url(port: Int) -> String {
        "postgresql://postgres@127.0.0.1:\(port)/postgres"
    }

    /// Refuses, with what to do, a data directory that holds files but no cluster: initdb would fail on it.
    private func checkEmptyForInitdb() throws {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: dataDirectory.path)) ?? []
        guard entries.isEmpty else {
            throw failure("data directory \(dataDirectory.path) holds files (\(entries.sorted().prefix(3).joined(separator: ", "))"
                          + "\(entries.count > 3 ? ", ..." : "")) but no PostgreSQL cluster (no PG_VERSION), and initdb needs an "
                          + "empty directory: empty it or use another one")
        }
    }

    /// Refuses, with what to do, a data directory the `postgres` user cannot reach (a parent folder of mode 700
    /// owned by root, say): initdb would fail on it with a page of output and no hint.
    private func checkReachableByPostgres() throws {
        var ancestors: [String] = []
        var directory = dataDirectory
        while directory.path != "/" {
            ancestors.insert(directory.path, at: 0)
            directory = directory.deletingLastPathComponent()
        }
        // The first folder on the way that postgres may not enter (and, for the data directory, also write).
        let script = #"for d; do [ -x "$d" ] || { printf %s "$d"; exit 1; }; done; [ -w "$d" ] || { printf %s "$d"; exit 1; }"#
        let result = try spawn(URL(fileURLWithPath: "/usr/sbin/runuser"),
                               ["-u", "postgres", "--", "/bin/sh", "-c", script, "switchboard-pg-check"] + ancestors,
                               step: "checking the data directory")
        guard !(result.exited && result.code == 0) else { return }
        let blocked = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        var detail = ""
        var info = stat()
        if !blocked.isEmpty, stat(blocked, &info) == 0 {
            let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? String(info.st_uid)
            detail = " (mode \(String(info.st_mode & 0o777, radix: 8)), owner \(owner))"
        }
        throw failure("the postgres user, which runs initdb and the server because this process runs as root, cannot "
                      + "reach data directory \(dataDirectory.path): \(blocked.isEmpty ? "a folder on the way" : blocked)"
                      + "\(detail) does not let it through. Allow it (chmod o+x \(blocked.isEmpty ? "FOLDER" : blocked)) "
                      + "or use a data directory whose parent folders every user may enter")
    }

    private func prepareDirectory(runAsPostgres: Bool) throws {
        let initdb = Self.binaryDirectory.appendingPathComponent("initdb").path
        guard FileManager.default.isExecutableFile(atPath: initdb) else {
            throw failure("PostgreSQL 15 binaries not found at \(Self.binaryDirectory.path) (install postgresql-15)")
        }
        do {
            try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw failure("cannot create data directory \(dataDirectory.path): \(error)")
        }
        if runAsPostgres {
            guard getpwnam("postgres") != nil else {
                throw failure("running as root but there is no `postgres` user to run initdb and pg_ctl")
            }
            try execute(URL(fileURLWithPath: "/bin/chown"), ["-R", "postgres:postgres", dataDirectory.path],
                        step: "chown")
            try checkReachableByPostgres()
        } else if access(dataDirectory.path, W_OK) != 0 {
            throw failure("not root and data directory \(dataDirectory.path) is not writable; cannot run initdb")
        }
    }

    private func run(_ tool: String, _ arguments: [String], asPostgres: Bool, step: String) throws {
        let binary = Self.binaryDirectory.appendingPathComponent(tool).path
        if asPostgres {
            try execute(URL(fileURLWithPath: "/usr/sbin/runuser"), ["-u", "postgres", "--", binary] + arguments,
                        step: step)
        } else {
            try execute(URL(fileURLWithPath: binary), arguments, step: step)
        }
    }

    /// Runs a program by full path and throws, with the gist of its output, unless it exits with status 0.
    private func execute(_ executable: URL, _ arguments: [String], step: String) throws {
        let result = try spawn(executable, arguments, step: step)
        guard result.exited, result.code == 0 else {
            let how = result.exited ? "exited with status \(result.code)" : "was killed by signal \(result.code)"
            let log = FileManager.default.fileExists(atPath: logURL.path) ? "; server log: \(Self.tail(logTail()))" : ""
            throw failure("\(step) \(how): \(Self.gist(result.output))\(log)")
        }
    }

    /// Runs a program by full path with posix_spawn, waits for it with waitpid and returns how it ended (the exit
    /// status, or the signal when it did not exit) with what it wrote to standard output and error.
    ///
    /// Foundation's `Process` can miss the exit of `pg_ctl`, whose daemon outlives it, so it is not used here.
    private func spawn(_ executable: URL, _ arguments: [String], step: String) throws -> (exited: Bool, code: Int32, output: String) {
        let outputPath = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-pg-\(UUID().uuidString).out").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of ours reaches the child: `pg_ctl start` leaves a daemon behind that would otherwise hold,
        // for as long as it runs, whatever descriptors were open here at that moment — another thread's pipe or
        // Foundation's exit-watch socket for a child it just launched, whose end then never comes.
        posix_spawn_file_actions_addclosefrom_np(&actions, 3)
        let argv: [UnsafeMutablePointer<CChar>?] = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, executable.path, &actions, nil, argv, environ)
        guard spawned == 0 else {
            throw failure("\(step): cannot launch \(executable.path): errno \(spawned)")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw failure("\(step): waitpid failed: errno \(errno)") }
        }
        let exited = (status & 0x7f) == 0
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return (exited, exited ? (status >> 8) & 0xff : status & 0x7f, text)
    }

    /// The lines of a tool's output that say what went wrong (`initdb: error: ...`, its hints, `FATAL: ...`), or
    /// its last lines when none does.
    static func gist(_ text: String) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        let telling = lines.filter { line in
            ["error:", "hint:", "FATAL:", "ERROR:", "HINT:", "DETAIL:"].contains { line.contains($0) }
        }
        return telling.isEmpty ? tail(text) : telling.joined(separator: " | ")
    }

    /// The server log's size in bytes (0 when there is none yet).
    private func logSize() -> UInt64 {
        ((try? FileManager.default.attributesOfItem(atPath: logURL.path))?[.size] as? NSNumber)?.uint64Value ?? 0
    }

    /// What the server log holds from byte `offset` on.
    private func logText(from offset: UInt64) -> String {
        guard let handle = try? FileHandle(forReadingFrom: logURL) else { return "" }
        defer { try? handle.close() }
        try? handle.seek(toOffset: offset)
        return String(decoding: (try? handle.readToEnd()) ?? Data(), as: UTF8.self)
    }

    private func logTail() -> String {
        (try? String(contentsOf: logURL, encoding: .utf8)) ?? "(no server log)"
    }

    private static func tail(_ text: String, lines: Int = 15) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines).joined(separator: " | ")
    }

    private func failure(_ message: String) -> PostgresError {
        PostgresError(code: .clusterFailed, message: message)
    }

    /// Binds a socket to 127.0.0.1:0, reads the port the kernel chose and closes it.
    private static func freePort() throws -> Int {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else {
            throw PostgresError(code: .clusterFailed, message: "cannot open a socket to find a free port")
        }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        guard bound == 0 else {
            throw PostgresError(code: .clusterFailed, message: "cannot bind 127.0.0.1:0 to find a free port")
        }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else {
            throw PostgresError(code: .clusterFailed, message: "cannot read the port bound to find a free port")
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
