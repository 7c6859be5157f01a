import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// Realtime's REST broadcast API: `POST /realtime/v1/api/broadcast` with `{"messages": [{"topic", "event",
/// "payload", "private"}]}` (supabase-js's `httpSend`), and `POST /realtime/v1/api/broadcast/<topic>/events/<event>`
/// with the payload as the body, JSON or `application/octet-stream` (realtime-py's `http_send`). Both answer 202.
///
/// A valid key or token is required (401 otherwise). Private channels would be authorised by `realtime.messages`
/// policies, which this server does not have: broadcasting to one takes the service role (403 otherwise).
extension RealtimeHub {
    /// The route prefix.
    static let broadcastPath = "/realtime/v1/api/broadcast"

    /// Answers one broadcast API request.
    func handleBroadcastAPI(_ request: HTTPServerRequest) -> HTTPServerResponse {
        func refuse(_ status: Int, _ message: String) -> HTTPServerResponse {
            HTTPServerResponse(status: status, headers: ["Content-Type": "application/json"],
                               body: Data(JSONValue.object([("error", .string(message))]).serialized.utf8))
        }
        guard request.method == .post else { return refuse(405, "only POST is allowed") }
        let identity: RequestIdentity
        do {
            identity = try context.authenticator.identity(headers: request.headers)
        } catch {
            return refuse(401, error.message)
        }
        guard request.body.count <= context.configuration.maxRESTBodySize else { return refuse(413, "the body is too large") }
        let messages: [(topic: String, event: String, isPrivate: Bool, json: JSONValue?, binary: [UInt8]?)]
        var rest = Substring(request.path.dropFirst(Self.broadcastPath.count))
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.isEmpty {
            guard let list = JSONValue.parseOrNil(request.body)?["messages"]?.arrayValue else {
                return refuse(400, "the body must be {\"messages\": [{\"topic\", \"event\", \"payload\"}]}")
            }
            var parsed: [(topic: String, event: String, isPrivate: Bool, json: JSONValue?, binary: [UInt8]?)] = []
            for item in list {
                guard let topic = item["topic"]?.stringValue, !topic.isEmpty, let event = item["event"]?.stringValue,
                      let payload = item["payload"] else {
                    return refuse(400, "each message needs a topic, an event and a payload")
                }
                parsed.append((topic, event, item["private"]?.boolValue ?? false, payload, nil))
            }
            messages = parsed
        } else {
            // /<topic>/events/<event>, each segment percent-encoded by the client.
            let parts = rest.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1] == "events", let topic = parts[0].removingPercentEncoding, !topic.isEmpty,
                  let event = parts[2].removingPercentEncoding, !event.isEmpty else {
                return refuse(404, "expected \(Self.broadcastPath)/<topic>/events/<event>")
            }
            let isPrivate = request.queryValue("private") == "true"
            if request.headers["Content-Type"]?.lowercased().hasPrefix("application/octet-stream") == true {
                messages = [(topic, event, isPrivate, nil, Array(request.body))]
            } else {
                guard let payload = JSONValue.parseOrNil(request.body) else { return refuse(400, "the body must be JSON") }
                messages = [(topic, event, isPrivate, payload, nil)]
            }
        }
        if messages.contains(where: \.isPrivate), !identity.isServiceRole {
            return refuse(403, "broadcasting to a private channel needs the service role (no realtime.messages policies here)")
        }
        for message in messages {
            let topic = message.topic.hasPrefix("realtime:") ? message.topic : "realtime:" + message.topic
            broadcast(topic: topic, isPrivate: message.isPrivate, event: message.event, json: message.json, binary: message.binary)
        }
        return HTTPServerResponse(status: 202)
    }
}
