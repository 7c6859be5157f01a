/// Why a JWT was rejected; the server answers any of these with 401 `PGRST301`.
public struct JWTError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The category of failure.
    public enum Reason: Sendable, Hashable {
        /// Not three dot-separated segments.
        case malformed
        /// A segment is not canonical unpadded base64url.
        case invalidBase64
        /// The header or payload is not a JSON object, or a time claim is not a number.
        case invalidJSON
        /// The header's `alg` is not HS256 (including `none`), or `typ` is not JWT.
        case unsupportedAlgorithm
        /// The HMAC does not match.
        case invalidSignature
        /// `exp` is in the past.
        case expired
        /// `nbf` or `iat` is in the future beyond the leeway.
        case notYetValid
    }

    /// The category of failure.
    public let reason: Reason
    /// A PostgREST-style message that never contains the token or secret.
    public let message: String

    /// An error with `reason` and `message`.
    public init(_ reason: Reason, _ message: String) {
        self.reason = reason
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
