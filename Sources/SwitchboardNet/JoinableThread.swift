import COpenSSL
import Foundation

/// A named POSIX thread that can be joined, for loops that own a socket or an event loop (the `wss://` reader,
/// the server's event loop): unlike `Thread`, its owner can wait until it has really exited.
enum JoinableThread {
    private final class Body: Sendable {
        let name: String
        let run: @Sendable () -> Void
        init(name: String, run: @escaping @Sendable () -> Void) {
            self.name = name
            self.run = run
        }
    }

    /// Starts `body` on a new thread named `name` (at most 15 bytes reach the kernel); nil when none could start.
    static func start(name: String, _ body: @escaping @Sendable () -> Void) -> pthread_t? {
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        var handle = pthread_t()
        let status = pthread_create(&handle, nil, { argument in
            guard let argument else { return nil }
            let body = Unmanaged<Body>.fromOpaque(argument).takeRetainedValue()
            body.name.withCString { copenssl_name_this_thread($0) }
            body.run()
            return nil
        }, context)
        guard status == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            return nil
        }
        return handle
    }
}
