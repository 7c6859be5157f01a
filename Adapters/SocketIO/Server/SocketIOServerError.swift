import Foundation
import SwitchboardCore

/// A failure answered as `{"error":{"code":"snake_case","message":"human text"}}` with a fitting HTTP status.
public struct SocketIOServerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status.
    public let status: Int
    /// The stable snake_case code, e.g. `edit_window_closed`.
    public let code: String
    /// A human-readable message (never contains tokens).
    public let message: String

    /// Makes an error.
    public init(status: Int, code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    /// `status code: message`.
    public var description: String { "SocketIOServerError(\(status) \(code)): \(message)" }

    /// The body `{"error":{"code","message"}}`.
    public var jsonBody: Data {
        Data(JSONValue.object([("error", .object([("code", .string(code)), ("message", .string(message))]))]).serialized.utf8)
    }

    /// 400 `bad_request`.
    static func badRequest(_ message: String) -> SocketIOServerError { .init(status: 400, code: "bad_request", message) }
    /// 401 `unauthorized`.
    static func unauthorized(_ message: String) -> SocketIOServerError { .init(status: 401, code: "unauthorized", message) }
    /// 403 with `code` (`forbidden`, `not_sender`, `edit_window_closed`, `delete_window_closed`).
    static func forbidden(_ code: String = "forbidden", _ message: String) -> SocketIOServerError {
        .init(status: 403, code: code, message)
    }
    /// 404 `not_found`.
    static func notFound(_ message: String) -> SocketIOServerError { .init(status: 404, code: "not_found", message) }
    /// 409 `conflict`.
    static func conflict(_ message: String) -> SocketIOServerError { .init(status: 409, code: "conflict", message) }
    /// 413 `too_large`.
    static func tooLarge(_ message: String) -> SocketIOServerError { .init(status: 413, code: "too_large", message) }
    /// 500 `internal`.
    static func `internal`(_ message: String) -> SocketIOServerError { .init(status: 500, code: "internal", message) }
}
