import Foundation
import TestSupport
import Testing
@testable import SwitchboardNet

/// The pure parts of the `wss://` client: frame splitting and the upgrade handshake.
@Suite("wss:// frame parser and upgrade handshake (no sockets)")
struct WebSocketTLSUnitTests {
    private func frame(_ first: UInt8, _ payload: [UInt8]) -> [UInt8] {
        Array(WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: first & 0x0F, payload: Data(payload)), maskingKey: nil))
    }

    @Test("frames of 7-, 16- and 64-bit lengths, fed byte by byte and all at once")
    func parsesLengths() throws {
        let payloads: [[UInt8]] = [[], Array("hi".utf8), [UInt8](repeating: 7, count: 300), [UInt8](repeating: 9, count: 70_000)]
        var wire: [UInt8] = []
        for payload in payloads { wire += frame(0x82, payload) }

        var whole = WebSocketFrameParser(maxFramePayload: 1 << 20)
        whole.append(wire)
        for payload in payloads { #expect(try whole.next() == .init(bits: 0x82, payload: Data(payload))) }
        #expect(try whole.next() == nil)
        #expect(whole.bufferedCount == 0)

        var trickle = WebSocketFrameParser(maxFramePayload: 1 << 20)
        var parsed: [WebSocketFrameParser.Frame] = []
        for byte in wire.prefix(2 + 0 + 2 + 2 + 4 + 300 + 50) {
            trickle.append([byte])
            while let frame = try trickle.next() { parsed.append(frame) }
        }
        #expect(parsed.map(\.payload) == payloads.prefix(3).map { Data($0) })
    }

    @Test("the server role unmasks client frames, refuses unmasked ones, and refuses a 1 GiB header with no payload")
    func serverRole() throws {
        var server = WebSocketFrameParser(maxFramePayload: 1 << 20, expectsMasked: true)
        let payload = Data((0..<300).map { UInt8($0 & 0xFF) })
        server.append(WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: 2, payload: payload), maskingKey: 0xA1B2C3D4))
        #expect(try server.next() == .init(bits: 0x82, payload: payload))

        var unmasked = WebSocketFrameParser(maxFramePayload: 100, expectsMasked: true)
        unmasked.append(frame(0x81, Array("x".utf8)))
        #expect(throws: WebSocketFrameParser.Violation.self) { try unmasked.next() }

        var huge = WebSocketFrameParser(maxFramePayload: 16 << 20, expectsMasked: true)
        huge.append([0x82, 0x80 | 127] + withUnsafeBytes(of: UInt64(1 << 30).bigEndian, Array.init))
        do {
            _ = try huge.next()
            Issue.record("a 1 GiB frame header was accepted")
        } catch {
            #expect(error.code == .messageTooBig)
        }
    }

    @Test("a masked server frame and an oversized frame are violations")
    func violations() {
        var masked = WebSocketFrameParser(maxFramePayload: 100)
        masked.append(WebSocketFrameEncoder.encode(WebSocketOutgoingFrame(opcode: 1, payload: Data("x".utf8)), maskingKey: 0x01020304))
        #expect(throws: WebSocketFrameParser.Violation.self) { try masked.next() }

        var big = WebSocketFrameParser(maxFramePayload: 100)
        big.append(frame(0x82, [UInt8](repeating: 0, count: 101)).prefix(4))
        do {
            _ = try big.next()
            Issue.record("an oversized frame was accepted")
        } catch {
            #expect(error.code == .messageTooBig)
        }
    }

    @Test("Sec-WebSocket-Accept follows RFC 6455's example; the request carries key, version and extra headers")
    func handshake() throws {
        #expect(WebSocketTLSHandshake.acceptValue(for: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
        let target = try WebSocketClientTarget(url: URL(string: "wss://example.com:8443/chat?x=1")!,
                                               headers: ["Authorization": "Bearer t"])
        let handshake = WebSocketTLSHandshake(target: target)
        #expect(Data(base64Encoded: handshake.key)?.count == 16)
        #expect(WebSocketTLSHandshake(target: target).key != handshake.key)
        let request = String(decoding: handshake.request, as: UTF8.self)
        #expect(request.hasPrefix("GET /chat?x=1 HTTP/1.1\r\nHost: example.com:8443\r\n"))
        #expect(request.contains("\r\nSec-WebSocket-Key: \(handshake.key)\r\nSec-WebSocket-Version: 13\r\n"))
        #expect(request.contains("\r\nOrigin: https://example.com:8443\r\nAuthorization: Bearer t\r\n"))
        #expect(request.hasSuffix("\r\n\r\n"))

        let accept = WebSocketTLSHandshake.acceptValue(for: handshake.key)
        let good = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Accept: \(accept)\r\n\r\n"
        let head = Array(good.utf8) + [0x81, 0x00]
        let end = try #require(WebSocketTLSHandshake.headEnd(in: head))
        #expect(end == good.utf8.count)
        try handshake.validate(head: Array(head[..<end]))
        for bad in [
            good.replacingOccurrences(of: accept, with: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="),
            good.replacingOccurrences(of: "101 Switching Protocols", with: "200 OK"),
            good.replacingOccurrences(of: "Upgrade: websocket\r\n", with: ""),
            good.replacingOccurrences(of: "\r\n\r\n", with: "\r\nSec-WebSocket-Extensions: permessage-deflate\r\n\r\n"),
        ] {
            #expect(throws: WebSocketError.self) { try handshake.validate(head: Array(bad.utf8)) }
        }
    }
}

