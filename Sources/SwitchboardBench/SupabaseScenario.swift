import Foundation
import SupabaseAdapter
import SwitchboardCore

/// `supabase`: the Supabase adapter's send → ack (prepare + publish) and send → its own realtime echo, p50/p99,
/// vs a bare libcurl POST of the same row and the official Python client inserting the same rows, all against
/// the Supabase-like server started in this process.
enum SupabaseScenario {
    /// The sending user (a member of each run's conversation).
    static let user: UserID = "alice"

    /// Runs the scenario.
    static func run(_ options: BenchOptions) async throws -> (figures: [BenchFigure], notes: [String]) {
        let samples = options.size(quick: 500, full: 1000, floor: 5)
        let warmup = max(2, samples / 20)
        let python = PythonClient.locate()
        return try await BenchServers.with("supabase", xmtp: false) { servers in
            var ackP50: [Double] = [], ackP99: [Double] = [], echoP50: [Double] = [], echoP99: [Double] = []
            var bareP50: [Double] = [], bareP99: [Double] = [], pyP50: [Double] = [], pyP99: [Double] = []
            var pythonProblem = python.problem
            for _ in 0..<options.runs {
                let conversation = try await servers.supabaseHarness.createConversation(title: "bench-supabase",
                                                                                        members: [user, "bob"])
                let ours = try await interleavedLatencies(servers, conversation: conversation, samples: samples,
                                                          warmup: warmup)
                ackP50.append(BenchStatistics.percentile(ours.ack, 50) * 1000)
                ackP99.append(BenchStatistics.percentile(ours.ack, 99) * 1000)
                echoP50.append(BenchStatistics.percentile(ours.echo, 50) * 1000)
                echoP99.append(BenchStatistics.percentile(ours.echo, 99) * 1000)
                let bare = ours.bare
                bareP50.append(BenchStatistics.percentile(bare, 50) * 1000)
                bareP99.append(BenchStatistics.percentile(bare, 99) * 1000)
                if pythonProblem == nil, let path = python.path {
                    do {
                        let rows = (0..<(warmup + samples)).map { row(conversation: conversation, index: $0).serialized }
                        let latencies = try await PythonClient.insertLatencies(python: path, servers: servers, rows: rows,
                                                                               warmup: warmup, directory: servers.directory)
                        pyP50.append(BenchStatistics.percentile(latencies, 50) * 1000)
                        pyP99.append(BenchStatistics.percentile(latencies, 99) * 1000)
                    } catch {
                        pythonProblem = "the Python client run failed: \(error)"
                    }
                }
            }
            let bareName = "bare libcurl POST"
            let pythonAvailable = pythonProblem == nil && !pyP50.isEmpty
            let pythonName = "official Python client (supabase \(PythonClient.version)) insert"
            var notes: [String] = []
            if let pythonProblem { notes.append("supabase: Python client baseline unavailable — \(pythonProblem)") }
            let note = "\(samples) sends per run after \(warmup) warm-up, one at a time, each after the previous "
                + "message's realtime echo; ours and the bare POST alternate send by send with the adapter's subscription "
                + "open throughout (the server fans every row of either out to it); each baseline inserts the same rows "
                + "(fresh IDs) into the same conversation over one reused connection; the Python client runs after them "
                + "in a process of its own; \(options.runs) runs"
            var figures = [
                BenchFigure(scenario: "supabase", figure: "send → ack p50", unit: "ms", summary: BenchSummary(ackP50),
                            baseline: BenchBaseline(name: bareName + " p50", unit: "ms", summary: BenchSummary(bareP50)),
                            goal: .ratioAtMost(1.3)),
                BenchFigure(scenario: "supabase", figure: "send → ack p99", unit: "ms", summary: BenchSummary(ackP99),
                            baseline: BenchBaseline(name: bareName + " p99", unit: "ms", summary: BenchSummary(bareP99)),
                            goal: .ratioAtMost(1.3), note: note),
            ]
            figures.append(BenchFigure(
                scenario: "supabase", figure: "send → ack p50 (vs Python)", unit: "ms", summary: BenchSummary(ackP50),
                baseline: pythonAvailable ? BenchBaseline(name: pythonName + " p50", unit: "ms", summary: BenchSummary(pyP50)) : nil,
                goal: pythonAvailable ? .ratioAtMost(1) : .none,
                note: pythonAvailable ? "goal: faster than the Python client" : "Python client unavailable: no baseline"))
            if pythonAvailable {
                figures.append(BenchFigure(
                    scenario: "supabase", figure: "send → ack p99 (vs Python)", unit: "ms", summary: BenchSummary(ackP99),
                    baseline: BenchBaseline(name: pythonName + " p99", unit: "ms", summary: BenchSummary(pyP99))))
            }
            figures += [
                BenchFigure(scenario: "supabase", figure: "send → own realtime echo p50", unit: "ms", summary: BenchSummary(echoP50),
                            baseline: BenchBaseline(name: bareName + " p50", unit: "ms", summary: BenchSummary(bareP50))),
                BenchFigure(scenario: "supabase", figure: "send → own realtime echo p99", unit: "ms", summary: BenchSummary(echoP99),
                            baseline: BenchBaseline(name: bareName + " p99", unit: "ms", summary: BenchSummary(bareP99)),
                            note: "the echo is the message arriving on the sending adapter's own live stream (Phoenix realtime)"),
            ]
            return (figures, notes)
        }
    }

