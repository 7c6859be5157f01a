import Foundation
import TestSupport
import Testing
import SwitchboardNet

extension NetworkSuites {
    /// Connect/close cycles must not leave threads or descriptors behind.
    @Suite("WebSocket client leak check")
    struct WebSocketLeakTests {
        private struct Snapshot: CustomStringConvertible {
            var threads = NetTest.threadCount()
            var descriptors = NetTest.descriptorCount()
            var webSocketThreads = NetTest.webSocketThreadCount()
            var virtualKiB = NetTest.virtualMemoryKiB()
            var description: String {
                "threads=\(threads) fds=\(descriptors) civetweb-ws*=\(webSocketThreads) VmSize=\(virtualKiB / 1024) MiB"
            }
        }

        private func cycle(port: Int, echo: Bool) async throws {
            let client = WebSocketClient()
            try await client.connect(url: URL(string: "ws://127.0.0.1:\(port)/echo")!)
            if echo {
                var frames = client.frames.makeAsyncIterator()
                try await client.send(text: "ping")
                #expect(await frames.next() == .text("ping"))
            }
            await client.close()
        }

        /// Polls until `condition` holds (at most `timeout`), since the server closes its end asynchronously.
        private func settle(within timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws {
            let deadline = TestTime.deadline(after: timeout)
            while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        }

        @Test("a client dropped without close() closes with 1001 and its thread is joined; pings reach our server", .enabled(if: NetTest.isIsolated, NetTest.isolationReason))
        func droppedClient() async throws {
            let server = HTTPServer()
            let observations = WebSocketObservations()
            server.webSocket("/echo") { connection in
                for await frame in connection.frames { observations.record(frame) }
                observations.connectionEnded()
            }
            let port = try server.start()
            do {
                var client: WebSocketClient? = WebSocketClient()
                try await client?.connect(url: URL(string: "ws://127.0.0.1:\(port)/echo")!)
                try await client?.ping()
                // Our client's thread in civetweb's read loop; the server's side costs no thread of its own.
                #expect(NetTest.webSocketThreadCount() == 1)
                client = nil
                #expect(try await observations.waitForEnds(1))
                #expect(observations.closes == [.close(code: .goingAway, reason: "client released")])
                try await settle { NetTest.webSocketThreadCount() == 0 }
                #expect(NetTest.webSocketThreadCount() == 0)

                let refused = WebSocketClient()
                await #expect(throws: WebSocketError.self) {
                    try await refused.connect(url: URL(string: "ws://127.0.0.1:\(port)/elsewhere")!)
                }
                var frames = refused.frames.makeAsyncIterator()
                #expect(await frames.next() == .close(code: .abnormalClosure, reason: "connection ended without a close frame"))
                #expect(await frames.next() == nil)
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }

        @Test("1,000 connect/close cycles against our server leak no threads or descriptors", .enabled(if: NetTest.isIsolated, NetTest.isolationReason))
        func connectCloseCycles() async throws {
            let server = HTTPServer()
            server.webSocket("/echo") { connection in
                for await frame in connection.frames {
                    if case .text(let text) = frame { try? await connection.send(text: text) }
                }
            }
            let port = try server.start()
            defer { Task { await server.stop() } }

            for index in 0..<20 { try await cycle(port: port, echo: index % 2 == 0) }
            try await settle { NetTest.descriptors(onPort: port) == 1 }
            let before = Snapshot()
            let started = ContinuousClock.now
            for index in 0..<1000 { try await cycle(port: port, echo: index % 100 == 0) }
            let elapsed = ContinuousClock.now - started
            // The last connections' threads may still be ending on a loaded machine: wait for them (a leak never ends).
            try await settle {
                NetTest.descriptors(onPort: port) == 1 && NetTest.threadCount() <= before.threads
                    && NetTest.webSocketThreadCount() == 0
            }
            let after = Snapshot()
            let portDescriptors = NetTest.descriptors(onPort: port)
            print("WebSocket leak check: 1000 cycles in \(elapsed); before \(before); after \(after); "
                  + "sockets on port \(port): \(portDescriptors) (the listener)")

            #expect(after.webSocketThreads == 0, "threads still in a WebSocket read loop: \(after.webSocketThreads)")
            #expect(portDescriptors == 1, "only the listening socket should remain")
            #expect(abs(after.threads - before.threads) <= 3, "threads: \(before.threads) → \(after.threads)")
            #expect(abs(after.descriptors - before.descriptors) <= 3, "fds: \(before.descriptors) → \(after.descriptors)")
            // A thread that exited but was never joined leaves its stack (8 MiB) mapped: 1,000 of them would add ~8 GiB.
            #expect(after.virtualKiB - before.virtualKiB < 256 * 1024, "VmSize grew \((after.virtualKiB - before.virtualKiB) / 1024) MiB")
            await server.stop()
        }
    }
}
