import SwitchboardCore
/// One Phoenix channel message: `[join_ref, ref, topic, event, payload]`.
public struct PhoenixMessage: Sendable, Hashable {
    /// The ref of the `phx_join` that opened the channel, nil for server broadcasts.
    public var joinRef: String?
    /// The ref of this push (echoed in its reply), nil for server broadcasts.
    public var ref: String?
    /// The channel topic, e.g. `realtime:room:42` or `phoenix`.
    public var topic: String
    /// The event name, e.g. `phx_join`, `phx_reply`, `broadcast`.
    public var event: String
    /// The JSON payload.
    public var payload: JSONValue

    /// A message with every field given.
    public init(joinRef: String?, ref: String?, topic: String, event: String, payload: JSONValue) {
        self.joinRef = joinRef
        self.ref = ref
        self.topic = topic
        self.event = event
        self.payload = payload
    }

    /// A `phx_reply` to `push` with `{"status": status, "response": response}`.
    public static func reply(to push: PhoenixMessage, status: String = "ok", response: JSONValue = .object([:])) -> PhoenixMessage {
        PhoenixMessage(joinRef: push.joinRef, ref: push.ref, topic: push.topic, event: "phx_reply",
                       payload: ["status": .string(status), "response": response])
    }
}
