/// The `role` claim: Supabase's standard roles, other strings kept verbatim.
public enum JWTRole: Sendable, Hashable, CustomStringConvertible {
    /// `anon`.
    case anon
    /// `authenticated`.
    case authenticated
    /// `service_role`.
    case serviceRole
    /// Any other database role name.
    case other(String)

    /// The role from its claim text.
    public init(_ text: String) {
        switch text {
        case "anon": self = .anon
        case "authenticated": self = .authenticated
        case "service_role": self = .serviceRole
        default: self = .other(text)
        }
    }

    /// The claim text (the database role name).
    public var name: String {
        switch self {
        case .anon: "anon"
        case .authenticated: "authenticated"
        case .serviceRole: "service_role"
        case .other(let text): text
        }
    }

    /// The claim text.
    public var description: String { name }
}