    /// The message row every client inserts (the adapter's own row shape, with a fresh ID).
    static func row(id: MessageID = .make(), conversation: ConversationID, index: Int) -> JSONValue {
        SupabaseRows.messageRow(OutgoingMessage(id: id, conversation: conversation, sender: user,
                                                text: "benchmark message number \(index)", createdAt: Date()))
    }

    /// Per send, alternating: seconds from the adapter's `prepare` until `publish` returned and until the message
    /// arrived on the adapter's own live stream; and seconds per bare libcurl POST of the same kind of row (same URL,
    /// headers and `Prefer`, one reused handle). Both clients send one at a time, each after the previous message's
    /// realtime echo reached the adapter's open subscription, so the server does the same work around every
    /// request of either, and machine drift during the run falls on both alike.
    static func interleavedLatencies(_ servers: BenchServers, conversation: ConversationID, samples: Int,
                                     warmup: Int) async throws -> (ack: [Double], echo: [Double], bare: [Double]) {
        let adapter = servers.supabaseAdapter(user)
        let book = ArrivalBook()
        let listener = book.listen(to: adapter.liveEvents(in: conversation))
        defer { listener.cancel() }
        guard await ArrivalBook.wait(timeout: .seconds(15), { book.isConnected }) else {
            throw BenchError("the adapter's realtime stream did not connect within 15 s")
        }
        // The request the adapter's publish makes (its query, headers and `Prefer`).
        let query = SupabaseAdapter.publishQuery.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
        let poster = try BareCurlPoster(
            url: servers.supabaseURL.absoluteString + "/rest/v1/messages?" + query,
            headers: ["apikey: \(servers.anonKey)", "Authorization: Bearer \(servers.accessToken(user))",
                      "Content-Type: application/json", "Prefer: resolution=ignore-duplicates,return=representation"])
        let clock = ContinuousClock()
        var ack: [Double] = [], echo: [Double] = [], bare: [Double] = []
        ack.reserveCapacity(samples)
        echo.reserveCapacity(samples)
        bare.reserveCapacity(samples)
        for index in 0..<(warmup + samples) {
            let id = MessageID.make()
            let start = clock.now
            let prepared = try await adapter.prepare(OutgoingMessage(id: id, conversation: conversation, sender: user,
                                                                     text: "benchmark message number \(index)", createdAt: Date()),
                                                     noSend: false)
            _ = try await adapter.publish(prepared)
            let acked = clock.now
            guard let arrived = await echoArrival(of: id, in: book) else {
                throw BenchError("send \(index): no realtime echo within 10 s")
            }
            // The bare POST blocks its own thread, never one of the cooperative threads the server also runs on.
            let bareID = MessageID.make()
            let body = row(id: bareID, conversation: conversation, index: index).serialized
            let seconds = try await onOwnThread { [poster] in
                let start = ContinuousClock.now
                let status = try poster.post(body)
                guard status == 201 else { throw BenchError("bare POST \(index) answered HTTP \(status)") }
                return BenchStatistics.seconds(ContinuousClock.now - start)
            }
            guard await echoArrival(of: bareID, in: book) != nil else {
                throw BenchError("bare POST \(index): no realtime echo within 10 s")
            }
            if index >= warmup {
                ack.append(BenchStatistics.seconds(acked - start))
                echo.append(BenchStatistics.seconds(arrived - start))
                bare.append(seconds)
            }
        }
        return (ack, echo, bare)
    }

    /// When `id` arrived on the adapter's live stream, waiting for it up to 10 s (nil when it did not come).
    private static func echoArrival(of id: MessageID, in book: ArrivalBook) async -> ContinuousClock.Instant? {
        guard await ArrivalBook.wait(timeout: .seconds(10), step: .microseconds(200), { book.arrival(of: id) != nil }) else {
            return nil
        }
        return book.arrival(of: id)
    }
}

