import Foundation
import SwitchboardCore
import Testing

/// `Logger`: what reaches a handler, at which level, with which metadata, and never a secret.
@Suite("Logger")
struct LoggerTests {
    /// Counts how often a message or metadata autoclosure ran.
    final class Evaluations {
        var count = 0
        func message(_ text: String) -> String {
            count += 1
            return text
        }
        func metadata(_ metadata: Logger.Metadata) -> Logger.Metadata {
            count += 1
            return metadata
        }
    }

    @Test("records below the level are dropped without building their message or metadata")
    func levelFiltering() {
        let collected = CollectingLogHandler()
        let logger = collected.logger(label: "engine", level: .warning)
        let evaluations = Evaluations()
        logger.trace(evaluations.message("trace"), metadata: evaluations.metadata(["a": "1"]))
        logger.debug(evaluations.message("debug"), metadata: evaluations.metadata(["a": "1"]))
        logger.info(evaluations.message("info"))
        logger.notice(evaluations.message("notice"))
        #expect(evaluations.count == 0, "a disabled level built its message")
        logger.warning(evaluations.message("warning"))
        logger.error(evaluations.message("error"), metadata: evaluations.metadata(["a": "1"]))
        logger.critical(evaluations.message("critical"))
        #expect(evaluations.count == 4)
        #expect(collected.records.map(\.level) == [.warning, .error, .critical])
        #expect(collected.messages == ["warning", "error", "critical"])
        #expect(!logger.isLogging(.notice) && logger.isLogging(.warning))
    }

    @Test("the default handler drops everything and nothing is built for it")
    func noOpDefault() {
        let logger = Logger(label: "bridge", logLevel: .trace)
        let evaluations = Evaluations()
        logger.critical(evaluations.message("dropped"), metadata: evaluations.metadata(["a": "1"]))
        #expect(evaluations.count == 0)
        #expect(!logger.isLogging(.critical))
    }

    @Test("each level's method logs at that level", arguments: LogLevel.allCases)
    func levelMethods(level: LogLevel) {
        let collected = CollectingLogHandler()
        let logger = collected.logger(label: "x")
        switch level {
        case .trace: logger.trace("m")
        case .debug: logger.debug("m")
        case .info: logger.info("m")
        case .notice: logger.notice("m")
        case .warning: logger.warning("m")
        case .error: logger.error("m")
        case .critical: logger.critical("m")
        }
        #expect(collected.records == [LogRecord(level: level, label: "x", message: "m")])
    }

    @Test("a record's metadata is merged over the logger's; a relabelled logger keeps level, handler and metadata")
    func metadataMerge() {
        let collected = CollectingLogHandler()
        var logger = collected.logger(label: "bridge", level: .info)
        logger[metadataKey: "worker"] = "bridge-1"
        logger[metadataKey: "attempt"] = "1"
        let pair = logger.labeled("pair general")
        pair.warning("retrying", metadata: ["attempt": "2", "delay": "\(0.4)s"])
        pair.debug("dropped")
        logger.info("plain")
        #expect(collected.records == [
            LogRecord(level: .warning, label: "pair general", message: "retrying",
                      metadata: ["worker": "bridge-1", "attempt": "2", "delay": "0.4s"]),
            LogRecord(level: .info, label: "bridge", message: "plain", metadata: ["worker": "bridge-1", "attempt": "1"]),
        ])
        #expect(logger[metadataKey: "worker"] == .string("bridge-1"))
    }

    @Test("secrets never reach a handler through metadata, whoever set them")
    func redaction() {
        let collected = CollectingLogHandler()
        var logger = collected.logger(label: "supabase")
        logger[metadataKey: "jwtSecret"] = "super-secret-signing-key-0123456789"
        logger.info("signed in", metadata: [
            "token": "t0k3n", "accessToken": "eyJ.a.b", "refresh_token": "r1", "password": "s3cret-passw0rd",
            "X-API-Key": "anon-key", "apikey": "service-key", "Authorization": "Bearer eyJ.c.d",
            "groupSecret": "00ff", "private-key": "-----BEGIN", "signingKey": "k", "Cookie": "sb=1",
            "credentials": "u:p", "keyMaterial": "aa",
            "user": "alice", "key": "idempotency-key-1", "keyCount": "3", "path": "/auth/v1/token",
        ])
        let record = collected.records.first
        for key in ["jwtSecret", "token", "accessToken", "refresh_token", "password", "X-API-Key", "apikey",
                    "Authorization", "groupSecret", "private-key", "signingKey", "Cookie", "credentials", "keyMaterial"] {
            #expect(record?.metadata[key] == Logger.redactedValue, "\(key) was not redacted")
        }
        #expect(record?.metadata["user"] == "alice")
        #expect(record?.metadata["key"] == "idempotency-key-1", "an idempotency key is no secret")
        #expect(record?.metadata["keyCount"] == "3")
        #expect(record?.metadata["path"] == "/auth/v1/token")
        let text = collected.records.map { LogLine(date: Date(), record: $0).text }.joined()
        for secret in ["super-secret", "t0k3n", "eyJ", "r1,", "s3cret", "anon-key", "service-key", "Bearer", "00ff",
                       "BEGIN", "sb=1", "u:p"] {
            #expect(!text.contains(secret), "the line shows \(secret): \(text)")
        }
        #expect(Logger.isSecret(key: "SB_API_KEY") && !Logger.isSecret(key: "pair"))
    }

    @Test("the stream handler writes timestamped lines: time, level, label, message, then sorted metadata")
    func streamFormat() {
        let written = Locked<[String]>([])
        let date = Date(timeIntervalSince1970: 1_780_000_000.1239)
        let handler = StreamLogHandler(clock: { date }) { line in written.withLock { $0.append(line) } }
        let logger = Logger(label: "pair general", handler: handler, logLevel: .debug)
        logger.info("took the lease as bridge-1")
        logger.warning("error body\nsecond line\n", metadata: ["token": "t", "attempt": "2"])
        logger.debug("")
        Logger(label: "", handler: handler).error("no subject")
        #expect(written.withLock { $0 } == [
            "2026-05-28T20:26:40.123Z info pair general: took the lease as bridge-1",
            "2026-05-28T20:26:40.123Z warning pair general: error body | second line [attempt=2, token=[redacted]]",
            "2026-05-28T20:26:40.123Z debug pair general: ",
            "2026-05-28T20:26:40.123Z error no subject",
        ])
    }
}
