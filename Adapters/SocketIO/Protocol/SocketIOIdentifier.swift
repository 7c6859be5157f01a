/// The user and conversation IDs of the Socket-style backend (WIRE.md): 1–128 characters of `[A-Za-z0-9._@:-]`,
/// case kept. The server, the adapter and the config files all check IDs with this one rule.
public enum SocketIOIdentifier {
    /// Whether `byte` is one of the ID characters `[A-Za-z0-9._@:-]`.
    public static func isCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: ":"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }

    /// Whether `text` is a valid user or conversation ID.
    public static func isValid(_ text: String) -> Bool {
        (1...128).contains(text.utf8.count) && text.utf8.allSatisfy(isCharacter)
    }
}
