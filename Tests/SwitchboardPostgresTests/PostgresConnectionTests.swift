import Foundation
import SwitchboardCore
@testable import SwitchboardPostgres
import Testing
import TestSupport

private struct Boom: Error {}

@Suite("PostgreSQL client", .serialized, .postgresCluster)
struct PostgresConnectionTests {
    private func connect() throws -> PostgresConnection {
        try PostgresConnection(url: try PostgresTestCluster.required().url)
    }

    @Test("connects and answers a query")
    func connects() throws {
        let connection = try connect()
        let result = try connection.query("SELECT 1 AS one, current_database() AS db")
        #expect(result.columns == ["one", "db"])
        #expect(result.rows == [["1", "postgres"]])
    }

    @Test("bound parameters round-trip verbatim, including NULL, unicode, quotes and injection text")
    func parametersRoundTrip() throws {
        let connection = try connect()
        try connection.execute("CREATE TABLE params_rt (id serial PRIMARY KEY, body text)")
        let values: [String?] = [nil, "héllo wörld 🚀 日本語", "it's \"quoted\" \\ back", "'; DROP TABLE params_rt; --", ""]
        for value in values {
            let inserted = try connection.query("INSERT INTO params_rt (body) VALUES ($1)", [value])
            #expect(inserted.affectedRows == 1)
        }
        let result = try connection.query("SELECT body FROM params_rt ORDER BY id")
        #expect(result.rows.map { $0[0] } == values)
        #expect(result.affectedRows == values.count)
        let match = try connection.query("SELECT count(*) AS n FROM params_rt WHERE body = $1", ["'; DROP TABLE params_rt; --"])
        #expect(match.value(row: 0, column: "n") == "1")
        let updated = try connection.query("UPDATE params_rt SET body = $1 WHERE body IS NULL OR body = $2", ["x", ""])
        #expect(updated.affectedRows == 2)
    }

