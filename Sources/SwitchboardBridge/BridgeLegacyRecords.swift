import Foundation
import SwitchboardCore
import SwitchboardStore

/// Moves a pair's records from where bridges before the per-pair tables kept them (ledger rows among the engine's
/// messages in a conversation named after the pair, prepared copies in the outbox, change cursors keyed by each
/// side's conversation, waiting operations in the engine's queue with the target backend in their key) into the
/// pair's own records, so a bridge upgraded mid-flight finishes what its predecessor started.
///
/// Idempotent and cheap once done: each record moves in the same transaction that removes its old form, and a
/// store with nothing left to move is only read.
enum BridgeLegacyRecords {
    /// The old ledger rows' metadata key naming the backend the original came from (absent in the oldest rows).
    static let originKey = "bridge.from"
    /// The old ledger rows' metadata key naming the target of a copy staged without its prepared bytes.
    static let stagedTowardsKey = "bridge.stagedTowards"

    /// Adopts every old record of the pair `pair` between `a` and `b` in `store`.
    static func adopt(pair: String, a: BridgeSide, b: BridgeSide, store: any Store) async throws {
        try await adoptLedger(pair: pair, store: store)
        try await adoptCursors(pair: pair, sides: [a, b], store: store)
        try await adoptWaitingOperations(pair: pair, a: a, b: b, store: store)
        try await BridgeQuarantine(store: store, pair: pair).adoptLegacyEntries()
    }

    /// Old ledger rows become ledger entries; their ID mappings stay, their outbox entries go with them.
    private static func adoptLedger(pair: String, store: any Store) async throws {
        let ledger = ConversationID(pair)
        while true {
            let rows = try await store.read { try $0.messages(in: ledger, before: nil, limit: 500) }
            guard !rows.isEmpty else { return }
            try await store.write { tx in
                for row in rows {
                    let outbox = try tx.outboxEntry(row.id)
                    var towards: BackendID?
                    var prepared: PreparedMessage?
                    if row.delivery == .pending {
                        if let staged = row.content.metadata[stagedTowardsKey] {
                            towards = BackendID(staged)
                        } else if let outbox, outbox.prepared != nil {
                            towards = outbox.backend
                            prepared = outbox.prepared
                        }
                    }
                    let copy = BridgeCopy(pair: pair, messageID: row.id, origin: row.content.metadata[originKey].map(BackendID.init),
                                          sender: row.sender, text: row.content.text, sentAt: row.timestamp,
                                          editedAt: row.editedAt, deletedAt: row.deletedAt, pendingTowards: towards,
                                          prepared: prepared)
                    let mappings = try tx.mappings(of: row.id)
                    try tx.removeMessage(row.id)  // with its mappings and outbox entry
                    for mapping in mappings { try tx.insertMapping(mapping) }
                    try tx.upsertBridgeCopy(copy)
                }
            }
        }
    }

    /// Each side's old change cursor (kept under the side's conversation, where pairs sharing a side shared it)
    /// seeds the pair's own, unless the pair has one already. The old cursor stays for other pairs of that side.
    private static func adoptCursors(pair: String, sides: [BridgeSide], store: any Store) async throws {
        for side in sides {
            guard try await store.read({ try $0.bridgeCursor(pair: pair, backend: side.backend) }) == nil,
                  let legacy = try await store.read({ try $0.cursor(conversation: side.conversation, backend: side.backend,
                                                               kind: .changes) })
            else { continue }
            try await store.write { try $0.setBridgeCursor(legacy, pair: pair, backend: side.backend) }
        }
    }

    /// Old waiting reactions, receipts and replies of this pair move into its queue: a reaction or receipt waiting
    /// for a copy on one side when its message is this pair's (in its ledger, or mapped on the other side's
    /// conversation); a reply when it was read from the other side's conversation.
    private static func adoptWaitingOperations(pair: String, a: BridgeSide, b: BridgeSide, store: any Store) async throws {
        let operations = try await store.read { try $0.allPendingOperations() }
        guard operations.contains(where: { $0.waitKey.rawValue.hasPrefix("bridge:") || $0.waitKey.rawValue.hasPrefix("bridge-reply:") })
        else { return }
        try await store.write { tx in
            for operation in operations {
                for (target, source) in [(a, b), (b, a)] {
                    guard let key = try adoptedKey(of: operation, pair: pair, from: source, to: target, in: tx) else { continue }
                    try tx.removePending(operation.id)
                    try tx.enqueueBridgeOperation(PendingOperation(waitKey: key, kind: operation.kind, payload: operation.payload,
                                                                   createdAt: operation.createdAt), pair: pair)
                    break
                }
            }
        }
    }

    /// The pair's wait key for an old operation waiting on `target` for a change from `source`, or nil when it
    /// is not this pair's.
    private static func adoptedKey(of operation: PendingOperation, pair: String, from source: BridgeSide,
                                   to target: BridgeSide, in tx: any StoreTransaction) throws -> WaitKey? {
        let copyPrefix = "bridge:\(target.backend):"
        let old = operation.waitKey.rawValue
        if old.hasPrefix(copyPrefix) {
            let id = MessageID(String(old.dropFirst(copyPrefix.count)))
            let ours = try tx.bridgeCopy(id)?.pair == pair
                || tx.mappings(of: id).contains { $0.backend == source.backend && $0.conversation == source.conversation }
            return ours ? WaitKey.copy(id, towards: target.backend) : nil
        }
        let replyPrefix = "bridge-reply:\(target.backend):\(source.backend):"
        if old.hasPrefix(replyPrefix), operation.kind == "reply",
           let message = try? JSONDecoder().decode(RemoteMessage.self, from: operation.payload),
           message.conversation == source.conversation {
            let reply = RemoteID(String(old.dropFirst(replyPrefix.count)))
            return WaitKey.reply(to: reply, from: source.backend, to: target.backend)
        }
        return nil
    }
}
