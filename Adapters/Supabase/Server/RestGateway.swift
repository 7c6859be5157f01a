import SwitchboardNet

/// PLACEHOLDER: replaced by the REST gateway implementation.
final class RestGateway: Sendable {
    let context: SupabaseServerContext
    init(context: SupabaseServerContext) { self.context = context }
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse { .text("not implemented\n", status: 501) }
}
