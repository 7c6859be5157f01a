import SupabaseProtocol
import SwitchboardCore

/// Phoenix channel frames as the Supabase-like realtime server reads them, and Realtime `postgres_changes` filters.
enum PhoenixFuzzing {
    /// Text frames, read as serializer 1.0.0 and 2.0.0: whatever decodes must encode and decode to the same message.
    static func runText(_ bytes: [UInt8]) throws {
        let name = "phoenix-text"
        let text = String(decoding: bytes, as: UTF8.self)
        for version in [PhoenixTextCodec.Version.v1, .v2] {
            guard let message = try? PhoenixTextCodec.decode(text, version: version) else { continue }
            let encoded = PhoenixTextCodec.encode(message, version: version)
            let again: PhoenixMessage
            do {
                again = try PhoenixTextCodec.decode(encoded, version: version)
            } catch {
                throw FuzzFailure(target: name, message: "\(version): \(encoded) does not decode: \(error)")
            }
            try expect(again == message, name, "\(version): \(message) came back as \(again)")
            _ = PhoenixMessage.reply(to: message, status: "error", response: message.payload)
        }
    }

    /// Binary frames: the client's 0x03 push and the server's 0x04 broadcast, each decoded and encoded again.
    static func runBinary(_ bytes: [UInt8]) throws {
        let name = "phoenix-binary"
        if let push = try? PhoenixUserBroadcastPush.decode(bytes) {
            _ = push.jsonPayload
            // Re-encoding can refuse metadata whose compact form exceeds one length byte; that is not a finding.
            if let encoded = try? push.encode() {
                let again: PhoenixUserBroadcastPush
                do {
                    again = try PhoenixUserBroadcastPush.decode(encoded)
                } catch {
                    throw FuzzFailure(target: name, message: "re-encoded push \(encoded) does not decode: \(error)")
                }
                try expect(again == push, name, "push \(push) came back as \(again)")
            }
            let relay = PhoenixUserBroadcast(relaying: push)
            if let encoded = try? relay.encode() {
                let again: PhoenixUserBroadcast
                do {
                    again = try PhoenixUserBroadcast.decode(encoded)
                } catch {
                    throw FuzzFailure(target: name, message: "relayed broadcast \(encoded) does not decode: \(error)")
                }
                try expect(again == relay, name, "broadcast \(relay) came back as \(again)")
            }
        }
        if let broadcast = try? PhoenixUserBroadcast.decode(bytes), let encoded = try? broadcast.encode() {
            let again = try? PhoenixUserBroadcast.decode(encoded)
            try expect(again == broadcast, name, "broadcast \(broadcast) came back as \(String(describing: again))")
        }
    }

    /// Realtime filters (`col=op.value,…`) from text, and subscription params from JSON, evaluated on a few rows.
    static func runRealtimeFilter(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        var filters: [RealtimeFilter] = []
        if let filter = try? RealtimeFilter.parse(text) { filters.append(filter) }
        if let params = JSONValue.parseOrNil(bytes) {
            _ = RealtimeSubscription.id(of: params)
            if let subscription = try? RealtimeSubscription(params: params) { filters.append(subscription.filter) }
        }
        let rows: [[String: JSONValue]] = [
            ["id": 1, "body": "x", "sent": true, "meta": ["a": [1]], "at": nil],
            ["id": "00000000-0000-0000-0000-00000000000A", "body": .string(text), "sent": false, "room_id": 1e300],
        ]
        for filter in filters {
            for row in rows {
                _ = filter.matches(row)
                _ = filter.matches(row, ignoringMissingColumns: true)
            }
            // A row holding exactly the filter's own operands exercises every comparison.
            var own: [String: JSONValue] = [:]
            for condition in filter.conditions { own[condition.column] = .string(condition.values.first ?? "") }
            _ = filter.matches(own)
        }
    }
}
