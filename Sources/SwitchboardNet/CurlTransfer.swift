import CCurl
import Foundation
import Synchronization

/// Receives what a transfer produces; every method is called on the curl thread, in order, and
/// `transferFinished` exactly once.
protocol CurlTransferDelegate: AnyObject, Sendable {
    /// The final response's status and header fields arrived (before any of its body).
    func transferReceivedHead(_ head: CurlResponseHead)
    /// Body bytes arrived; return false to pause the transfer without consuming them (curl delivers them again
    /// after `CurlMultiLoop.resume`).
    func transferReceivedBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// The transfer ended, with the final head or the failure (`CancellationError` when cancelled).
    func transferFinished(_ result: Result<CurlResponseHead, any Error>)
}

/// One request on its way through `CurlMultiLoop`: its plan, the response being parsed and its delegate.
///
/// Apart from the cancellation flag, its state belongs to the curl thread: it is set up there, curl's callbacks
/// run there and the loop finishes it there.
final class CurlTransfer: @unchecked Sendable {
    /// What to send.
    let plan: CurlRequestPlan
    /// Where results go.
    let delegate: any CurlTransferDelegate
    /// Set by any thread when the caller no longer wants the result.
    private let cancelled = Atomic<Bool>(false)

    // Curl thread only.
    /// The handle running this transfer, while it runs.
    private(set) var easy: CurlEasyHandle?
    private var headerList: UnsafeMutablePointer<curl_slist>?
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var parser: CurlResponseHeadParser
    private var headDelivered = false
    private var uploadOffset = 0
    private var reportedProgress = 0.0
    private var finished = false
    /// Body bytes accepted so far, against `plan.maximumBodyBytes`.
    private var receivedBodyBytes = 0
    /// Set when the body passed `plan.maximumBodyBytes` and the transfer was aborted for it.
    private(set) var exceededBodyLimit = false

    /// A transfer of `plan` reporting to `delegate`.
    init(plan: CurlRequestPlan, delegate: any CurlTransferDelegate, followsRedirects: Bool) {
        self.plan = plan
        self.delegate = delegate
        self.parser = CurlResponseHeadParser(followsRedirects: followsRedirects)
        errorBuffer = .allocate(capacity: Int(CCURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CCURL_ERROR_SIZE))
    }

    deinit {
        curl_slist_free_all(headerList)
        errorBuffer.deallocate()
    }

    /// Whether the caller cancelled.
    var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Records that the caller cancelled; callable from any thread.
    func markCancelled() { cancelled.store(true, ordering: .releasing) }

    /// curl's specific error text for the latest failure, if it wrote one.
    var errorDetail: String? { errorBuffer[0] == 0 ? nil : String(cString: errorBuffer) }

