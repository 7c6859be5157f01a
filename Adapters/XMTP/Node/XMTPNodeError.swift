import Foundation
import SwitchboardCore

/// A failure answered in grpc-gateway's shape: `{"code":<grpc code>,"message":"..","details":[]}`.
public struct XMTPNodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The gRPC status codes the node uses, with their HTTP mapping.
    public enum Code: Int, Sendable, Hashable {
        /// 3, HTTP 400: malformed JSON, base64 or protobuf, or a value out of range.
        case invalidArgument = 3
        /// 5, HTTP 404: no such group, inbox or object.
        case notFound = 5
        /// 6, HTTP 409: the group or inbox exists already.
        case alreadyExists = 6
        /// 7, HTTP 403: not a member, or an upload token that does not allow this.
        case permissionDenied = 7
        /// 8, HTTP 429: a subscriber fell too far behind.
        case resourceExhausted = 8
        /// 13, HTTP 500: the store failed.
        case `internal` = 13
        /// 14, HTTP 503: the node is stopping.
        case unavailable = 14
        /// 16, HTTP 401: no or an unknown bearer token.
        case unauthenticated = 16

        /// The HTTP status grpc-gateway uses for the code.
        public var httpStatus: Int {
            switch self {
            case .invalidArgument: 400
            case .notFound: 404
            case .alreadyExists: 409
            case .permissionDenied: 403
            case .resourceExhausted: 429
            case .internal: 500
            case .unavailable: 503
            case .unauthenticated: 401
            }
        }
    }

    /// The gRPC code.
    public let code: Code
    /// A human-readable message (never contains tokens).
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "XMTPNodeError(\(code.rawValue)): \(message)" }

    /// The JSON body `{"code":..,"message":..,"details":[]}`.
    public var jsonBody: Data {
        Data(JSONValue.object([
            ("code", .number(String(code.rawValue))),
            ("message", .string(message)),
            ("details", .array([])),
        ]).serialized.utf8)
    }

    /// The error as a JSON line of a stream: `{"error":{...}}`.
    var streamLine: Data {
        Data(JSONValue.object([("error", .object([
            ("code", .number(String(code.rawValue))),
            ("message", .string(message)),
            ("details", .array([])),
        ]))]).serialized.utf8) + Data("\n".utf8)
    }

    /// `invalidArgument` with `message`.
    static func invalid(_ message: String) -> XMTPNodeError { XMTPNodeError(.invalidArgument, message) }
}
