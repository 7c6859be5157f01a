/// One fuzz target: a name and an entry point that feeds bytes to a parser and checks its invariants.
///
/// The entry point never traps on hostile input by design: a crash, a hang or a thrown `FuzzFailure` (a broken
/// invariant, such as a decode → encode → decode round trip that changes the value) is a finding.
public struct FuzzTarget: Sendable {
    /// The name used on the command line and as the corpus folder (`Fuzz/Corpus/<name>/`).
    public let name: String
    /// What the target feeds and checks, in one line.
    public let summary: String
    /// Feeds `bytes` to the parser; throws `FuzzFailure` when an invariant does not hold.
    public let run: @Sendable ([UInt8]) throws -> Void

    /// A target named `name` running `run`.
    public init(name: String, summary: String, run: @escaping @Sendable ([UInt8]) throws -> Void) {
        self.name = name
        self.summary = summary
        self.run = run
    }
}

/// A broken invariant found while fuzzing: what was expected, with the values involved.
public struct FuzzFailure: Error, Sendable, CustomStringConvertible {
    /// The target that found it.
    public let target: String
    /// What did not hold.
    public let message: String

    /// A failure of `target`.
    public init(target: String, message: String) {
        self.target = target
        self.message = message
    }

    /// `target: message`.
    public var description: String { "\(target): \(message)" }
}

/// Throws a `FuzzFailure` for `target` unless `condition` holds.
func expect(_ condition: @autoclosure () throws -> Bool, _ target: String,
            _ message: @autoclosure () -> String) throws {
    guard try condition() else { throw FuzzFailure(target: target, message: message()) }
}

/// Every fuzz target, in the order `make fuzz` runs them.
public enum FuzzTargets {
    /// All targets.
    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "postgrest-query", summary: "PostgREST query string and Prefer/Range headers → parser → SQL builder",
                   run: PostgRESTFuzzing.run),
        FuzzTarget(name: "phoenix-text", summary: "Phoenix text frames v1 and v2: decode → encode → decode",
                   run: PhoenixFuzzing.runText),
        FuzzTarget(name: "phoenix-binary", summary: "Phoenix binary broadcast frames (0x03 push, 0x04 broadcast) round trips",
                   run: PhoenixFuzzing.runBinary),
        FuzzTarget(name: "realtime-filter", summary: "Realtime postgres_changes filters and subscription params",
                   run: PhoenixFuzzing.runRealtimeFilter),
        FuzzTarget(name: "engineio-packet", summary: "Engine.IO v4 packets and the open handshake: decode → encode → decode",
                   run: SocketIOFuzzing.runEngineIOPacket),
        FuzzTarget(name: "socketio-packet", summary: "Socket.IO v5 packets with binary attachments: decode, reassemble, round trip",
                   run: SocketIOFuzzing.runSocketIOPacket),
        FuzzTarget(name: "socketio-session", summary: "Engine.IO/Socket.IO client and server machines driven by hostile frames",
                   run: SocketIOSessionFuzzing.run),
        FuzzTarget(name: "xmtp-content", summary: "XMTP EncodedContent, content types, envelopes: decode → encode → decode",
                   run: XMTPFuzzing.runContent),
        FuzzTarget(name: "protobuf-wire", summary: "Protobuf wire reader over nested messages, re-encoded by the writer",
                   run: XMTPFuzzing.runProtobufWire),
        FuzzTarget(name: "inflate", summary: "DEFLATE / zlib / gzip inflation, and stored blocks of the input inflated back",
                   run: XMTPFuzzing.runInflate),
        FuzzTarget(name: "json", summary: "JSONValue: parse → serialize → parse, objectKeys agreeing with parse",
                   run: JSONFuzzing.run),
        FuzzTarget(name: "jwt", summary: "JWT HS256 verification, base64url canonical round trip, sign → verify",
                   run: JWTFuzzing.run),
        FuzzTarget(name: "http-headers", summary: "HTTP Range resolution against representation lengths, Retry-After",
                   run: HTTPFuzzing.runHeaders),
        FuzzTarget(name: "websocket-frames", summary: "WebSocket frame parser (any chunking) and the protocol state machine",
                   run: HTTPFuzzing.runWebSocket),
        FuzzTarget(name: "bridge-config", summary: "switchboard bridge config files and migrate's endpoint objects: parse and check",
                   run: ConfigFuzzing.run),
    ]

    /// The target named `name`, nil when there is none.
    public static func named(_ name: String) -> FuzzTarget? {
        all.first { $0.name == name }
    }
}