    @Test("a parameter holding NUL is refused whole (22021, invalid argument), never cut short at the NUL")
    func nulParameterRefused() throws {
        let connection = try connect()
        try connection.execute("CREATE TABLE params_nul (body text)")
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO params_nul VALUES ($1), ($2)", ["fine", "a\u{0}b"])
        }
        #expect(error.sqlState == "22021")
        #expect(error.message.contains("$2"))
        #expect(!error.message.contains("a\u{0}b"), "the value stays out of the error")
        #expect(error.switchboardError.code == .invalidArgument)
        #expect(!error.switchboardError.isRetryable)
        #expect(try connection.query("SELECT count(*) FROM params_nul").rows == [["0"]], "nothing stored, not even `a`")
    }

    @Test("unique violation carries SQLSTATE 23505 with detail")
    func uniqueViolation() throws {
        let connection = try connect()
        try connection.execute("CREATE TABLE unique_rt (name text UNIQUE)")
        try connection.query("INSERT INTO unique_rt VALUES ($1)", ["a"])
        let error = try #require(throws: PostgresError.self) {
            try connection.query("INSERT INTO unique_rt VALUES ($1)", ["a"])
        }
        #expect(error.code == .queryFailed)
        #expect(error.sqlState == "23505")
        #expect(error.detail?.contains("already exists") == true)
        #expect(try connection.query("SELECT 1").rows == [["1"]])
    }

    @Test("syntax error carries SQLSTATE 42601")
    func syntaxError() throws {
        let connection = try connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("SELEKT nothing")
        }
        #expect(error.sqlState == "42601")
        #expect(error.message.contains("syntax error"))
    }

    @Test("transaction commits, and rolls back and rethrows the first error on throw")
    func transactionRollback() throws {
        let connection = try connect()
        try connection.execute("CREATE TABLE tx_rt (v text)")
        let value = try connection.transaction { conn in
            try conn.query("INSERT INTO tx_rt VALUES ($1)", ["kept"])
            return 42
        }
        #expect(value == 42)
        #expect(throws: Boom.self) {
            try connection.transaction { conn in
                try conn.query("INSERT INTO tx_rt VALUES ($1)", ["dropped"])
                throw Boom()
            }
        }
        let sqlError = try #require(throws: PostgresError.self) {
            try connection.transaction { conn in
                try conn.query("INSERT INTO tx_rt VALUES ($1)", ["dropped too"])
                try conn.execute("SELEKT")
            }
        }
        #expect(sqlError.sqlState == "42601")
        #expect(try connection.query("SELECT v FROM tx_rt").rows == [["kept"]])
    }

    @Test("LISTEN receives a pg_notify payload from another connection, including a 7000-byte one")
    func listenNotify() throws {
        let listener = try connect()
        let sender = try connect()
        try listener.listen(channel: "switchboard events")
        #expect(try listener.notifications(timeout: .milliseconds(50)).isEmpty)

        try sender.query("SELECT pg_notify($1, $2)", ["switchboard events", "hello 'world' ✓"])
        let first = try listener.notifications(timeout: .seconds(5))
        #expect(first.map(\.channel) == ["switchboard events"])
        #expect(first.map(\.payload) == ["hello 'world' ✓"])

        let large = String(repeating: "0123456789abcdef", count: 437) + "end!"
        #expect(large.utf8.count == 6996)
        try sender.notify(channel: "switchboard events", payload: large)
        let second = try listener.notifications(timeout: .seconds(5))
        #expect(second.map(\.payload) == [large])
    }

    @Test("a failed connection's error never shows the password or the URL")
    func connectionErrorHidesPassword() throws {
        let base = try PostgresTestCluster.required().url
        let url = base.replacingOccurrences(of: "/postgres", with: "/no_such_db_here") + "?password=s3cret"
        #expect(url.contains("s3cret"))
        let error = try #require(throws: PostgresError.self) {
            _ = try PostgresConnection(url: url)
        }
        #expect(error.code == .connectionFailed)
        #expect(error.message.contains("no_such_db_here"))
        for text in [error.description, error.message, String(describing: error), "\(error)"] {
            #expect(!text.contains("s3cret"))
            #expect(!text.contains("password="))
        }
    }
}

