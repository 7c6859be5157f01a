import Foundation
import SwitchboardCore

/// Parses `--flag value` style arguments.
struct Arguments {
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    private(set) var positional: [String] = []

    init(_ arguments: [String], booleanFlags: Set<String>) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.hasPrefix("--") {
                let name = String(argument.dropFirst(2))
                if let equals = name.firstIndex(of: "=") {
                    values[String(name[..<equals]), default: []].append(String(name[name.index(after: equals)...]))
                } else if booleanFlags.contains(name) {
                    flags.insert(name)
                } else {
                    guard index + 1 < arguments.count else { throw UsageError("--\(name) needs a value") }
                    values[name, default: []].append(arguments[index + 1])
                    index += 1
                }
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
    func all(_ name: String) -> [String] { values[name] ?? [] }
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// Rejects options the command does not know, and arguments that are not options unless `positionals` is set
    /// (the command then checks them itself).
    func check(allowed: Set<String>, positionals: Bool = false) throws {
        for name in Set(values.keys).union(flags) where !allowed.contains(name) {
            throw UsageError("unknown option --\(name)")
        }
        if !positionals, let stray = positional.first { throw UsageError("unexpected argument '\(stray)'") }
    }
}

/// A mistake in how the command was called.
struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

enum CommandLineTool {
    static let usage = """
    switchboard — chat backends behind one model

    USAGE
      switchboard <command> [options]

    COMMANDS
      demo                      Start both reference servers on loopback, bridge them with a `switchboard bridge`
                                child (SIGKILLed mid-burst and restarted), send from both sides and print both
                                timelines side by side, the ID map and a summary read back from both backends.
          --data-dir DIR          keep the demo's files there (default: a temporary folder, removed afterwards)
          --keep                  keep the temporary folder, and print the bridge config the demo used
          --memory                run the engine alone on the in-memory backend instead and print a readable
                                  timeline: an optimistic send, a failure and retry, a three-attachment send with
                                  one failing, and a restart with in-flight messages restored

      conformance               Run the conformance kit against an adapter.
          --adapter A             memory | supabase | xmtp | socketio
          --url URL               supabase: the server's base URL (e.g. from `serve supabase`);
                                  xmtp: the node's base URL (e.g. from `serve xmtp`);
                                  socketio: the server's base URL (e.g. from `serve socketio`)
          --jwt-secret S          supabase: the server's JWT secret, to mint member tokens
          --id-scheme S           client | content | server (memory; default client)
          --echo-only             server scheme: learn the ID only from the echo
          --format F              table (default) | json
          --junit FILE            also write JUnit XML to FILE
          --scenario NAME         run only this scenario (repeatable)
          --list                  list the scenarios and exit

      burst                     Send a burst of messages through the engine into a journaled memory backend
                                (the crash test's child process; safe to SIGKILL and re-run).
          --store PATH            the engine's SQLite store
          --journal PATH          the memory backend's journal
          --count N               messages to compose (default 200)
          --id-scheme S           client | content | server (default client)
          --resume                compose nothing; finish what the store holds, then exit

      serve supabase            Run the Supabase-like reference server (REST, realtime, storage) on loopback
                                (or --host); prints `listening on http://127.0.0.1:PORT` once ready, stops on
                                SIGINT/SIGTERM.
                                Without --database-url it runs a private PostgreSQL 15 under DIR/postgres, on
                                127.0.0.1 only, with `trust` authentication (any local user may connect to it
                                as the superuser) and fsync=off (fast; an OS crash or power loss can lose or
                                corrupt its data): for tests and local use. As root, PostgreSQL runs as the
                                `postgres` user, which must be able to enter every folder above DIR.
          --data-dir DIR          private PostgreSQL cluster and storage buckets (required)
          --jwt-secret S          HS256 secret, at least 32 characters (or SWITCHBOARD_JWT_SECRET)
          --port N                port to bind (default 0: a free one)
          --host H                address to bind (default 127.0.0.1; PostgreSQL stays on 127.0.0.1)
          --durable               keep fsync on in the private PostgreSQL (slower writes that survive a crash)
          --database-url URL      use this PostgreSQL database instead of a private cluster
          --sql FILE              apply this schema file after the built-in migrations (repeatable)
          --max-object-size N     largest storage object in bytes (default 52428800)
          --jwt-expiry S          lifetime of the access tokens /auth/v1 issues, 30…604800 s (default 3600)
          --auth-rate-limit N     sign-ups and sign-ins per client IP per 5 min (default 30; refreshes 5×;
                                  0: no limit); beyond it /auth/v1 answers 429
          --verbose               also log requests and internals to standard error (errors always are)

      serve xmtp                Run the XMTP-like node (MLS API gateway: send/query/subscribe group messages,
                                inbox registration, group registry, presigned uploads) on loopback; prints
                                `listening on http://127.0.0.1:PORT` once ready, stops on SIGINT/SIGTERM.
          --data-dir DIR          SQLite database and uploaded files (required)
          --port N                port to bind (default 0: a free one)
          --host H                address to bind (default 127.0.0.1)
          --database-url URL      keep messages, groups and tokens in this PostgreSQL database instead
          --verbose               log everything to standard error, not only errors

      serve socketio            Run the Socket-style reference server (REST sends, history, edits, reactions,
                                receipts, uploads; Socket.IO v5 live events over WebSocket at /socket.io/) on
                                loopback; prints `listening on http://127.0.0.1:PORT` once ready, stops on
                                SIGINT/SIGTERM.
          --data-dir DIR          SQLite database and uploaded files (required)
          --port N                port to bind (default 0: a free one)
          --host H                address to bind (default 127.0.0.1)
          --page-size N           messages per history page, 1…1000 (default 50)
          --edit-window S         seconds after sending during which the sender may edit (default 900)
          --delete-window S       seconds after sending during which the sender may delete (default 7200)
          --verbose               log everything to standard error, not only errors

      supabase token            Print a signed HS256 JWT, as the Supabase-like server checks them: its anon key,
                                its service_role key, or the access token of a user.
          --jwt-secret S          the server's secret (or SWITCHBOARD_JWT_SECRET)
          --role R                anon | service_role | authenticated
          --user ID               the user the token stands for (its sub); required with authenticated
          --expires S             lifetime in seconds, 1…315360000 (default 86400: a day)

      supabase conversation create
                                Create a conversation through the service role, with its members (and the
                                attachments bucket, if missing); prints the conversation's ID (a UUID).
          --url URL               the server's base URL (e.g. from `serve supabase`)
          --jwt-secret S          the server's secret (or SWITCHBOARD_JWT_SECRET)
          --title T               the conversation's title
          --member ID             a member (repeat for each; at least one)

      supabase conversation add-member
                                Add members to a conversation through the service role (members already in it
                                stay as they are).
          --url URL --jwt-secret S
          --conversation UUID     the conversation
          --member ID             a member to add (repeat for each)

      xmtp register             Register an inbox on the XMTP-like node; prints its bearer token.
          --url URL               the node's base URL (e.g. from `serve xmtp`)
          --inbox ID              the inbox to register

      xmtp group create         Create a group as the token's inbox (a member) with a random ID; prints the group
                                ID (32 hex) and a fresh random group secret (64 hex) on one line. The node never
                                sees the secret: hand it to the members (e.g. an endpoint's groupSecret).
          --url URL --token T     the node, and the creator's token from `xmtp register`
          --member ID             another member (repeat for each; optional)

      xmtp group add-member     Add inboxes to a group as the token's inbox (a member).
          --url URL --token T --group HEX
          --member ID             an inbox to add (repeat for each)

      socketio register         Register a user on the Socket-style server; prints its bearer token.
          --url URL               the server's base URL (e.g. from `serve socketio`)
          --user ID               the user to register (1–128 of A–Z a–z 0–9 . _ @ : -)

      socketio conversation create
                                Create a conversation as the token's user (always a member); prints its ID.
          --url URL --token T     the server, and the creator's token from `socketio register`
          --conversation ID       its ID (default: a fresh room-…)
          --member ID             another member (repeat for each; optional)

      socketio conversation add-member
                                Add users to a conversation as the token's user (a member).
          --url URL --token T --conversation ID
          --member ID             a user to add (repeat for each)

      bridge                    Bridge the conversation pairs of a JSON config between two adapters, both ways,
                                exactly once in effect; each pair runs under a lease in the store, so several
                                workers can share a PostgreSQL store and take over a dead worker's pairs.
                                Prints a status line per pair every statusEverySeconds; SIGTERM/SIGINT finish
                                the changes in flight, release the leases and exit 0. SIGHUP reloads the config:
                                pairs added start, pairs removed finish their change in flight and release their
                                leases, changed pairs restart, the others run on; a config with a mistake (or a
                                new store, worker or leaseSeconds) is refused, naming the file and the field, and
                                the running one stays.
          --config FILE           the config (store, worker, leaseSeconds, statusEverySeconds, pairs); see README
          --catch-up-only         take the leases, sync each pair once, print the status, exit (1 if a pair failed)
          --verbose               also log debug lines: skipped changes, PostgreSQL notices
        Every line starts with the time (RFC 3339, UTC, milliseconds) and the level, then names the pair and
        side (as in the config) it concerns: 2026-11-30T10:00:05.123Z info pair general: a→b 12, b→a 7, …
        (status lines on standard output, log lines on standard error). Status lines count copies, updates,
        waiting operations, quarantined changes and key collisions; lag is the age of the oldest change read
        and not yet bridged. A change no retry can bridge (a refusal of the other side, a key it cannot place)
        is quarantined and the pair goes on:

      bridge quarantine list|retry|drop --config FILE [--pair NAME] [ID...]
                                List the quarantined changes of each pair (number, time, source, kind, ID,
                                reason); retry has the running bridge bridge entries again at its next pass;
                                drop forgets them. Exit 1 when an ID is not in the quarantine.

      migrate                   Copy one conversation's history from one backend to another, oldest to newest,
                                page by page, checkpointed in a store (re-running resumes and adds nothing; each
                                message keeps its MessageID as the idempotency key on the target). Every message
                                is copied, the migrating account's own too; only copies made from the target are
                                not. A progress bar with rate and ETA on a terminal, plain lines otherwise; then a
                                final report that lists each message not carried as it is, with the reason
                                (deleted at the source, a copy made from the target, unsupported content copied as
                                its fallback text, refused by the target with its error). A source or target
                                conversation that does not exist or that the account may not read is an error.
          --from ENDPOINT         the source: endpoint JSON inline or a JSON file, e.g.
                                  {"adapter":"xmtp","url":"http://127.0.0.1:5556","conversation":"<32 hex>",
                                   "inbox":"migrator","token":"env:XMTP_TOKEN","groupSecret":"env:XMTP_SECRET",
                                   "database":"migrate-xmtp.sqlite"}
          --to ENDPOINT           the target, e.g. {"adapter":"supabase","url":"http://127.0.0.1:54321",
                                   "conversation":"<uuid>","apiKey":"env:SB_ANON_KEY",
                                   "accessToken":"env:SB_TOKEN","user":"migrator"}
          --conversation SRC:DST  override both endpoints' conversation IDs
          --store PATH            SQLite store for the checkpoint and ID map (default ./switchboard-migrate.sqlite)
          --database-url URL      keep them in PostgreSQL instead
          --verify                after copying, compare both sides message by message (missing, extra, text
                                  mismatches); exit 1 on any difference
          --verify-only           compare without copying
          --dry-run               print what a copy would do (to copy, already present, not carried and why)
                                  and write nothing
          --format F              text (default) | json (progress then goes to standard error)
          --batch-size N          source changes per checkpointed page (default 500)
          --no-estimate           do not page the source's history alongside the copy to count it (no total or ETA)
                                Exit 0 done (and clean), 1 failure, a message the target refused, or
                                differences, 2 bad option or endpoint (naming the field), 130/143 stopped by
                                SIGINT/SIGTERM (re-run to resume). Credentials, access and missing conversations
                                stop the run at once (no retry fixes them); other errors are retried.

      xmtp codec encode         Encode content as libxmtp does; prints the EncodedContent protobuf as hex.
          --type T                text | reply | reaction (2.0) | reaction:1.0 | readReceipt | attachment |
                                  remoteStaticAttachment | multiRemoteStaticAttachment | deleteMessage |
                                  editMessage (or the full form, e.g. xmtp.org/text:1.0)
          --json J                the value as JSON with libxmtp's field names, e.g. '"hello"' for text
      xmtp codec decode         Decode EncodedContent; prints {"type","parameters","fallback","content"}.
          --hex H                 the EncodedContent protobuf as hex
      xmtp message-id           hex(sha256(group_id ‖ TAB ‖ idempotency_key ‖ TAB ‖ EncodedContent bytes)).
          --group G --key K --content-hex H
      xmtp attachment encrypt   Wrap a file in attachment:1.0, encrypt it as a remote attachment (HKDF-SHA256,
                                AES-256-GCM), write the ciphertext, print the parameters as JSON.
          --in FILE --out CIPHERTEXT [--filename NAME] [--mime TYPE]
      xmtp attachment decrypt   Check the digest, decrypt, write the file.
          --in CIPHERTEXT --params JSON|FILE --out FILE

      xmtp send                 Prepare and publish one text message with the XMTP adapter (debugging, and the
                                child of the kill-between-prepare-and-publish test).
          --url URL --inbox I --token T --group HEX --secret HEX --database PATH
          --text T [--hold]       prepare; with --hold print the prepared message and wait to be killed
          --prepared B            publish what --hold printed (idempotent)

      bench SCENARIO            Measure a scenario against a baseline run side by side (build with -c release);
                                every figure is the median of repeated runs, with min and max.
                                SCENARIO: send | idmap | dedupe | catchup | memory | supabase | bridge | migrate
                                | all (supabase, bridge and migrate start both reference servers in-process;
                                the Python baseline uses SWITCHBOARD_PYTHON or ./.venv/bin/python)
          --quick                 smaller sizes, e.g. catchup and memory 100,000 messages instead of 1,000,000
                                  (every size: BENCHMARKS.md)
          --format F              table (default) | json (with command, date and machine)
          --runs N                runs per figure (default 3 with --quick, else 5)

      help, --help              Show this text.
      --version                 Print the version.

    Exit status: 0 on success, 1 on failure, 2 on a usage error.
    """

