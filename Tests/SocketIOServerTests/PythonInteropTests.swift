import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
@testable import SocketIOServer

/// The real python-socketio client against the server: connect with auth, live events, acks, refusals, pings.
@Suite("Socket-style server with python-socketio")
struct PythonInteropTests {
    /// The client script (embedded, so the test target needs no Fixtures folder). Arguments: base URL, alice's
    /// token, bob's token, conversation ID, seconds to idle across ping cycles. Prints one `KEY value` line per check.
    static let script = #"""
    import json, sys, threading, time, urllib.request
    import engineio, socketio

    base, alice_token, bob_token, conversation, idle = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5])

    def out(key, value):
        print(key, json.dumps(value), flush=True)

    def rest(method, path, token, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(base + path, data=data, method=method,
                                         headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'})
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())

    # A bad token is refused with a connect error carrying {"message":"unauthorized"}.
    refused = []
    bad = socketio.Client(reconnection=False)
    bad.on('connect_error', lambda data: refused.append(data))
    try:
        bad.connect(base, transports=['websocket'], auth={'token': 'not-a-token'}, wait_timeout=10)
        out('BAD_TOKEN', 'connected')
        bad.disconnect()
    except socketio.exceptions.ConnectionError as error:
        out('BAD_TOKEN', 'refused')
    out('BAD_TOKEN_DATA', refused)

    lock = threading.Lock()
    events = []
    arrived = threading.Condition(lock)

    def record(name):
        def handler(data):
            with arrived:
                events.append([name, data])
                arrived.notify_all()
        return handler

    def wait_for(predicate, timeout=10):
        with arrived:
            return arrived.wait_for(lambda: predicate(events), timeout=timeout)

    alice = socketio.Client(reconnection=False)
    for name in ['message', 'message:edited', 'message:deleted', 'message:reaction', 'message:receipt', 'typing']:
        alice.on(name, record(name))
    pings = [0]
    original = alice.eio._receive_packet
    def counting(pkt):
        if pkt.packet_type == engineio.packet.PING:
            pings[0] += 1
        return original(pkt)
    alice.eio._receive_packet = counting
    alice.connect(base, transports=['websocket'], auth={'token': alice_token}, wait_timeout=10)
    out('CONNECTED', [alice.connected, alice.transport(), alice.get_sid() is not None])

    bob_typing = []
    bob = socketio.Client(reconnection=False)
    bob.on('typing', lambda data: bob_typing.append(data))
    bob.connect(base, transports=['websocket'], auth={'token': bob_token}, wait_timeout=10)

    # Messages POSTed by bob arrive at alice as `message` events with the full message object.
    ids = []
    for index in range(2):
        status, message = rest('POST', '/conversations/%s/messages' % conversation, bob_token,
                               {'clientMessageId': 'py-%d' % index, 'text': 'hello %d' % index})
        ids.append(message['id'])
    wait_for(lambda e: len([x for x in e if x[0] == 'message']) >= 2)
    messages = [x[1] for x in events if x[0] == 'message']
    out('MESSAGES', [m['text'] for m in messages])
    out('MESSAGE_FIELDS', sorted(messages[0].keys()) if messages else [])
    out('MESSAGE_IDS_MATCH', [m['id'] for m in messages] == ids)

    # Changes arrive as their own events.
    rest('PATCH', '/conversations/%s/messages/%s' % (conversation, ids[0]), bob_token, {'text': 'edited'})
    rest('PUT', '/conversations/%s/messages/%s/reaction' % (conversation, ids[0]), bob_token, {'emoji': '👍'})
    rest('PUT', '/conversations/%s/messages/%s/receipt' % (conversation, ids[1]), alice_token, {'state': 'read'})
    rest('DELETE', '/conversations/%s/messages/%s' % (conversation, ids[1]), bob_token)
    wait_for(lambda e: any(x[0] == 'message:deleted' for x in e))
    out('CHANGE_EVENTS', [[x[0], x[1]['id'], x[1]['version']] for x in events if x[0].startswith('message:')])

    # typing with an ack; the other member gets the typing event, the typist does not.
    out('TYPING_ACK', alice.call('typing', {'conversationId': conversation, 'typing': True}, timeout=10))
    out('TYPING_NON_MEMBER_ACK', alice.call('typing', {'conversationId': 'nowhere', 'typing': True}, timeout=10))
    bob.call('typing', {'conversationId': conversation, 'typing': False}, timeout=10)
    wait_for(lambda e: any(x[0] == 'typing' for x in e))
    time.sleep(0.2)
    out('ALICE_SAW_TYPING', [x[1] for x in events if x[0] == 'typing'])
    out('BOB_SAW_TYPING', bob_typing)
    out('PING_APP', alice.call('ping:app', timeout=10))
    out('UNKNOWN_ACK', alice.call('no-such-event', {'x': 1}, timeout=10))

    # Idle across several server ping cycles, then still receive events.
    time.sleep(idle)
    out('PINGS', pings[0])
    out('STILL_CONNECTED', [alice.connected, bob.connected])
    rest('POST', '/conversations/%s/messages' % conversation, bob_token, {'clientMessageId': 'py-late', 'text': 'late'})
    wait_for(lambda e: any(x[0] == 'message' and x[1]['text'] == 'late' for x in e))
    out('LATE_MESSAGE', any(x[0] == 'message' and x[1]['text'] == 'late' for x in events))
    bob.disconnect()
    alice.disconnect()
    out('DONE', True)
    """#

    @Test("python-socketio connects with auth, receives live events, gets acks, is refused with a bad token, outlives pings")
    func interop() async throws {
        let python = try TestPython.interpreter(needing: "python-socketio 5.x and websocket-client")
        try await SocketIOHarness.with(configure: { configuration in
            configuration.pingInterval = .milliseconds(300)
            configuration.pingTimeout = .milliseconds(2000)
        }) { harness in
            let alice = try await harness.register("alice"), bob = try await harness.register("bob")
            try await harness.createConversation("room.1", members: ["bob"], token: alice)
            let scriptURL = harness.directory.appendingPathComponent("interop.py")
            try Data(Self.script.utf8).write(to: scriptURL)
            let result = try await ChildProcess.runDetached(python, [scriptURL.path, harness.base.absoluteString, alice, bob, "room.1", "2.0"],
                                                            timeout: .seconds(120))
            let lines = Dictionary(result.stdout.split(separator: "\n").compactMap { line -> (String, JSONValue)? in
                let parts = line.split(separator: " ", maxSplits: 1)
                guard parts.count == 2, let value = JSONValue.parseOrNil(String(parts[1])) else { return nil }
                return (String(parts[0]), value)
            }, uniquingKeysWith: { _, last in last })
            #expect(result.status == 0, "python failed: \(result.stderr)")
            #expect(lines["BAD_TOKEN"] == "refused")
            #expect(lines["BAD_TOKEN_DATA"] == [["message": "unauthorized"]])
            #expect(lines["CONNECTED"] == [true, "websocket", true])
            #expect(lines["MESSAGES"] == ["hello 0", "hello 1"])
            #expect(lines["MESSAGE_FIELDS"] == ["attachments", "clientMessageId", "conversationId", "createdAt", "deletedAt",
                                                "editedAt", "id", "metadata", "reactions", "receipts", "removedReactions",
                                                "replyTo", "senderId", "text", "version"])
            #expect(lines["MESSAGE_IDS_MATCH"] == true)
            let changes = lines["CHANGE_EVENTS"]?.arrayValue?.compactMap { $0.arrayValue?.first?.stringValue } ?? []
            #expect(changes == ["message:edited", "message:reaction", "message:receipt", "message:deleted"])
            let versions = lines["CHANGE_EVENTS"]?.arrayValue?.compactMap { $0.arrayValue?.last?.intValue } ?? []
            #expect(versions == versions.sorted() && Set(versions).count == versions.count, "versions grow: \(versions)")
            #expect(lines["TYPING_ACK"] == ["ok": true])
            #expect(lines["TYPING_NON_MEMBER_ACK"]?["ok"] == false)
            #expect(lines["ALICE_SAW_TYPING"] == [["conversationId": "room.1", "typing": false, "userId": "bob"]])
            #expect(lines["BOB_SAW_TYPING"] == [["conversationId": "room.1", "typing": true, "userId": "alice"]])
            #expect(lines["PING_APP"]?["ok"] == true)
            #expect(lines["PING_APP"]?["time"]?.stringValue?.hasSuffix("Z") == true)
            #expect(lines["UNKNOWN_ACK"] == ["ok": false, "error": "unknown event"])
            #expect((lines["PINGS"]?.intValue ?? 0) >= 4, "several ping cycles: \(String(describing: lines["PINGS"]))")
            #expect(lines["STILL_CONNECTED"] == [true, true])
            #expect(lines["LATE_MESSAGE"] == true)
            #expect(lines["DONE"] == true, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
            // Every socket is gone and left no listener behind.
            let deadline = TestTime.deadline(after: .seconds(10))
            while (harness.server.activeListeners > 0 || harness.server.openSockets > 0) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(harness.server.activeListeners == 0)
            #expect(harness.server.openSockets == 0)
        }
    }
}
