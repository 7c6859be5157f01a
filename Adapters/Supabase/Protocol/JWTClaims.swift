import SwitchboardCore
import Foundation

/// The verified claims of a JWT.
public struct JWTClaims: Sendable, Hashable {
    /// The `role` claim, nil when absent (the server then uses `anon`).
    public let role: JWTRole?
    /// The `sub` claim.
    public let sub: String?
    /// The `exp` claim, nil when absent.
    public let exp: Date?
    /// Every claim, as the JSON object decoded from the payload.
    public let object: [String: JSONValue]

    /// Claims from a decoded payload object (no validation).
    public init(object: [String: JSONValue]) {
        self.object = object
        role = object["role"]?.stringValue.map(JWTRole.init)
        sub = object["sub"]?.stringValue
        exp = object["exp"]?.doubleValue.map { Date(timeIntervalSince1970: $0) }
    }

    /// The claims as compact JSON with sorted keys, for `request.jwt.claims`.
    public var json: String { JSONValue.object(object).serialized }

    /// The database role to assume: the `role` claim, else `anon`.
    public var effectiveRole: JWTRole { role ?? .anon }
}
