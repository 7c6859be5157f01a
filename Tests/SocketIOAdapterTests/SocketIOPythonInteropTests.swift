import Foundation
import SocketIOAdapter
import SocketIOProtocol
import SwitchboardCore
import Testing
import TestSupport

/// The adapter's Socket.IO client driver (`SocketIOClient`, the one `liveEvents` runs) against the real
/// python-socketio server (`socketio.AsyncServer(async_mode='aiohttp')`).
@Suite("Socket.IO client driver against python-socketio", .serialized)
struct SocketIOPythonInteropTests {
    /// The server script (embedded, so the test target needs no Fixtures folder). Argument: the ping interval in
    /// seconds. Prints `PORT n`, serves until standard input closes. It accepts a connect only with auth token
    /// `t0k`, emits a WIRE.md-shaped `message` 0.1 s after each connect, acks `hello` (echo), `stats` (its
    /// counters) and `drop` (then closes that client's Engine.IO session), and serves `/dead/`: an Engine.IO
    /// endpoint that opens and connects the namespace but never pings.
    static let script = #"""
import asyncio, json, sys
import socketio
from aiohttp import web

ping_interval = float(sys.argv[1]) if len(sys.argv) > 1 else 0.3
stats = {'connects': 0, 'refused': 0, 'disconnects': 0, 'dead_connects': 0}
# A pong may be late by up to 3 s (a loaded CI machine stalls threads for a second now and then); the test
# below runs 4 s of 0.3 s ping cycles, so a client that never answered would still be dropped within it.
sio = socketio.AsyncServer(async_mode='aiohttp', ping_interval=ping_interval, ping_timeout=3.0)
app = web.Application()
sio.attach(app)

MESSAGE = {"id": "42", "conversationId": "c1", "clientMessageId": "3f2a-key", "senderId": "alice", "text": "hi",
           "replyTo": None, "attachments": [{"url": "http://x/files/f1", "name": "a.png", "mimeType": "image/png",
                                             "size": 12, "sha256": "ab" * 32}],
           "metadata": {"k": "v"}, "createdAt": "2026-11-30T10:00:00.123Z", "editedAt": None, "deletedAt": None,
           "reactions": [{"userId": "bob", "emoji": "\U0001F44D", "at": "2026-11-30T10:00:01.000Z"}],
           "receipts": [{"userId": "bob", "state": "read", "at": "2026-11-30T10:00:02.000Z"}], "version": 57}

async def greet(sid):
    await sio.sleep(0.1)
    await sio.emit('message', MESSAGE, to=sid)

@sio.event
async def connect(sid, environ, auth):
    if not isinstance(auth, dict) or auth.get('token') != 't0k':
        stats['refused'] += 1
        raise socketio.exceptions.ConnectionRefusedError('unauthorized')
    stats['connects'] += 1
    sio.start_background_task(greet, sid)

@sio.event
async def disconnect(sid, *args):
    stats['disconnects'] += 1

@sio.on('hello')
async def hello(sid, data):
    return {'ok': True, 'echo': data}

@sio.on('stats')
async def get_stats(sid, *args):
    return dict(stats)

@sio.on('drop')
async def drop(sid, *args):
    async def later():
        await sio.sleep(0.05)
        await sio.eio.disconnect(sio.manager.eio_sid_from_sid(sid, '/'))
    sio.start_background_task(later)
    return {'ok': True}

# An Engine.IO endpoint that opens, accepts the namespace connect and then never pings: a dead connection.
async def dead(request):
    ws = web.WebSocketResponse()
    await ws.prepare(request)
    stats['dead_connects'] += 1
    await ws.send_str('0' + json.dumps({"sid": "dead%d" % stats['dead_connects'], "upgrades": [],
                                        "pingInterval": 300, "pingTimeout": 200, "maxPayload": 1000000}))
    async for msg in ws:
        if msg.type == web.WSMsgType.TEXT and msg.data.startswith('40'):
            await ws.send_str('40{"sid":"dead-ns"}')
    return ws

app.router.add_get('/dead/', dead)

async def main():
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, '127.0.0.1', 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    print('PORT', port, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    await runner.cleanup()

asyncio.run(main())
"""#

    @Test("connects with auth, receives the event, gets acks, survives ping cycles, reconnects after a server drop")
    func connectEventAckPingsReconnect() async throws {
        let python = try await offCooperativePool { try PythonSocketIOServer.start(pingInterval: 0.3) }
        defer { python.stop() }
        var configuration = SocketIOClient.Configuration(url: python.baseURL, auth: ["token": "t0k"])
        configuration.backoff = ReconnectBackoff(initialDelay: .milliseconds(200))
        let client = SocketIOClient(configuration: configuration)
        let log = EventLog(client.events)
        await client.start()

        #expect(await waitUntil { log.connects == 1 })
        #expect(await waitUntil { log.messages.count == 1 })
        let message = try #require(log.messages.first.flatMap(SocketIOWire.message))
        #expect(message.remoteID == "42")
        #expect(message.idempotencyKey == "3f2a-key")
        #expect(message.text == "hi")
        #expect(message.attachments.first?.filename == "a.png")
        #expect(SocketIOWire.reactions(log.messages[0], target: "42", conversation: "c1").map(\.symbol) == ["👍"])

        let echo = try await client.emitWithAck("hello", [["n": 1]])
        #expect(echo == [["ok": true, "echo": ["n": 1]]])

        // Many server ping cycles (0.3 s interval, 3 s timeout): our pongs keep the connection.
        try await Task.sleep(for: .seconds(4))
        #expect(await client.isConnected)
        #expect(await client.connectionCount == 1)
        let stats = try await client.emitWithAck("stats")
        #expect(stats.first?["connects"]?.intValue == 1)
        #expect(stats.first?["disconnects"]?.intValue == 0)

        // The server closes our Engine.IO session: the driver reports the loss and reconnects on its own.
        let dropped = try await client.emitWithAck("drop")
        #expect(dropped == [["ok": true]])
        #expect(await waitUntil { log.disconnects >= 1 })
        #expect(await waitUntil { log.connects == 2 })
        #expect(await waitUntil { log.messages.count == 2 })
        let after = try await client.emitWithAck("stats")
        #expect(after.first?["connects"]?.intValue == 2)
        await client.stop()
        #expect(await waitUntil { log.ended })
    }

    @Test("a bad token gets a connect error (not retried); a good token then connects")
    func badTokenConnectError() async throws {
        let python = try await offCooperativePool { try PythonSocketIOServer.start(pingInterval: 0.3) }
        defer { python.stop() }
        var configuration = SocketIOClient.Configuration(url: python.baseURL, auth: ["token": "wrong"])
        configuration.backoff = ReconnectBackoff(initialDelay: .milliseconds(100))
        let client = SocketIOClient(configuration: configuration)
        let log = EventLog(client.events)
        await client.start()
        #expect(await waitUntil { log.connectErrors.count == 1 })
        #expect(log.connectErrors.first == "unauthorized")
        try await Task.sleep(for: .milliseconds(500))
        #expect(log.connectErrors.count == 1, "a refused connect was retried")
        #expect(log.connects == 0)
        await #expect(throws: SwitchboardError.self) { try await client.emitWithAck("hello", ["x"]) }

        await client.setAuth(["token": "t0k"], reconnectNow: true)
        #expect(await waitUntil { log.connects == 1 })
        let stats = try await client.emitWithAck("stats")
        #expect(stats.first?["refused"]?.intValue == 1)
        await client.stop()
    }

    @Test("a connection whose pings stop is detected dead by the ping timeout and reconnected")
    func deadConnectionDetected() async throws {
        let python = try await offCooperativePool { try PythonSocketIOServer.start(pingInterval: 0.3) }
        defer { python.stop() }
        var configuration = SocketIOClient.Configuration(url: python.baseURL)
        configuration.path = "/dead/"
        configuration.backoff = ReconnectBackoff(initialDelay: .milliseconds(100))
        let client = SocketIOClient(configuration: configuration)
        let log = EventLog(client.events)
        await client.start()
        #expect(await waitUntil { log.connects >= 1 })
        #expect(await waitUntil { log.disconnectReasons.contains("ping timeout") })
        #expect(await waitUntil { log.connects >= 2 })
        await client.stop()
    }
}

/// Records a `SocketIOClient`'s events as they arrive.
final class EventLog: Sendable {
    private struct State {
        var connects = 0
        var disconnectReasons: [String] = []
        var connectErrors: [String] = []
        var messages: [JSONValue] = []
        var ended = false
    }

    private let state = Locked(State())

    /// Starts recording `events`.
    init(_ events: AsyncStream<SocketIOClient.Event>) {
        Task { [self] in
            for await event in events { record(event) }
            state.withLock { $0.ended = true }
        }
    }

    private func record(_ event: SocketIOClient.Event) {
        state.withLock { state in
            switch event {
            case .connected: state.connects += 1
            case .disconnected(let reason): state.disconnectReasons.append(reason)
            case .connectError(let message, _): state.connectErrors.append(message)
            case .event(let event): if event.name == "message" { state.messages.append(event.arguments.first ?? .null) }
            }
        }
    }

    var connects: Int { state.withLock { $0.connects } }
    var disconnects: Int { state.withLock { $0.disconnectReasons.count } }
    var disconnectReasons: [String] { state.withLock { $0.disconnectReasons } }
    var connectErrors: [String] { state.withLock { $0.connectErrors } }
    var messages: [JSONValue] { state.withLock { $0.messages } }
    var ended: Bool { state.withLock { $0.ended } }
}

/// The python-socketio server script running as a child process.
final class PythonSocketIOServer: Sendable {
    private let process: Process
    private let input: Pipe
    private let directory: URL
    /// `http://127.0.0.1:PORT`.
    let baseURL: URL

    private init(process: Process, input: Pipe, directory: URL, baseURL: URL) {
        self.process = process
        self.input = input
        self.directory = directory
        self.baseURL = baseURL
    }

    /// Writes the script, starts it with the venv's python and waits for its port: blocks while Python starts, so
    /// tests call it through `offCooperativePool`.
    static func start(pingInterval: Double) throws -> PythonSocketIOServer {
        let python = try TestPython.interpreter(needing: "python-socketio 5.x, python-engineio 4.x and aiohttp")
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("sio-interop-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let script = directory.appendingPathComponent("server.py")
        try Data(SocketIOPythonInteropTests.script.utf8).write(to: script)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [script.path, String(pingInterval)]
        let output = Pipe(), input = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        process.standardInput = input
        try process.run()
        let lines = OutputLines(output.fileHandleForReading)
        let deadline = Date().addingTimeInterval(20)
        var port: Int?
        while port == nil, Date() < deadline, process.isRunning {
            port = lines.allLines().first { $0.hasPrefix("PORT ") }.flatMap { Int($0.dropFirst(5)) }
            if port == nil { Thread.sleep(forTimeInterval: 0.02) }
        }
        guard let port else {
            process.terminate()
            throw TestSetupError("the python-socketio server did not print its port")
        }
        return PythonSocketIOServer(process: process, input: input, directory: directory,
                                    baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// Closes its standard input (it exits), terminating it if it lingers.
    func stop() {
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}
