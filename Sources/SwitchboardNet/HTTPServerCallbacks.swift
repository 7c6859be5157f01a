import CCivetweb
import SwitchboardCore

/// The C entry points civetweb calls on its worker threads.
///
/// They are static members of a nonisolated type (never closures in `main.swift`, which would be main-actor
/// isolated and trap), and find the server through the callback data or the connection's user data.
enum HTTPServerCallbacks {
    private static func core(_ data: UnsafeMutableRawPointer?) -> HTTPServerCore? {
        data.map { Unmanaged<HTTPServerCore>.fromOpaque($0).takeUnretainedValue() }
    }

    private static func socket(_ connection: OpaquePointer) -> WebSocketConnection? {
        mg_get_user_connection_data(connection).map {
            Unmanaged<WebSocketConnection>.fromOpaque($0).takeUnretainedValue()
        }
    }

    /// `mg_request_handler` for every HTTP request.
    static func request(_ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> Int32 {
        guard let connection, let core = core(data) else { return 0 }
        return core.serve(connection)
    }

    /// `mg_websocket_connect_handler`: 0 lets the handshake proceed, 1 refuses (we already answered).
    static func webSocketConnect(_ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) -> Int32 {
        // civetweb passes a const connection here; writing the refusal is what its own 404 path does at this stage.
        guard let connection, let core = core(data) else { return 1 }
        return core.acceptWebSocket(connection) ? 0 : 1
    }

    /// `mg_websocket_ready_handler`: the 101 response went out.
    static func webSocketReady(_ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
        guard let connection, let core = core(data) else { return }
        core.webSocketOpened(connection)
    }

    /// `mg_websocket_data_handler`: one frame; 1 keeps reading, 0 makes civetweb close the connection.
    static func webSocketData(_ connection: OpaquePointer?, _ bits: Int32, _ payload: UnsafeMutablePointer<CChar>?,
                              _ length: Int, _ data: UnsafeMutableRawPointer?) -> Int32 {
        guard let connection, let socket = socket(connection) else { return 0 }
        return socket.channel.frameReceived(on: connection, bits: bits, payload: payload, length: length) ? 1 : 0
    }

    /// `mg_websocket_close_handler`: civetweb left the read loop and will close the socket.
    static func webSocketClose(_ connection: OpaquePointer?, _ data: UnsafeMutableRawPointer?) {
        guard let connection, let core = core(data),
              let pointer = mg_get_user_connection_data(connection) else { return }
        mg_set_user_connection_data(connection, nil)
        let socket = Unmanaged<WebSocketConnection>.fromOpaque(pointer).takeRetainedValue()
        core.webSocketClosed(socket)
    }

    /// `http_error`: civetweb's own error answers (malformed request, header too large, stalled client). Its default
    /// page echoes the client's HTTP version into the status line, which breaks on garbage such as
    /// `THIS IS NOT HTTP`, so we write a clean `HTTP/1.1` response and close. civetweb answers an unparsable
    /// `Content-Length` with 411; RFC 9112 §6.3 says 400, which is what we send. 0 means "handled".
    static func httpError(_ connection: OpaquePointer?, _ status: Int32, _ message: UnsafePointer<CChar>?) -> Int32 {
        guard let connection else { return 1 }
        let status = status == 411 ? 400 : status
        let detail = message.map { String(cString: $0) } ?? ""
        let text = detail.isEmpty ? "error \(status)\n" : detail + "\n"
        HTTPServerWire(connection: connection).respond(status: Int(status), text: text, keepAlive: false)
        return 0
    }

    /// `log_message`: forwards civetweb's error lines to the configured log; 1 stops civetweb printing them.
    static func logMessage(_ connection: OpaquePointer?, _ message: UnsafePointer<CChar>?) -> Int32 {
        guard let connection, let context = mg_get_context(connection),
              let core = core(mg_get_user_data(context)) else { return 1 }
        if let message { core.configuration.logger.warning(String(cString: message)) }
        return 1
    }
}
