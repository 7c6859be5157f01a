import Foundation
import SwitchboardCore

/// What `PreparedMessage.payload` holds: enough to rebuild the local row when the adapter's database was lost
/// (`{"v":1,"group","key","content","sent_at_ns"}`, content base64).
struct XMTPPreparedPayload: Sendable, Hashable {
    /// The group ID (hex).
    var groupID: String
    /// The idempotency key.
    var key: String
    /// The `EncodedContent` bytes.
    var content: [UInt8]
    /// The local prepare time.
    var sentAtNs: Int64

    /// The payload bytes.
    var data: Data {
        let json: JSONValue = ["v": 1, "group": .string(groupID), "key": .string(key),
                               "content": .string(Data(content).base64EncodedString()), "sent_at_ns": .int(sentAtNs)]
        return Data(json.serialized.utf8)
    }

    /// A payload from its parts.
    init(groupID: String, key: String, content: [UInt8], sentAtNs: Int64) {
        self.groupID = groupID
        self.key = key
        self.content = content
        self.sentAtNs = sentAtNs
    }

    /// Parses payload bytes; nil when they are not an XMTP prepared payload.
    init?(_ data: Data) {
        guard let json = JSONValue.parseOrNil(data), json["v"]?.intValue == 1,
              let group = json["group"]?.stringValue, let key = json["key"]?.stringValue,
              let content = json["content"]?.stringValue.flatMap({ Data(base64Encoded: $0) }) else { return nil }
        groupID = group
        self.key = key
        self.content = [UInt8](content)
        sentAtNs = json["sent_at_ns"]?.intValue ?? 0
    }
}
