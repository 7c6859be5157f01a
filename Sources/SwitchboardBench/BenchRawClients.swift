import CCurl
import CLibPQ
import Foundation

/// A bare libcurl easy handle POSTing to one URL with fixed headers, reused for every request so the connection
/// stays open: the floor any HTTP client on this machine can reach. Not thread-safe; one caller at a time.
final class BareCurlPoster: @unchecked Sendable {
    private let handle: UnsafeMutableRawPointer
    private var headers: UnsafeMutablePointer<curl_slist>?

    /// A handle for `url` sending `headers` (`Name: value` lines) with every POST.
    init(url: String, headers lines: [String]) throws {
        _ = curl_global_init(CCURL_GLOBAL_ALL)
        guard let handle = curl_easy_init() else { throw BenchError("curl_easy_init failed") }
        self.handle = handle
        for line in lines + ["Expect:"] { headers = curl_slist_append(headers, line) }
        let writeNothing: curl_write_callback = { _, size, count, _ in size * count }
        guard ccurl_easy_setopt_string(handle, CURLOPT_URL, url) == CURLE_OK,
              ccurl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headers) == CURLE_OK,
              ccurl_easy_setopt_write_callback(handle, CURLOPT_WRITEFUNCTION, writeNothing) == CURLE_OK,
              ccurl_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1) == CURLE_OK,
              ccurl_easy_setopt_long(handle, CURLOPT_POST, 1) == CURLE_OK
        else {
            curl_easy_cleanup(handle)
            curl_slist_free_all(headers)
            throw BenchError("setting up the curl handle failed")
        }
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headers)
    }

    /// POSTs `body` and returns the HTTP status (throws on a transport error).
    func post(_ body: String) throws -> Int {
        let code = body.withCString { text -> CURLcode in
            _ = ccurl_easy_setopt_long(handle, CURLOPT_POSTFIELDSIZE, strlen(text))
            _ = ccurl_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, text)
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else { throw BenchError("curl: \(String(cString: curl_easy_strerror(code)))") }
        var status = 0
        _ = ccurl_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }
}

/// A minimal libpq `COPY … FROM STDIN` (text format) on its own connection, for the migration's baseline.
final class BareCopyConnection {
    private let connection: OpaquePointer

    /// Connects to `url` (errors never carry the URL).
    init(url: String) throws {
        guard let connection = PQconnectdb(url) else { throw BenchError("libpq could not allocate a connection") }
        guard PQstatus(connection) == CONNECTION_OK else {
            PQfinish(connection)
            throw BenchError("connecting to the Supabase-like server's PostgreSQL failed")
        }
        self.connection = connection
    }

    deinit { PQfinish(connection) }

    /// Runs `COPY table (columns) FROM STDIN` (its own autocommit transaction) sending `rows` (already escaped
    /// text-format lines, each ending in a newline) in buffers of about 64 kB; returns when the server committed.
    func copy(_ statement: String, rows: [String]) throws {
        guard let started = PQexec(connection, statement) else { throw BenchError("COPY: no result") }
        let status = PQresultStatus(started)
        PQclear(started)
        guard status == PGRES_COPY_IN else { throw BenchError("COPY did not start: \(lastError())") }
        var buffer = ""
        buffer.reserveCapacity(70_000)
        func flush() throws {
            guard !buffer.isEmpty else { return }
            let sent = buffer.withCString { PQputCopyData(connection, $0, Int32(strlen($0))) }
            guard sent == 1 else { throw BenchError("COPY data failed: \(lastError())") }
            buffer.removeAll(keepingCapacity: true)
        }
        for row in rows {
            buffer += row
            if buffer.utf8.count >= 65_536 { try flush() }
        }
        try flush()
        guard PQputCopyEnd(connection, nil) == 1 else { throw BenchError("COPY end failed: \(lastError())") }
        var failure: String?
        while let result = PQgetResult(connection) {
            if PQresultStatus(result) != PGRES_COMMAND_OK { failure = lastError() }
            PQclear(result)
        }
        if let failure { throw BenchError("COPY failed: \(failure)") }
    }

    /// Runs one statement with bound text parameters; returns the first column of each row.
    func query(_ sql: String, _ parameters: [String]) throws -> [String] {
        let copies = parameters.map { strdup($0) }
        defer { for pointer in copies { free(pointer) } }
        let values: [UnsafePointer<CChar>?] = copies.map { $0.map { UnsafePointer($0) } }
        guard let result = values.withUnsafeBufferPointer({ buffer in
            PQexecParams(connection, sql, Int32(parameters.count), nil, buffer.baseAddress, nil, nil, 0)
        }) else { throw BenchError("query: no result") }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else { throw BenchError("query failed: \(lastError())") }
        return (0..<PQntuples(result)).map { String(cString: PQgetvalue(result, $0, 0)) }
    }

    /// The connection's last error message, trimmed.
    private func lastError() -> String {
        PQerrorMessage(connection).map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "unknown error"
    }

    /// `text` escaped for one field of COPY's text format (backslash, tab, newline, carriage return).
    static func escape(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "\\": result += "\\\\"
            case "\t": result += "\\t"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            default: result.append(character)
            }
        }
        return result
    }
}

/// Runs blocking `body` on a thread of its own and returns its result, so a blocking client loop never holds one
/// of the cooperative threads the in-process servers answer it on.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}
