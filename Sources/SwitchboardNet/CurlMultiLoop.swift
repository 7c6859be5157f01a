import CCurl
import Foundation
import SwitchboardCore
import Synchronization

/// One curl multi handle driven by one dedicated thread, with a pool of reusable easy handles.
///
/// Other threads only queue commands (start, cancel, resume, shut down) and wake the thread with
/// `curl_multi_wakeup`; every other curl call happens on the thread, so connections, TLS sessions and DNS
/// results cached by the multi handle are reused across requests.
final class CurlMultiLoop: @unchecked Sendable {
    /// What other threads ask of the curl thread.
    private enum Command {
        case start(CurlTransfer)
        case cancel(CurlTransfer)
        case resume(CurlTransfer)
    }

    /// The queue shared with other threads.
    private struct Inbox {
        var commands: [Command] = []
        var shuttingDown = false
        var exited = false
    }

    private let multi: UnsafeMutableRawPointer
    private let configuration: HTTPClient.Configuration
    private let inbox = Locked(Inbox())
    private let openedConnections = Atomic<Int>(0)

    // Curl thread only.
    private var active: [CurlEasyHandle: CurlTransfer] = [:]
    private var idleHandles: [CurlEasyHandle] = []

    /// How many easy handles are kept for reuse.
    private static let maximumIdleHandles = 32
    /// The longest the thread sleeps in `curl_multi_poll` when nothing wakes it.
    private static let pollTimeoutMilliseconds: Int32 = 1000

    /// Makes the multi handle and starts its thread.
    init(configuration: HTTPClient.Configuration) {
        CurlGlobal.initialize()
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.multi = multi
        self.configuration = configuration
        _ = ccurl_multi_setopt_long(multi, CURLMOPT_MAXCONNECTS, max(1, configuration.maximumIdleConnections))
        let thread = Thread { [self] in run() }
        thread.name = "switchboard.curl"
        thread.start()
    }

    /// How many new connections transfers have opened so far (CURLINFO_NUM_CONNECTS summed).
    var connectionsOpened: Int { openedConnections.load(ordering: .relaxed) }

    /// Queues `transfer`; it finishes through its delegate (with `.clientClosed` if the loop has shut down).
    func start(_ transfer: CurlTransfer) {
        if !send(.start(transfer)) {
            transfer.finish(.failure(HTTPClientError(code: .clientClosed, message: "the HTTP client was shut down")))
        }
    }

    /// Stops `transfer` promptly: marks it cancelled and has the curl thread remove its handle.
    func cancel(_ transfer: CurlTransfer) {
        transfer.markCancelled()
        send(.cancel(transfer))
    }

    /// Unpauses a transfer whose delegate refused body bytes.
    func resume(_ transfer: CurlTransfer) { send(.resume(transfer)) }

    /// Lets the thread exit once running transfers end; new transfers fail with `.clientClosed`.
    func shutDown() {
        inbox.withLock { inbox in
            guard !inbox.exited else { return }
            inbox.shuttingDown = true
            curl_multi_wakeup(multi)
        }
    }

    /// Queues a command and wakes the thread; false when the thread has exited.
    @discardableResult
    private func send(_ command: Command) -> Bool {
        inbox.withLock { inbox in
            guard !inbox.exited else { return false }
            if case .start = command, inbox.shuttingDown { return false }
            inbox.commands.append(command)
            // Under the lock, so the thread cannot clean the multi handle up in between.
            curl_multi_wakeup(multi)
            return true
        }
    }

    // MARK: The curl thread

    /// The loop: apply commands, let curl work, collect finished transfers, sleep until there is more to do.
    private func run() {
        while true {
            let commands: [Command]? = inbox.withLock { inbox in
                if inbox.commands.isEmpty, inbox.shuttingDown, active.isEmpty {
                    inbox.exited = true
                    return nil
                }
                defer { inbox.commands.removeAll() }
                return inbox.commands
            }
            guard let commands else { break }
            for command in commands {
                switch command {
                case .start(let transfer): add(transfer)
                case .cancel(let transfer): remove(transfer, result: .failure(CancellationError()))
                case .resume(let transfer): unpause(transfer)
                }
            }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            collectFinished()
            // Shutting down with nothing left running: go straight back up and exit.
            if active.isEmpty, inbox.withLock({ $0.shuttingDown }) { continue }
            curl_multi_poll(multi, nil, 0, Self.pollTimeoutMilliseconds, nil)
        }
        for handle in idleHandles { handle.cleanup() }
        idleHandles.removeAll()
        curl_multi_cleanup(multi)
    }

    /// Sets up a handle for `transfer` and hands it to the multi handle.
    private func add(_ transfer: CurlTransfer) {
        if transfer.isCancelled {
            transfer.finish(.failure(CancellationError()))
            return
        }
        guard let easy = idleHandles.popLast() ?? CurlEasyHandle.make() else {
            transfer.finish(.failure(HTTPClientError(curlCode: CURLE_OUT_OF_MEMORY)))
            return
        }
        do {
            try transfer.configure(easy, with: configuration)
        } catch {
            transfer.detach()
            recycle(easy)
            transfer.finish(.failure(error))
            return
        }
        let code = curl_multi_add_handle(multi, easy.pointer)
        guard code == CURLM_OK else {
            transfer.detach()
            recycle(easy)
            let message = String(cString: curl_multi_strerror(code))
            transfer.finish(.failure(HTTPClientError(code: .transferFailed, message: message)))
            return
        }
        active[easy] = transfer
    }

    /// Takes `transfer` off the multi handle (closing its connection if it was mid-response) and finishes it.
    private func remove(_ transfer: CurlTransfer, result: Result<CurlResponseHead, any Error>) {
        guard let easy = transfer.easy, active[easy] === transfer else { return }
        active[easy] = nil
        curl_multi_remove_handle(multi, easy.pointer)
        openedConnections.add(easy.info(CURLINFO_NUM_CONNECTS) ?? 0, ordering: .relaxed)
        transfer.detach()
        recycle(easy)
        transfer.finish(result)
    }

    /// Continues a paused transfer (curl may deliver the held-back bytes right away).
    private func unpause(_ transfer: CurlTransfer) {
        guard let easy = transfer.easy, active[easy] === transfer else { return }
        curl_easy_pause(easy.pointer, CCURL_PAUSE_CONT)
    }

    /// Finishes the transfers curl reports as done.
    private func collectFinished() {
        var queued: Int32 = 0
        while let message = curl_multi_info_read(multi, &queued) {
            guard message.pointee.msg == CURLMSG_DONE, let pointer = message.pointee.easy_handle else { continue }
            let easy = CurlEasyHandle(pointer: pointer)
            guard let transfer = active[easy] else { continue }
            let code = message.pointee.data.result
            let status = easy.info(CURLINFO_RESPONSE_CODE).flatMap { $0 > 0 ? $0 : nil }
            var result: Result<CurlResponseHead, any Error> = code == CURLE_OK
                ? .success(transfer.finalHead(status: status))
                : .failure(HTTPClientError(curlCode: code, detail: transfer.errorDetail, status: status))
            if transfer.exceededBodyLimit, let limit = transfer.plan.maximumBodyBytes {
                result = .failure(HTTPClientError(responseLargerThan: limit, status: status))
            }
            remove(transfer, result: result)
        }
    }

    /// Resets `easy` and keeps it for the next transfer, or frees it when enough are kept.
    private func recycle(_ easy: CurlEasyHandle) {
        if idleHandles.count < Self.maximumIdleHandles {
            easy.reset()
            idleHandles.append(easy)
        } else {
            easy.cleanup()
        }
    }
}
