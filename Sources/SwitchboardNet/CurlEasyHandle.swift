import CCurl

/// A libcurl easy handle (`CURL *`) with typed option setters that throw `HTTPClientError` on failure.
///
/// Not thread-safe: only the curl thread of `CurlMultiLoop` touches handles.
struct CurlEasyHandle: Hashable {
    /// The `CURL *`.
    let pointer: UnsafeMutableRawPointer

    /// Makes a handle with `curl_easy_init`, or nil when curl cannot.
    static func make() -> CurlEasyHandle? {
        CurlGlobal.initialize()
        return curl_easy_init().map(CurlEasyHandle.init(pointer:))
    }

    /// Sets a `long` option.
    func set(_ option: CURLoption, _ value: Int) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_long(pointer, option, value))
    }

    /// Sets a Boolean option (as 1 or 0).
    func set(_ option: CURLoption, _ value: Bool) throws(HTTPClientError) {
        try set(option, value ? 1 : 0)
    }

    /// Sets a `curl_off_t` option.
    func set(_ option: CURLoption, offset value: Int) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_off_t(pointer, option, value))
    }

    /// Sets a string option (curl copies the string).
    func set(_ option: CURLoption, _ value: String) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_string(pointer, option, value))
    }

    /// Sets a pointer option.
    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_pointer(pointer, option, value))
    }

    /// Sets a string-list option; the list must live until the handle is reset.
    func set(_ option: CURLoption, list value: UnsafeMutablePointer<curl_slist>?) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_slist(pointer, option, value))
    }

    /// Sets CURLOPT_WRITEFUNCTION.
    func setWriteFunction(_ function: curl_write_callback) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_write_callback(pointer, CURLOPT_WRITEFUNCTION, function))
    }

    /// Sets CURLOPT_HEADERFUNCTION.
    func setHeaderFunction(_ function: curl_write_callback) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_header_callback(pointer, CURLOPT_HEADERFUNCTION, function))
    }

    /// Sets CURLOPT_READFUNCTION.
    func setReadFunction(_ function: curl_read_callback) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_read_callback(pointer, CURLOPT_READFUNCTION, function))
    }

    /// Sets CURLOPT_SEEKFUNCTION.
    func setSeekFunction(_ function: curl_seek_callback) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_seek_callback(pointer, CURLOPT_SEEKFUNCTION, function))
    }

    /// Sets CURLOPT_XFERINFOFUNCTION.
    func setTransferInfoFunction(_ function: curl_xferinfo_callback) throws(HTTPClientError) {
        try check(ccurl_easy_setopt_xferinfo_callback(pointer, CURLOPT_XFERINFOFUNCTION, function))
    }

    /// Reads a `long` info, or nil when curl has none.
    func info(_ info: CURLINFO) -> Int? {
        var value = 0
        return ccurl_easy_getinfo_long(pointer, info, &value) == CURLE_OK ? value : nil
    }

    /// Forgets every option (keeping live connections and caches), ready for the next transfer.
    func reset() { curl_easy_reset(pointer) }

    /// Frees the handle.
    func cleanup() { curl_easy_cleanup(pointer) }

    /// Throws when `code` is not `CURLE_OK`.
    private func check(_ code: CURLcode) throws(HTTPClientError) {
        guard code == CURLE_OK else { throw HTTPClientError(curlCode: code) }
    }
}