extension NetworkSuites {
    /// `wss://` against Python `websockets` over TLS with certificates made at test time by `openssl`.
    @Suite("wss:// client over our OpenSSL transport")
    struct WebSocketTLSTests {
        /// A temporary directory with a self-signed certificate and key per name.
        final class Certificates: Sendable {
            let directory: URL

            init() throws {
                directory = FileManager.default.temporaryDirectory.appendingPathComponent("wss-tls-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            }

            deinit { try? FileManager.default.removeItem(at: directory) }

            func certificate(_ name: String) -> String { directory.appendingPathComponent("\(name)-cert.pem").path }
            func key(_ name: String) -> String { directory.appendingPathComponent("\(name)-key.pem").path }

            /// Makes `name`'s self-signed certificate for `commonName` with `subjectAltName`.
            func make(_ name: String, commonName: String, subjectAltName: String) async throws {
                let result = try await ChildProcess("/usr/bin/openssl", [
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=\(commonName)",
                    "-addext", "subjectAltName=\(subjectAltName)", "-keyout", key(name), "-out", certificate(name),
                ]).result(timeout: .seconds(30))
                try #require(result.status == 0, "openssl failed: \(result.stderr)")
            }
        }

        private func startServer(_ certificates: Certificates, _ name: String) async throws -> (ChildProcess, Int) {
            let process = try ChildProcess(try NetTest.python(), [
                NetTest.fixture("ws_echo_server.py"), "--certfile", certificates.certificate(name),
                "--keyfile", certificates.key(name),
            ])
            do {
                let line = try await process.line(startingWith: "listening on wss://127.0.0.1:")
                let port = try #require(Int(line.split(separator: ":").last ?? ""))
                return (process, port)
            } catch {
                process.stop()
                throw error
            }
        }

        private func trusting(_ path: String) -> WebSocketClient.Configuration {
            var configuration = WebSocketClient.Configuration()
            configuration.trustedCertificatesFile = path
            return configuration
        }

        private static func tlsThreads() -> Int { NetTest.threadNames().filter { $0 == "wss-client" }.count }

        /// `tlsThreads()` once joined readers are gone: a thread leaves `/proc/self/task` a moment after
        /// `pthread_join` has returned (the kernel wakes the joiner before it removes the task), so this waits up to
        /// `timeout` for the count to reach 0; a reader that was never joined is still counted then.
        private static func tlsThreadsAfterJoin(within timeout: Duration = .seconds(1)) async -> Int {
            _ = await eventually(within: timeout) { tlsThreads() == 0 }
            return tlsThreads()
        }

        private func expectConnectFailure(_ client: WebSocketClient, _ url: URL, containing text: String) async {
            do {
                try await client.connect(url: url)
                Issue.record("\(url) connected although it must not")
                await client.close()
            } catch let error as WebSocketError {
                #expect(error.code == .connectFailed)
                #expect(error.message.contains(text), "\(error)")
                #expect(!client.isOpen)
                var frames = client.frames.makeAsyncIterator()
                #expect(await frames.next() == .close(code: .abnormalClosure, reason: "connection ended without a close frame"))
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }

        @Test("text, binary, fragmented and large echo, extra headers, ping/pong both ways, close 4001 seen by the server")
        func echo() async throws {
            #expect(WebSocketClient.isTLSAvailable)
            let certificates = try Certificates()
            try await certificates.make("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            let (python, port) = try await startServer(certificates, "server")
            defer { python.stop() }

            let client = WebSocketClient(configuration: trusting(certificates.certificate("server")))
            try await client.connect(url: URL(string: "wss://127.0.0.1:\(port)/chat?room=1")!,
                                     headers: ["Authorization": "Bearer secret", "X-Trace": "abc"])
            #expect(client.isOpen)
            // The reader thread names itself as it starts, so give it a moment.
            let deadline = TestTime.deadline(after: .seconds(2))
            while Self.tlsThreads() != 1 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(Self.tlsThreads() == 1)
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "hello ✓")
            #expect(await frames.next() == .text("hello ✓"))
            try await client.send(binary: Data([0, 1, 2, 255]))
            #expect(await frames.next() == .binary(Data([0, 1, 2, 255])))
            let large = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 * 7) })
            try await client.send(binary: large)
            #expect(await frames.next() == .binary(large))
            try await client.send(text: "frag:fragmented over TLS")
            #expect(await frames.next() == .text("fragmented over TLS"))
            try await client.send(text: "request")
            guard case .text(let json)? = await frames.next(),
                  let request = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
                  let headers = request["headers"] as? [String: String] else {
                Issue.record("no request echo")
                return
            }
            #expect(request["path"] as? String == "/chat?room=1")
            #expect(headers["Authorization"] == "Bearer secret")
            #expect(headers["X-Trace"] == "abc")
            #expect(headers["Host"] == "127.0.0.1:\(port)")
            try await client.ping()
            try await client.ping(Data("custom".utf8))
            try await client.send(text: "ping-me")
            #expect(await frames.next() == .text("pong-received"))