    /// The help for the command named by `words` (e.g. `["serve", "xmtp"]`, or `["serve"]` for every `serve`
    /// command; a placeholder such as `SCENARIO` matches any word): its sections of `usage` under a usage line,
    /// or nil when no command matches (the caller then reports the unknown command).
    static func help(for words: [String]) -> String? {
        if words.starts(with: ["xmtp", "attachment"]) { return XMTPAttachmentCommand.usage }
        if words.starts(with: ["xmtp", "codec"]) || words.starts(with: ["xmtp", "message-id"]) {
            if let detailed = sections(of: XMTPCodecCommand.usage, for: words) { return detailed }
        }
        return sections(of: usage, for: words)
    }

    /// The sections of a help `text` whose command matches `words`, under a usage line; nil when none does.
    private static func sections(of text: String, for words: [String]) -> String? {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func headerWords(_ line: String) -> [Substring]? {
            guard line.hasPrefix("  "), let first = line.dropFirst(2).first, first != " " else { return nil }
            let name = line.dropFirst(2).components(separatedBy: "   ").first ?? ""
            return name.split(separator: " ")
        }
        var sections: [String] = []
        var index = 0
        while index < lines.count {
            guard let header = headerWords(lines[index]), !words.isEmpty, header.count >= words.count,
                  zip(header, words).allSatisfy({ $0 == $1 || ($0.allSatisfy(\.isUppercase) && $0.first != "-") }) else {
                index += 1
                continue
            }
            var end = index + 1
            while end < lines.count, headerWords(lines[end]) == nil, !lines[end].hasPrefix("Exit status") { end += 1 }
            var section = lines[index..<end]
            while section.last?.allSatisfy(\.isWhitespace) == true { section.removeLast() }
            sections.append(section.joined(separator: "\n"))
            index = end
        }
        guard !sections.isEmpty else { return nil }
        return "USAGE\n  switchboard \(words.joined(separator: " ")) [options]\n\n" + sections.joined(separator: "\n\n")
            + "\n\nRun 'switchboard --help' for every command."
    }