    /// Sets every option of `easy` for this transfer (the handle must be fresh or reset).
    func configure(_ easy: CurlEasyHandle, with configuration: HTTPClient.Configuration) throws(HTTPClientError) {
        self.easy = easy
        errorBuffer[0] = 0
        let context = Unmanaged.passUnretained(self).toOpaque()

        try easy.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errorBuffer))
        try easy.set(CURLOPT_URL, plan.url)
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, configuration.followsRedirects)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maximumRedirects)
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds)
        if let timeout = plan.timeoutMilliseconds {
            try easy.set(CURLOPT_TIMEOUT_MS, timeout)
        }
        if let limit = configuration.lowSpeedLimit {
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, max(1, limit.bytesPerSecond))
            try easy.set(CURLOPT_LOW_SPEED_TIME, limit.duration.curlSeconds)
        }
        try easy.set(CURLOPT_SSL_VERIFYPEER, true)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let file = configuration.certificateAuthorityFile {
            try easy.set(CURLOPT_CAINFO, file)
        }
        try easy.set(CURLOPT_TCP_KEEPALIVE, true)
        if configuration.decompressesResponses {
            try easy.set(CURLOPT_ACCEPT_ENCODING, "") // every encoding this libcurl can decode
        }
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        try easy.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, true)

        for line in plan.headerLines {
            guard let list = curl_slist_append(headerList, line) else { throw HTTPClientError(curlCode: CURLE_OUT_OF_MEMORY) }
            headerList = list
        }
        try easy.set(CURLOPT_HTTPHEADER, list: headerList)

        try configureMethod(easy, context: context)

        try easy.setHeaderFunction(CurlCallbacks.header)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
        try easy.setWriteFunction(CurlCallbacks.write)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        if plan.progress != nil {
            try easy.set(CURLOPT_NOPROGRESS, false)
            try easy.setTransferInfoFunction(CurlCallbacks.transferInfo)
            try easy.set(CURLOPT_XFERINFODATA, pointer: context)
        }
    }

    /// Chooses how curl sends the method and body: GET and HEAD natively, bodies through the read callback.
    private func configureMethod(_ easy: CurlEasyHandle, context: UnsafeMutableRawPointer) throws(HTTPClientError) {
        let method = plan.method
        if method == .head {
            try easy.set(CURLOPT_NOBODY, true)
            return
        }
        if plan.body == nil, method != .post, method != .put, method != .patch {
            if method == .get {
                try easy.set(CURLOPT_HTTPGET, true)
            } else {
                try easy.set(CURLOPT_CUSTOMREQUEST, method.rawValue)
            }
            return
        }
        // Any method with a body (and POST, PUT, PATCH without one, as `Content-Length: 0`).
        try easy.set(CURLOPT_POST, true)
        try easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: plan.body?.count ?? 0)
        try easy.setReadFunction(CurlCallbacks.read)
        try easy.set(CURLOPT_READDATA, pointer: context)
        try easy.setSeekFunction(CurlCallbacks.seek)
        try easy.set(CURLOPT_SEEKDATA, pointer: context)
        if method != .post {
            try easy.set(CURLOPT_CUSTOMREQUEST, method.rawValue)
        }
    }

    /// Releases what the handle pointed at; call after removing it from the multi handle and before reusing it.
    func detach() {
        easy = nil
        curl_slist_free_all(headerList)
        headerList = nil
    }

    /// The final head, with the status curl settled on.
    func finalHead(status: Int?) -> CurlResponseHead {
        var head = parser.head
        if let status, status > 0 { head.status = status }
        return head
    }

    /// Reports the end to the delegate, once; on success also reports upload progress 1.0 if it was not yet.
    func finish(_ result: Result<CurlResponseHead, any Error>) {
        guard !finished else { return }
        finished = true
        if case .success = result, let progress = plan.progress, reportedProgress < 1 {
            reportedProgress = 1
            progress(1)
        }
        delegate.transferFinished(result)
    }

    // MARK: Callbacks (curl thread)

    /// One header line arrived.
    func receiveHeaderLine(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self)
        if let head = parser.consume(line), !headDelivered {
            headDelivered = true
            delegate.transferReceivedHead(head)
        }
    }

    /// Body bytes arrived; false pauses the transfer without consuming them.
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if !headDelivered {
            // No empty line ended the head (an HTTP/0.9 style answer): the body starts, so the head is final.
            headDelivered = true
            delegate.transferReceivedHead(finalHead(status: easy?.info(CURLINFO_RESPONSE_CODE)))
        }
        return delegate.transferReceivedBody(bytes)
    }

    /// Whether `count` more body bytes would pass `plan.maximumBodyBytes`; then the transfer is marked and must be
    /// aborted (the bytes are not delivered).
    func bodyExceedsLimit(adding count: Int) -> Bool {
        guard let limit = plan.maximumBodyBytes else { return false }
        guard receivedBodyBytes + count <= limit else {
            exceededBodyLimit = true
            return true
        }
        receivedBodyBytes += count
        return false
    }

    /// Copies the next part of the body into curl's buffer; 0 at the end.
    func readBody(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        guard let body = plan.body else { return 0 }
        let count = min(body.count - uploadOffset, capacity)
        guard count > 0 else { return 0 }
        body.withUnsafeBytes { bytes in
            buffer.copyMemory(from: bytes.baseAddress! + uploadOffset, byteCount: count)
        }
        uploadOffset += count
        return count
    }

    /// Moves the body back (curl resends it on a new connection or after a redirect); false when out of range.
    func seekBody(to offset: Int) -> Bool {
        guard offset >= 0, offset <= plan.body?.count ?? 0 else { return false }
        uploadOffset = offset
        return true
    }

    /// curl reports how much of the body it has sent.
    func reportUpload(sent: Int) {
        guard let progress = plan.progress, let total = plan.body?.count, total > 0 else { return }
        let fraction = min(1, Double(sent) / Double(total))
        guard fraction > reportedProgress else { return }
        reportedProgress = fraction
        progress(fraction)
    }
}
