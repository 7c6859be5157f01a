import Foundation
import SwitchboardCore

extension JWTSigner {
    /// A token for `role` (and `subject` as `sub`, when given), issued at `now` and expiring `lifetime` seconds later:
    /// what a Supabase project hands out as its `anon` and `service_role` keys, or a signed-in user's access token.
    public func token(role: JWTRole, subject: String? = nil, lifetime: TimeInterval, now: Date = Date()) -> String {
        let issuedAt = Int64(now.timeIntervalSince1970)
        var claims: [String: JSONValue] = ["role": .string(role.name), "iat": .int(issuedAt),
                                           "exp": .int(issuedAt + Int64(lifetime.rounded(.up)))]
        if let subject { claims["sub"] = .string(subject) }
        return sign(claims: claims)
    }
}