            await client.close(code: 4001, reason: "bye from swift")
            guard case .close(let code, _)? = await frames.next() else {
                Issue.record("no close frame")
                return
            }
            #expect(code == 4001)
            #expect(await frames.next() == nil)
            #expect(!client.isOpen)
            #expect(await Self.tlsThreadsAfterJoin() == 0)
            await #expect(throws: WebSocketError.self) { try await client.send(text: "late") }
            let line = try await python.line(startingWith: "closed code=")
            #expect(line == "closed code=4001 reason=bye from swift")
        }

        @Test("the server closes first with 4002; a host name (SNI + DNS check) works; CR/LF headers are refused")
        func serverCloseAndHostName() async throws {
            let certificates = try Certificates()
            try await certificates.make("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            let (python, port) = try await startServer(certificates, "server")
            defer { python.stop() }

            let client = WebSocketClient(configuration: trusting(certificates.certificate("server")))
            try await client.connect(url: URL(string: "wss://localhost:\(port)/")!)
            var frames = client.frames.makeAsyncIterator()
            try await client.send(text: "close:4002:server bye")
            #expect(await frames.next() == .close(code: 4002, reason: "server bye"))
            #expect(await frames.next() == nil)
            await client.close()
            #expect(await Self.tlsThreadsAfterJoin() == 0)

            let injected = WebSocketClient(configuration: trusting(certificates.certificate("server")))
            do {
                try await injected.connect(url: URL(string: "wss://127.0.0.1:\(port)/")!, headers: ["X-Evil": "a\r\nHost: b"])
                Issue.record("a header with CR LF was sent")
            } catch let error as WebSocketError {
                #expect(error.code == .invalidHeader)
            }
        }

        @Test("an untrusted certificate, a host-name mismatch and a non-TLS port all fail with TLS errors")
        func verificationFailures() async throws {
            let certificates = try Certificates()
            try await certificates.make("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            try await certificates.make("other", commonName: "other.example", subjectAltName: "DNS:other.example")
            let (python, port) = try await startServer(certificates, "server")
            defer { python.stop() }
            let (otherPython, otherPort) = try await startServer(certificates, "other")
            defer { otherPython.stop() }

            // Not trusted: the system CAs know nothing of a self-signed certificate.
            await expectConnectFailure(WebSocketClient(), URL(string: "wss://127.0.0.1:\(port)/")!,
                                       containing: "certificate verification failed")
            // Trusted chain, wrong name: the certificate is for other.example only.
            let trustOther = trusting(certificates.certificate("other"))
            await expectConnectFailure(WebSocketClient(configuration: trustOther),
                                       URL(string: "wss://127.0.0.1:\(otherPort)/")!, containing: "IP address mismatch")
            await expectConnectFailure(WebSocketClient(configuration: trustOther),
                                       URL(string: "wss://localhost:\(otherPort)/")!, containing: "hostname mismatch")
            // Trusting a different certificate than the server presents.
            await expectConnectFailure(WebSocketClient(configuration: trustOther),
                                       URL(string: "wss://127.0.0.1:\(port)/")!, containing: "certificate verification failed")
            // A port that speaks plain WebSocket, not TLS.
            let plain = HTTPServer()
            plain.webSocket("/ws") { connection in for await _ in connection.frames {} }
            let plainPort = try plain.start()
            await expectConnectFailure(WebSocketClient(configuration: trusting(certificates.certificate("server"))),
                                       URL(string: "wss://127.0.0.1:\(plainPort)/ws")!, containing: "TLS")
            await plain.stop()
            // A missing trust file is reported, not ignored.
            await expectConnectFailure(WebSocketClient(configuration: trusting(certificates.directory.path + "/missing.pem")),
                                       URL(string: "wss://127.0.0.1:\(port)/")!, containing: "trusted certificates file")
            #expect(await Self.tlsThreadsAfterJoin() == 0)
        }

        @Test("a wss:// client dropped without close() closes with 1001 and its reader thread is joined", .enabled(if: NetTest.isIsolated, NetTest.isolationReason))
        func droppedClient() async throws {
            let certificates = try Certificates()
            try await certificates.make("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            let (python, port) = try await startServer(certificates, "server")
            defer { python.stop() }
            var client: WebSocketClient? = WebSocketClient(configuration: trusting(certificates.certificate("server")))
            try await client?.connect(url: URL(string: "wss://127.0.0.1:\(port)/")!)
            try await client?.ping()
            client = nil
            let line = try await python.line(startingWith: "closed code=")
            #expect(line == "closed code=1001 reason=client released")
            #expect(await Self.tlsThreadsAfterJoin(within: .seconds(5)) == 0)  // closed in the background
        }

        @Test("200 wss:// connect/close cycles leak no threads or descriptors", .enabled(if: NetTest.isIsolated, NetTest.isolationReason))
        func connectCloseCycles() async throws {
            let certificates = try Certificates()
            try await certificates.make("server", commonName: "localhost", subjectAltName: "DNS:localhost,IP:127.0.0.1")
            let (python, port) = try await startServer(certificates, "server")
            defer { python.stop() }
            let configuration = trusting(certificates.certificate("server"))
            let url = URL(string: "wss://127.0.0.1:\(port)/")!

            func cycle(_ index: Int) async throws {
                let client = WebSocketClient(configuration: configuration)
                try await client.connect(url: url)
                if index % 10 == 0 {
                    var frames = client.frames.makeAsyncIterator()
                    try await client.send(text: "echo \(index)")
                    #expect(await frames.next() == .text("echo \(index)"))
                }
                await client.close()
            }
            func settle(_ condition: () -> Bool) async throws {
                let deadline = TestTime.deadline(after: .seconds(5))
                while !condition() && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
            }

            for index in 0..<10 { try await cycle(index) }
            try await settle { NetTest.descriptors(onPort: port) == 0 }
            let threads = NetTest.threadCount(), descriptors = NetTest.descriptorCount()
            let virtualKiB = NetTest.virtualMemoryKiB()
            let started = ContinuousClock.now
            for index in 0..<200 { try await cycle(index) }
            let elapsed = ContinuousClock.now - started
            try await settle { NetTest.descriptors(onPort: port) == 0 && NetTest.threadCount() <= threads }
            let afterThreads = NetTest.threadCount(), afterDescriptors = NetTest.descriptorCount()
            let afterVirtualKiB = NetTest.virtualMemoryKiB()
            print("wss:// leak check: 200 cycles in \(elapsed); threads \(threads) → \(afterThreads), "
                  + "fds \(descriptors) → \(afterDescriptors), VmSize \(virtualKiB / 1024) → \(afterVirtualKiB / 1024) MiB, "
                  + "sockets on port \(port): \(NetTest.descriptors(onPort: port)), wss-client threads: \(Self.tlsThreads())")
            #expect(await Self.tlsThreadsAfterJoin() == 0)
            #expect(NetTest.descriptors(onPort: port) == 0)
            #expect(abs(afterThreads - threads) <= 3, "threads: \(threads) → \(afterThreads)")
            #expect(abs(afterDescriptors - descriptors) <= 3, "fds: \(descriptors) → \(afterDescriptors)")
            #expect(afterVirtualKiB - virtualKiB < 128 * 1024, "VmSize grew \((afterVirtualKiB - virtualKiB) / 1024) MiB")
        }
    }
}
