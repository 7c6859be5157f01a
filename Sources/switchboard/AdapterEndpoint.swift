import Foundation
import SocketIOAdapter
import SupabaseAdapter
import SwitchboardConfig
import SwitchboardCore
import SwitchboardNet
import XMTPAdapter

extension AdapterEndpoint {
    /// The adapter this endpoint describes, signed in as `user` (for `supabase` with email and password: signed in
    /// now, its tokens refreshed from then on).
    func makeAdapter(http: HTTPClient) async throws -> any ChatAdapter {
        switch adapter {
        case "supabase":
            var configuration = SupabaseAdapter.Configuration(baseURL: url, apiKey: fields["apiKey"] ?? "",
                                                              accessToken: fields["accessToken"] ?? "", localUser: user)
            if let email = fields["email"], let password = fields["password"] {
                let session = SupabasePasswordSession(baseURL: url, apiKey: fields["apiKey"] ?? "", email: email,
                                                      password: password, http: http)
                let (token, signedIn) = try await session.signIn()
                guard user.rawValue.isEmpty || user == signedIn else {
                    throw SwitchboardError(.unauthorized, "\(email) signs in as \(signedIn), not as the endpoint's user \(user)")
                }
                configuration.accessToken = token
                configuration.localUser = signedIn
                configuration.tokenProvider = { try await session.freshToken() }
            }
            if let backend = fields["backend"] { configuration.backend = BackendID(backend) }
            return SupabaseAdapter(configuration: configuration, http: http)
        case "socketio":
            var configuration = SocketIOAdapter.Configuration(baseURL: url, token: fields["token"] ?? "", localUser: user)
            if let backend = fields["backend"] { configuration.backend = BackendID(backend) }
            return SocketIOAdapter(configuration: configuration, http: http)
        default:
            let secret = Hex.decode(fields["groupSecret"] ?? "") ?? []
            let group = conversation
            var configuration = XMTPAdapter.Configuration(baseURL: url, inboxID: user, token: fields["token"] ?? "",
                                                          databasePath: fields["database"] ?? "",
                                                          groupSecret: { id in
                                                              guard id == group else {
                                                                  throw SwitchboardError(.unknownConversation, "no secret for group \(id)")
                                                              }
                                                              return secret
                                                          })
            if let backend = fields["backend"] { configuration.backend = BackendID(backend) }
            return try XMTPAdapter(configuration: configuration, http: http)
        }
    }
}
