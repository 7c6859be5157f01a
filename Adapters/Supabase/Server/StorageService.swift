import SwitchboardNet

/// PLACEHOLDER: replaced by the storage implementation.
final class StorageService: Sendable {
    let context: SupabaseServerContext
    init(context: SupabaseServerContext) throws { self.context = context }
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse { .text("not implemented\n", status: 501) }
}
