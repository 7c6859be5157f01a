/// Why an incoming frame could not be decoded; the server closes only that socket.
public enum PhoenixFrameError: Error, Sendable, Hashable {
    /// The text frame is not valid UTF-8 JSON.
    case invalidJSON
    /// The JSON is not the expected v1 object or v2 array shape; the string names the problem.
    case invalidShape(String)
    /// The binary frame is empty, truncated, or has a kind the server does not accept.
    case invalidBinary(String)
    /// A field is too long to encode in a one-byte length prefix.
    case fieldTooLong(String)
}
