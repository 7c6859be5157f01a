import SwitchboardNet

/// PLACEHOLDER: replaced by the realtime implementation.
final class RealtimeHub: Sendable {
    let context: SupabaseServerContext
    init(context: SupabaseServerContext) { self.context = context }
    func start() throws {}
    func serve(_ connection: WebSocketConnection) async { await connection.close() }
    func stop() async {}
}
