import CLibUV
import Foundation
import SwitchboardCore

/// One libuv loop on a thread of its own (`sb-http`): every socket of an `HTTPServer` is read, written and timed
/// out here, so an open connection costs its socket and a few kilobytes, never a thread.
///
/// Objects that live on the loop (listener, connections) are touched only from jobs run here; other threads hand
/// work over with `execute`, which queues the job and wakes the loop through a `uv_async_t`.
final class ServerEventLoop: @unchecked Sendable {
    /// The loop; used only on the loop's thread once `start` has run.
    let loop: UnsafeMutablePointer<uv_loop_t>
    /// A 64 KiB buffer every read lands in; a read callback consumes it before the next read can reuse it.
    let readBuffer: UnsafeMutableRawBufferPointer
    private let wakeup: UnsafeMutablePointer<uv_async_t>
    private struct Job {
        var run: @Sendable () -> Void
        var ifDropped: (@Sendable () -> Void)?
    }

    private let inbox = Locked<(jobs: [Job], closed: Bool)>(([], false))
    private let threadID = Locked<pthread_t?>(nil)
    private let thread = Locked<ThreadHandle?>(nil)
    private let exited = CivetwebCompletion()

    /// A loop that is not running yet; handles may be set up on it from the creating thread until `start`.
    init() throws(HTTPServerError) {
        loop = .allocate(capacity: 1)
        wakeup = .allocate(capacity: 1)
        readBuffer = .allocate(byteCount: 64 * 1024, alignment: 16)
        let status = uv_loop_init(loop)
        guard status == 0 else {
            loop.deallocate()
            wakeup.deallocate()
            readBuffer.deallocate()
            throw HTTPServerError(.startFailed, "libuv could not make a loop: \(Self.describe(status))")
        }
        loop.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        uv_async_init(loop, wakeup) { handle in
            guard let data = handle?.pointee.loop.pointee.data else { return }
            Unmanaged<ServerEventLoop>.fromOpaque(data).takeUnretainedValue().runJobs()
        }
    }

    /// Starts the loop's thread; the loop keeps running until `shutDown`.
    func start() throws(HTTPServerError) {
        let ready = DispatchSemaphore(value: 0)
        let handle = JoinableThread.start(name: "sb-http") { [self] in
            // libuv writes with write(2), which raises SIGPIPE on this thread when a peer has gone (Linux has no
            // MSG_NOSIGNAL for it). Blocked here, the write fails with EPIPE and only that connection closes; the
            // process's own disposition, which child processes inherit, is left alone.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            threadID.withLock { $0 = pthread_self() }
            ready.signal()
            uv_run(loop, UV_RUN_DEFAULT)
            closeInbox()
            // Close whatever is left (the wake-up handle at least) and let their callbacks run.
            uv_walk(loop, { handle, _ in
                if let handle, uv_is_closing(handle) == 0 { uv_close(handle, nil) }
            }, nil)
            uv_run(loop, UV_RUN_DEFAULT)
            uv_loop_close(loop)
            exited.complete()
        }
        guard let handle else { throw HTTPServerError(.startFailed, "the server's thread could not start") }
        thread.withLock { $0 = ThreadHandle(handle: handle) }
        ready.wait()
    }

