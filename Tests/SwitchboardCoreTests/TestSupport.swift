import Foundation
import SwitchboardCore
import SwitchboardEngine

/// Builders for timeline messages.
enum Fixture {
    static let room = ConversationID("room-1")
    static let alice = UserID("alice")
    /// A fixed reference time (2023-11-14T22:13:20Z).
    static let epoch = Date(timeIntervalSince1970: 1_700_000_000)

    /// A message `id` at `seconds` after `epoch`.
    static func message(_ id: String, at seconds: Double, text: String? = nil) -> Message {
        Message(id: MessageID(id), conversation: room, sender: alice, content: MessageContent(text: text ?? id),
                timestamp: epoch.addingTimeInterval(seconds), delivery: .received, isOutgoing: false)
    }

    /// Messages `m01`, `m02`... at 1, 2... seconds, for each number in `numbers`.
    static func messages(_ numbers: some Sequence<Int>) -> [Message] {
        numbers.map { message(name($0), at: Double($0)) }
    }

    /// A window of `limit` showing `newest` (message numbers) as the newest page.
    static func window(limit: Int, newest: ClosedRange<Int>, hasOlder: Bool) -> TimelineWindow {
        var window = TimelineWindow(limit: limit)
        window.reset(newest: messages(newest), hasOlder: hasOlder)
        return window
    }

    /// `m07` for 7.
    static func name(_ number: Int) -> String {
        number < 10 ? "m0\(number)" : "m\(number)"
    }
}

extension Array where Element == Message {
    /// The identifiers' raw texts, in order.
    var ids: [String] { map(\.id.rawValue) }
}
