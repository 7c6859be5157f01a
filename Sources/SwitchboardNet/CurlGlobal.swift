import CCurl

/// libcurl's process-wide setup, which must run once before any handle is made.
enum CurlGlobal {
    /// The result of `curl_global_init(CURL_GLOBAL_ALL)`; evaluated once, on first access, thread-safely.
    private static let initializationCode: Int = Int(curl_global_init(CCURL_GLOBAL_ALL).rawValue)

    /// Runs `curl_global_init` if it has not run yet; returns curl's result code (0 on success).
    @discardableResult
    static func initialize() -> Int { initializationCode }
}