    /// The commands, each a name and what runs it with the arguments after that name.
    private static var commands: Subcommands {
        [
            ("demo", DemoCommand.run), ("conformance", ConformanceCommand.run), ("burst", BurstCommand.run),
            ("bridge", BridgeCommand.run), ("serve", ServeCommand.run), ("xmtp", XMTPCommand.run),
            ("migrate", MigrateCommand.run), ("bench", BenchCommand.run), ("supabase", SupabaseCommand.run),
            ("socketio", SocketIOCommand.run),
        ]
    }

    /// Runs the command `arguments` name (`<command> --help` prints that command's help); returns the exit status.
    static func run(_ arguments: [String]) async -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 2
        }
        let rest = Array(arguments.dropFirst())
        if command == "help" || rest.contains("--help") || rest.contains("-h") {
            let words = (command == "help" ? rest : [command] + rest.prefix { !$0.hasPrefix("-") }).filter { !$0.hasPrefix("-") }
            if let text = words.isEmpty ? usage : help(for: words) {
                print(text)
                return 0
            }
        }
        do {
            switch command {
            case "--help", "-h":
                print(usage)
                return 0
            case "--version":
                guard rest.isEmpty else { throw UsageError("--version takes no arguments") }
                print("switchboard \(SwitchboardVersion.current)")
                return 0
            case "help":
                throw UsageError("no command '\(rest.joined(separator: " "))'")
            default:
                guard let run = commands.first(where: { $0.name == command })?.run else {
                    throw UsageError("unknown command '\(command)'")
                }
                return try await run(rest)
            }
        } catch let error as UsageError {
            let known = !command.hasPrefix("-") && command != "help" && help(for: [command]) != nil
            let hint = known ? "switchboard \(command) --help" : "switchboard --help"
            FileHandle.standardError.write(Data("switchboard: \(error.description)\nRun '\(hint)' for usage.\n".utf8))
            return 2
        } catch {
            FileHandle.standardError.write(Data("switchboard: \(error)\n".utf8))
            return 1
        }
    }
}

/// Parses an ID scheme name.
func parseScheme(_ text: String?) throws -> IDScheme {
    guard let text else { return .clientAssigned }
    guard let scheme = IDScheme(rawValue: text) else {
        throw UsageError("--id-scheme must be client, content or server (got '\(text)')")
    }
    return scheme
}

/// Writes one line to standard output at once (unbuffered, so a parent reading a pipe sees it before a kill).
func writeLine(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
}