    /// Whether the caller is on the loop's thread.
    var isCurrent: Bool {
        threadID.withLock { id in id.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Runs `job` on the loop's thread (soon, in order with other jobs). Once the loop has shut down the job is
    /// dropped and `ifDropped` runs instead, on the caller's thread or the one shutting down, so a waiter never hangs.
    func execute(_ job: @escaping @Sendable () -> Void, ifDropped: (@Sendable () -> Void)? = nil) {
        // The wake-up is sent under the lock, so it can never reach a handle the loop has already closed.
        let accepted = inbox.withLock { inbox -> Bool in
            guard !inbox.closed else { return false }
            inbox.jobs.append(Job(run: job, ifDropped: ifDropped))
            uv_async_send(wakeup)
            return true
        }
        if !accepted { ifDropped?() }
    }

    /// Runs `job` on the loop's thread and returns its result; `nil` when the loop has already shut down.
    func submit<T: Sendable>(_ job: @escaping @Sendable () -> T) async -> T? {
        await withCheckedContinuation { continuation in
            execute({ continuation.resume(returning: job()) }, ifDropped: { continuation.resume(returning: nil) })
        }
    }

    private func runJobs() {
        while true {
            let jobs = inbox.withLock { inbox -> [Job] in
                defer { inbox.jobs.removeAll(keepingCapacity: true) }
                return inbox.jobs
            }
            if jobs.isEmpty { return }
            for job in jobs { job.run() }
        }
    }

    /// Stops the loop once the jobs queued so far have run, closes every handle left, and waits for the thread.
    func shutDown() async {
        let started = threadID.withLock { $0 != nil }
        execute { [self] in uv_stop(loop) }
        if started { await exited.wait() } else { closeInbox() }
        // The thread has left the loop; join it, off the cooperative pool, so it is really gone on return.
        if let handle = thread.withLock({ $0.take() }) {
            await CivetwebLibrary.offloaded { _ = pthread_join(handle.handle, nil) }
        }
    }

    /// Refuses further jobs (before the wake-up handle goes away); jobs queued but not run get their fallbacks,
    /// so nobody waits for them forever.
    private func closeInbox() {
        let stranded = inbox.withLock { inbox -> [Job] in
            inbox.closed = true
            defer { inbox.jobs.removeAll() }
            return inbox.jobs
        }
        for job in stranded { job.ifDropped?() }
    }

    deinit {
        if threadID.withLock({ $0 == nil }) {
            // Never started (the listener could not bind): close the wake-up handle so the loop can close.
            uv_close(UV.handle(wakeup), nil)
            uv_run(loop, UV_RUN_DEFAULT)
            uv_loop_close(loop)
        }
        loop.deallocate()
        wakeup.deallocate()
        readBuffer.deallocate()
    }

    /// libuv's text for an error code.
    static func describe(_ status: Int32) -> String {
        String(cString: uv_strerror(status))
    }
}

/// A thread handle that crosses to the thread joining it.
struct ThreadHandle: @unchecked Sendable {
    let handle: pthread_t
}

/// Casts between libuv's handle types, which all begin with `uv_handle_t`.
enum UV {
    /// Any handle as `uv_handle_t`.
    static func handle<T>(_ pointer: UnsafeMutablePointer<T>) -> UnsafeMutablePointer<uv_handle_t> {
        UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: uv_handle_t.self)
    }

    /// A TCP handle as a stream.
    static func stream(_ pointer: UnsafeMutablePointer<uv_tcp_t>) -> UnsafeMutablePointer<uv_stream_t> {
        UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: uv_stream_t.self)
    }

    /// Milliseconds for a libuv timer (at least 1).
    static func milliseconds(_ duration: Duration) -> UInt64 {
        UInt64(CivetwebLibrary.milliseconds(duration))
    }

    /// A NUL-terminated C buffer as a string.
    static func cText(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The numeric address and port of a socket address.
    static func describe(_ storage: sockaddr_storage) -> (address: String, port: Int) {
        var storage = storage
        let family = storage.ss_family
        var text = [CChar](repeating: 0, count: 64)
        return withUnsafePointer(to: &storage) { pointer -> (String, Int) in
            if family == sa_family_t(AF_INET6) {
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    _ = uv_ip6_name(address, &text, text.count)
                    return (cText(text), Int(UInt16(bigEndian: address.pointee.sin6_port)))
                }
            }
            return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                _ = uv_ip4_name(address, &text, text.count)
                return (cText(text), Int(UInt16(bigEndian: address.pointee.sin_port)))
            }
        }
    }
}