/// The official Python client (`supabase`/`postgrest` in the project's venv) as a baseline.
enum PythonClient {
    /// The package version the venv pins.
    static let version = "2.34.1"

    /// The interpreter: `SWITCHBOARD_PYTHON`, else `.venv/bin/python` under the current directory; a problem
    /// (instead of a path) when neither is executable.
    static func locate() -> (path: String?, problem: String?) {
        let environment = ProcessInfo.processInfo.environment["SWITCHBOARD_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        let candidate = environment ?? FileManager.default.currentDirectoryPath + "/.venv/bin/python"
        guard FileManager.default.isExecutableFile(atPath: candidate) else {
            return (nil, environment == nil
                        ? "no SWITCHBOARD_PYTHON and no .venv/bin/python in the current directory (run `make deps`)"
                        : "SWITCHBOARD_PYTHON=\(candidate) is not an executable")
        }
        return (candidate, nil)
    }

    /// Runs the insert script: one `upsert(row, on_conflict="id", ignore_duplicates=True)` per row through the
    /// official client, timed in Python; returns the seconds per insert after `warmup`.
    static func insertLatencies(python: String, servers: BenchServers, rows: [String], warmup: Int,
                                directory: BenchDirectory) async throws -> [Double] {
        let script = directory.path("supabase_insert_bench.py")
        try Data(self.script.utf8).write(to: URL(fileURLWithPath: script))
        let input = directory.path("supabase_insert_rows.json")
        try Data(("[" + rows.joined(separator: ",") + "]").utf8).write(to: URL(fileURLWithPath: input))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script, servers.supabaseURL.absoluteString, input, String(warmup)]
        var environment = ProcessInfo.processInfo.environment
        environment["SUPABASE_ANON_KEY"] = servers.anonKey
        environment["SUPABASE_USER_TOKEN"] = servers.accessToken(SupabaseScenario.user)
        process.environment = environment
        // Output goes to files and the wait polls: the servers answering the script run on this process's
        // cooperative threads, which a blocking read or wait would starve.
        let outputPath = directory.path("supabase_insert_out.txt"), errorPath = directory.path("supabase_insert_err.txt")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        _ = FileManager.default.createFile(atPath: errorPath, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errorPath))
        defer {
            try? output.close()
            try? errors.close()
        }
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let deadline = ContinuousClock.now + .seconds(300)
        while process.isRunning {
            if ContinuousClock.now > deadline {
                process.terminate()
                throw BenchError("the Python client did not finish within 300 s")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let stdout = (try? Data(contentsOf: URL(fileURLWithPath: outputPath))) ?? Data()
        let stderr = (try? Data(contentsOf: URL(fileURLWithPath: errorPath))) ?? Data()
        let text = String(decoding: stdout, as: UTF8.self)
        guard process.terminationStatus == 0,
              let line = text.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
              let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let latencies = object["latencies"] as? [Double]
        else {
            let detail = String(decoding: stderr.suffix(400), as: UTF8.self)
            throw BenchError("exit \(process.terminationStatus): \(detail)")
        }
        return latencies
    }

    /// The script: reads the rows, inserts each through the official client, prints `{"latencies": [...]}`.
    static let script = #"""
        """Times one insert per row through the OFFICIAL supabase Python client (switchboard bench supabase).

        Usage: supabase_insert_bench.py BASE_URL ROWS_JSON_FILE WARMUP
        Environment: SUPABASE_ANON_KEY, SUPABASE_USER_TOKEN. Prints one JSON line {"latencies": [seconds, ...]}.
        """
        import json
        import os
        import sys
        import time

        from supabase import ClientOptions, create_client


        def main():
            base_url, rows_file, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3])
            with open(rows_file, encoding="utf-8") as handle:
                rows = json.load(handle)
            client = create_client(base_url, os.environ["SUPABASE_ANON_KEY"], options=ClientOptions(
                headers={"Authorization": "Bearer " + os.environ["SUPABASE_USER_TOKEN"]},
                auto_refresh_token=False, persist_session=False))
            latencies = []
            for index, row in enumerate(rows):
                start = time.perf_counter()
                result = client.table("messages").upsert(row, on_conflict="id", ignore_duplicates=True).execute()
                elapsed = time.perf_counter() - start
                if len(result.data) != 1:
                    print(f"insert {index} returned {result.data!r}", file=sys.stderr)
                    sys.exit(1)
                if index >= warmup:
                    latencies.append(elapsed)
            print(json.dumps({"latencies": latencies}))


        main()
        """#
}
