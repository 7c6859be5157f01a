import Foundation
import SocketIOProtocol
import SwitchboardCore

/// A Socket.IO client machine and a server session (Engine.IO session + Socket.IO connection) wired back to back,
/// driven by a program read from the fuzz bytes: hostile frames injected on either side, queued frames delivered,
/// the clock advanced, events emitted and acknowledged, transports reopened and closed.
///
/// Invariants: each side reports `closed` at most once per connection and stays silent after it; every ack the
/// client reports (answered, timed out or dropped) is one it allocated and still waited for, reported once.
enum SocketIOSessionFuzzing {
    static let name = "socketio-session"
    static let queueLimit = 64

    static func run(_ bytes: [UInt8]) throws {
        var model = Model()
        var input = FuzzInput(bytes)
        var steps = 0
        while !input.isAtEnd, steps < 256 {
            steps += 1
            try model.step(&input)
        }
    }

    struct Model {
        let start = ContinuousClock.now
        var now = ContinuousClock.now
        var server = EngineIOServerSession(sid: "fuzz", configuration: .init(pingInterval: .seconds(1), pingTimeout: .seconds(1),
                                                                            maxPayload: 4096))
        var connection = SocketIOServerConnection(maxAttachments: 4, maxAttachmentBytes: 4096)
        var serverClosedReports = 0
        var client = SocketIOClientMachine(configuration: .init(auth: ["token": "t"], handshakeTimeout: .seconds(2),
                                                                connectTimeout: .seconds(2)))
        var clientClosedReports = 0
        var clientWaitingAcks = Set<Int>()
        var toServer: [EngineIOFrame] = []
        var toClient: [EngineIOFrame] = []

        init() {
            now = start
            let opened = client.handle(.transportOpened(at: now))
            let started = server.start(at: now)
            try? absorbClient(opened)
            try? absorbServer(started)
        }

        mutating func step(_ input: inout FuzzInput) throws {
            let op = input.byte()
            switch op % 10 {
            case 0: try feedServer(.frameReceived(.text(input.text()), at: now))
            case 1: try feedServer(.frameReceived(.binary(Data(input.chunk())), at: now))
            case 2: try absorbClient(client.handle(.frameReceived(.text(input.text()), at: now)))
            case 3: try absorbClient(client.handle(.frameReceived(.binary(Data(input.chunk())), at: now)))
            case 4:
                if !toServer.isEmpty { try feedServer(.frameReceived(toServer.removeFirst(), at: now)) }
            case 5:
                if !toClient.isEmpty { try absorbClient(client.handle(.frameReceived(toClient.removeFirst(), at: now))) }
            case 6:
                now += .milliseconds(Int(input.byte()) * 40)
                try feedServer(.tick(at: now))
                try absorbClient(client.handle(.tick(at: now)))
            case 7:
                let wantsAck = input.byte() & 1 == 1
                let name = input.text()
                let argument = input.text()
                if let emitted = try? client.emit(name.isEmpty ? "e" : name, [.string(argument)], ack: wantsAck,
                                                  ackDeadline: now + .seconds(1)) {
                    if let ackID = emitted.ackID {
                        try expect(clientWaitingAcks.insert(ackID).inserted, SocketIOSessionFuzzing.name, "ack id \(ackID) allocated twice")
                    }
                    try absorbClient(emitted.outputs)
                }
            case 8:
                let choice = input.byte()
                switch choice % 4 {
                case 0: if let outputs = try? client.ack(id: Int(choice >> 2), [1]) { try absorbClient(outputs) }
                case 1: Self.queue(connection.emit("news", [.string(input.text())]), to: &toClient)
                case 2: Self.queue(connection.disconnect(), to: &toClient)
                default: try absorbClient(client.handle(.disconnectRequested))
                }
            default:
                switch input.byte() % 4 {
                case 0:
                    // A new transport: the client's old connection (if any) ends, a fresh server session starts.
                    let outputs = client.handle(.transportOpened(at: now))
                    try absorbClient(outputs, reopening: true)
                    server = EngineIOServerSession(sid: "fuzz", configuration: server.configuration)
                    serverClosedReports = 0
                    connection.reset()
                    toServer = []
                    toClient = []
                    try absorbServer(server.start(at: now))
                case 1: try absorbClient(client.handle(.transportClosed(reason: "fuzz")))
                case 2: try feedServer(.transportClosed(reason: "fuzz"))
                default: try feedServer(.closeRequested)
                }
            }
            try expect(client.pendingAckIDs == clientWaitingAcks.sorted(), SocketIOSessionFuzzing.name,
                       "client waits for acks \(client.pendingAckIDs), the model for \(clientWaitingAcks.sorted())")
        }

        private mutating func feedServer(_ input: EngineIOServerSession.Input) throws {
            let wasClosed = server.isClosed
            let outputs = server.handle(input)
            try expect(!wasClosed || outputs.isEmpty, SocketIOSessionFuzzing.name, "closed server session answered \(outputs)")
            try absorbServer(outputs)
        }

        private mutating func absorbServer(_ outputs: [EngineIOServerSession.Output]) throws {
            for output in outputs {
                switch output {
                case .send(let frame): Self.queue([frame], to: &toClient)
                case .closeTransport: break
                case .closed:
                    serverClosedReports += 1
                    try expect(serverClosedReports == 1, SocketIOSessionFuzzing.name, "server session reported closed twice")
                    connection.reset()
                case .deliverText, .deliverBinary:
                    let decision: SocketIOServerDecision?
                    do {
                        decision = try connection.receive(output)
                    } catch {
                        // Malformed Socket.IO: the server closes the connection.
                        try feedServer(.closeRequested)
                        continue
                    }
                    switch decision {
                    case .connect(let namespace, _)?:
                        if namespace == "/" {
                            Self.queue(connection.accept(namespace: namespace, sid: "s1"), to: &toClient)
                        } else {
                            Self.queue(connection.reject(namespace: namespace, message: "Invalid namespace"), to: &toClient)
                        }
                    case .event(let event)?:
                        _ = try? event.resolvedArguments()
                        if let id = event.ackID { Self.queue(connection.ack(id: id, event.arguments, namespace: event.namespace), to: &toClient) }
                    default: break
                    }
                }
            }
        }

        private mutating func absorbClient(_ outputs: [SocketIOClientMachine.Output], reopening: Bool = false) throws {
            for output in outputs {
                switch output {
                case .send(let frame): Self.queue([frame], to: &toServer)
                case .closed:
                    clientClosedReports += 1
                    try expect(clientClosedReports == 1, SocketIOSessionFuzzing.name, "client reported closed twice for one connection")
                case .ackReceived(let id, _, _), .ackFailed(let id, _):
                    try expect(clientWaitingAcks.remove(id) != nil, SocketIOSessionFuzzing.name,
                               "client reported ack \(id), which it was not waiting for")
                case .event(let event):
                    _ = try? event.resolvedArguments()
                    if let id = event.ackID, let answer = try? client.ack(id: id, [.string(event.name)]) {
                        for case .send(let frame) in answer { Self.queue([frame], to: &toServer) }
                    }
                case .closeTransport, .engineOpened, .connected: break
                }
            }
            if reopening { clientClosedReports = 0 }
        }

        private static func queue(_ frames: [EngineIOFrame], to target: inout [EngineIOFrame]) {
            for frame in frames where target.count < SocketIOSessionFuzzing.queueLimit { target.append(frame) }
        }
    }
}