@Suite("PostgreSQL cluster")
struct PostgresClusterTests {
    @Test("the server stops by itself when its owner process ends without stopping it (a killed test or server)")
    func stopsWhenOwnerEnds() async throws {
        let root = try PostgresTestCluster.makeTemporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let owner = Process()
        owner.executableURL = URL(fileURLWithPath: "/bin/sleep")
        owner.arguments = ["60"]
        try owner.run()
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("data"), owner: owner.processIdentifier)
        defer { try? cluster.stop() }
        let url = try await offCooperativePool { try cluster.start() }
        let server = try #require(cluster.serverProcess)
        try await Task.sleep(for: .seconds(1.5))
        #expect(FileManager.default.fileExists(atPath: "/proc/\(server)"), "the server runs while its owner lives")
        #expect(try PostgresConnection(url: url).query("SELECT 1").rows == [["1"]])
        kill(owner.processIdentifier, SIGKILL)
        owner.waitUntilExit()
        let deadline = TestTime.deadline(after: .seconds(10))
        while FileManager.default.fileExists(atPath: "/proc/\(server)"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!FileManager.default.fileExists(atPath: "/proc/\(server)"), "the server outlived its owner")
        #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
    }

    @Test("the server holds none of our descriptors: a pipe open while it starts still ends when we close it")
    func serverInheritsNoDescriptors() async throws {
        let root = try PostgresTestCluster.makeTemporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        // As a Foundation child's stdout or exit-watch socket would be, open (without close-on-exec) while
        // `pg_ctl start` runs; the daemon it leaves behind must not keep it open.
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("data"))
        defer { try? cluster.stop() }
        _ = try await offCooperativePool { try cluster.start() }
        let server = try #require(cluster.serverProcess)
        close(ends[1])
        let held = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(server)/fd").compactMap { Int32($0) }
            .filter { $0 > 2 }
            .compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(server)/fd/\($0)") }
        let ours = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(ends[0])")
        #expect(!held.contains(ours), "the server holds our pipe (\(ours)) among \(held)")
        var flags = fcntl(ends[0], F_GETFL)
        flags |= O_NONBLOCK
        _ = fcntl(ends[0], F_SETFL, flags)
        var byte: UInt8 = 0
        #expect(read(ends[0], &byte, 1) == 0, "end of file once our only write end is closed")
        try await offCooperativePool { try cluster.stop() }
    }

    @Test("stop and start twice keeps data; stop is idempotent")
    func stopStartTwice() async throws {
        let root = try PostgresTestCluster.makeTemporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("data"))
        defer { try? cluster.stop() }
        // Starting and stopping wait on initdb and pg_ctl: off the cooperative pool, which the other tests share.
        let url = try await offCooperativePool { try cluster.start() }
        #expect(try await offCooperativePool { try cluster.start() } == url)
        try PostgresConnection(url: url).execute("CREATE TABLE survives (v int); INSERT INTO survives VALUES (7)")
        for _ in 0..<2 {
            try await offCooperativePool {
                try cluster.stop()
                try cluster.stop()
            }
            #expect(!cluster.isRunning)
            #expect(throws: PostgresError.self) { try PostgresConnection(url: url) }
            let again = try await offCooperativePool { try cluster.start() }
            #expect(again == url)
            #expect(try PostgresConnection(url: again).query("SELECT v FROM survives").rows == [["7"]])
        }
        try await offCooperativePool { try cluster.stop() }
    }

    @Test("a chosen port taken before the server binds it is chosen again; a port the caller named is not")
    func takenPortIsChosenAgain() async throws {
        let holder = try PortHolder()
        defer { holder.close() }
        let root = try PostgresTestCluster.makeTemporaryRoot()
        defer { try? FileManager.default.removeItem(at: root) }

        // The first choice is the held port (as when an outgoing connection took it after it was chosen).
        let choices = Locked(0)
        let cluster = PostgresCluster(dataDirectory: root.appendingPathComponent("data"), port: nil, owner: getpid(),
                                      choosingPortsWith: {
            let first = choices.withLock { count -> Bool in
                count += 1
                return count == 1
            }
            return first ? holder.port : try PortHolder.freePort()
        })
        // Starting waits on initdb and pg_ctl: off the cooperative pool, which the other tests share.
        let url = try await offCooperativePool { try cluster.start() }
        defer { try? cluster.stop() }
        #expect(choices.withLock { $0 } == 2, "the cluster chose \(choices.withLock { $0 }) ports")
        #expect(!url.contains(":\(holder.port)/"), "started on the held port: \(url)")
        let connection = try PostgresConnection(url: url)
        #expect(try connection.query("SELECT 1").rows == [["1"]])
        connection.close()
        try await offCooperativePool { try cluster.stop() }

        // Named by the caller: the failure is reported, naming the cause.
        let named = PostgresCluster(dataDirectory: root.appendingPathComponent("data"), port: holder.port)
        let refused = try await offCooperativePool { () -> String? in
            do {
                try named.start()
                try? named.stop()
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(refused?.contains("Address already in use") == true, "\(refused ?? "started on a port held by another socket")")
    }
}

/// A TCP socket listening on a kernel-chosen port of 127.0.0.1, so nothing else can bind it.
private final class PortHolder: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw -> Bool in
                bind(descriptor, raw, length) == 0 && listen(descriptor, 1) == 0 && getsockname(descriptor, raw, &length) == 0
            }
        }
        guard descriptor >= 0, bound else {
            if descriptor >= 0 { _ = Glibc.close(descriptor) }
            throw PostgresError(code: .clusterFailed, message: "cannot hold a port for the test")
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// A port free at the moment of asking (bound, read and released).
    static func freePort() throws -> Int {
        let holder = try PortHolder()
        defer { holder.close() }
        return holder.port
    }

    func close() { _ = Glibc.close(descriptor) }
}
