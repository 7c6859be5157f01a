import Foundation
import SwitchboardCore

/// What the server is configured with; fixed at init.
struct MemoryConfiguration: Sendable {
    var backendID: BackendID
    var scheme: IDScheme
    var reactionPolicy: ReactionPolicy
    var editWindow: TimeInterval
    var deleteWindow: TimeInterval
    var limits: MemoryWire.Limits
}

/// The whole server: tables, indexes, fault settings and live subscribers, mutated only under one lock.
///
/// Every mutation is expressed as a `JournalRecord` (the resulting row), journaled, then applied by the same
/// `apply` that replays a journal; after applying, the change is delivered live.
struct ServerState: Sendable {
    let configuration: MemoryConfiguration
    var journal: MemoryJournal?
    var conversations: [ConversationID: ConversationState] = [:]
    var rows: [Int64: MemoryMessageRow] = [:]
    var seqByRemoteID: [RemoteID: Int64] = [:]
    var reactions: [RemoteID: [ReactionSlot: ReactionRow]] = [:]
    var receipts: [RemoteID: [UserID: ReceiptRow]] = [:]
    var blobs: [String: Data] = [:]
    var lastSeq: Int64 = 0
    var lastVersion: Int64 = 0
    var faults = FaultSettings()
    var subscribers: [UInt64: Subscriber] = [:]
    var nextSubscriberToken: UInt64 = 0
    var dropEpoch: UInt64 = 0

    init(configuration: MemoryConfiguration, journal: MemoryJournal?, replaying records: [JournalRecord]) throws {
        self.configuration = configuration
        self.journal = journal
        for record in records {
            if case .header(let scheme, _) = record, scheme != configuration.scheme {
                throw SwitchboardError(.invalidArgument,
                                       "journal was written under the \(scheme.rawValue) scheme, not \(configuration.scheme.rawValue)")
            }
            apply(record)
        }
        if records.isEmpty, let journal {
            try journal.append(.header(scheme: configuration.scheme, backend: configuration.backendID))
        }
    }

    // MARK: Journal and apply

    /// Journals `record`, then applies it; nothing changes if the journal write fails.
    mutating func commit(_ record: JournalRecord) throws {
        try journal?.append(record)
        apply(record)
    }

    /// Applies one record to the tables (live or during replay).
    mutating func apply(_ record: JournalRecord) {
        switch record {
        case .header:
            break
        case .conversation(let id, let members):
            conversations[id, default: ConversationState()].members.formUnion(members)
        case .member(let id, let user):
            conversations[id, default: ConversationState()].members.insert(user)
        case .message(let row):
            let old = rows[row.seq]
            rows[row.seq] = row
            lastSeq = max(lastSeq, row.seq)
            lastVersion = max(lastVersion, row.version)
            // Taken out of the dictionary (not copied from it) so the mutation below stays in place: a copy
            // would duplicate the conversation's whole feed and index on every message.
            var conversation = conversations.removeValue(forKey: row.conversation) ?? ConversationState()
            if old == nil {
                conversation.insertSeq(row.seq)
                conversation.seqByKey[row.idempotencyKey] = row.seq
                seqByRemoteID[row.remoteID] = row.seq
            }
            conversation.touch(.message(seq: row.seq), from: old?.version, to: row.version)
            conversations[row.conversation] = conversation
        case .reaction(let row):
            let old = reactions[row.target]?[row.slot]
            reactions[row.target, default: [:]][row.slot] = row
            lastVersion = max(lastVersion, row.version)
            conversations[row.conversation, default: ConversationState()]
                .touch(.reaction(target: row.target, slot: row.slot), from: old?.version, to: row.version)
        case .receipt(let row):
            let old = receipts[row.target]?[row.user]
            receipts[row.target, default: [:]][row.user] = row
            lastVersion = max(lastVersion, row.version)
            conversations[row.conversation, default: ConversationState()]
                .touch(.receipt(target: row.target, user: row.user), from: old?.version, to: row.version)
        case .blob(let location, _, let data):
            blobs[location] = data
        }
    }

    /// The next change version.
    private var nextVersion: Int64 { lastVersion + 1 }

    // MARK: Checks

    /// Throws a retryable transport error while `user` is offline.
    func requireOnline(_ user: UserID) throws {
        if faults.offlineUsers.contains(user) {
            throw SwitchboardError(.transport, "\(user) is offline (injected)", retryable: true)
        }
    }

    /// Throws unless the conversation exists and `user` is a member.
    func requireMember(_ user: UserID, of conversation: ConversationID) throws {
        guard let state = conversations[conversation] else {
            throw SwitchboardError(.unknownConversation, "no conversation \(conversation)")
        }
        guard state.members.contains(user) else {
            throw SwitchboardError(.unauthorized, "\(user) is not a member of \(conversation)")
        }
    }

    /// The row of `target` in `conversation`, or `notFound`.
    func row(_ target: RemoteID, in conversation: ConversationID) throws -> MemoryMessageRow {
        guard let seq = seqByRemoteID[target], let row = rows[seq], row.conversation == conversation else {
            throw SwitchboardError(.notFound, "no message \(target) in \(conversation)")
        }
        return row
    }

    /// Parses a decimal cursor.
    static func number(_ cursor: Cursor) throws -> Int64 {
        guard let value = Int64(cursor.rawValue), value >= 0 else {
            throw SwitchboardError(.invalidArgument, "cursor \(cursor) is not a Memory cursor")
        }
        return value
    }

    // MARK: Conversations

    /// Creates a conversation, or adds any missing members to an existing one.
    mutating func createConversation(_ id: ConversationID, members: [UserID]) throws {
        guard !id.rawValue.isEmpty else { throw SwitchboardError(.invalidArgument, "conversation ID is empty") }
        if let existing = conversations[id] {
            for user in members where !existing.members.contains(user) {
                try commit(.member(conversation: id, user: user))
            }
        } else {
            var unique: [UserID] = []
            for user in members where !unique.contains(user) { unique.append(user) }
            try commit(.conversation(id: id, members: unique))
        }
    }

    /// Adds a member to an existing conversation.
    mutating func addMember(_ user: UserID, to id: ConversationID) throws {
        guard let existing = conversations[id] else {
            throw SwitchboardError(.unknownConversation, "no conversation \(id)")
        }
        if !existing.members.contains(user) { try commit(.member(conversation: id, user: user)) }
    }

    // MARK: Publish

    /// Stores a message once per idempotency key and reports its row; applies publish faults.
    mutating func publish(_ message: OutgoingMessage, as user: UserID, now: Date) throws -> PublishReceipt {
        try requireOnline(user)
        if faults.failingPublishes > 0 {
            faults.failingPublishes -= 1
            throw SwitchboardError(.transport, "publish failed (injected)", retryable: faults.failingPublishesRetryable)
        }
        try requireMember(user, of: message.conversation)
        guard message.sender == user else {
            throw SwitchboardError(.unauthorized, "\(user) cannot send as \(message.sender)")
        }
        try MemoryWire.validate(message, limits: configuration.limits)
        let message = MemoryWire.canonical(message)

        let row: MemoryMessageRow
        if let seq = conversations[message.conversation]?.seqByKey[message.id], let existing = rows[seq] {
            // A repeat is the same sender's retry; another sender's message under the key is not this one.
            guard existing.sender == user else {
                throw SwitchboardError(.conflict, "idempotency key \(message.id) is taken by another sender's message")
            }
            row = existing
        } else {
            let seq = lastSeq + 1
            let remoteID: RemoteID
            switch configuration.scheme {
            case .clientAssigned: remoteID = RemoteID(message.id.rawValue)
            case .contentDerived: remoteID = try MemoryWire.contentDerivedID(for: message)
            case .serverAssigned: remoteID = RemoteID("srv-\(seq)")
            }
            if seqByRemoteID[remoteID] != nil {
                throw SwitchboardError(.conflict, "message ID \(remoteID) already exists in another conversation")
            }
            row = MemoryMessageRow(seq: seq, remoteID: remoteID, conversation: message.conversation,
                                   idempotencyKey: message.id, sender: user, text: message.text,
                                   replyTo: message.replyTo, attachments: message.attachments,
                                   metadata: message.metadata, sentAt: now.roundedToMicroseconds, editedAt: nil,
                                   deletedAt: nil, version: nextVersion)
            try commit(.message(row))
            deliver(.message(row.remoteMessage), in: row.conversation)
        }
        if faults.lostPublishResponses > 0 {
            faults.lostPublishResponses -= 1
            throw SwitchboardError(.transport, "publish response lost (injected)", retryable: true)
        }
        if faults.echoOnly { return PublishReceipt(remoteID: nil, serverTime: nil) }
        return PublishReceipt(remoteID: row.remoteID, serverTime: row.sentAt)
    }

    // MARK: Edit and delete

    /// Replaces the text of the sender's own message within the edit window.
    mutating func edit(_ target: RemoteID, in conversation: ConversationID, text: String, as user: UserID,
                       now: Date) throws {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        if faults.refuseEdits { throw SwitchboardError(.refused, "edit refused (injected)") }
        var row = try row(target, in: conversation)
        guard row.sender == user else { throw SwitchboardError(.refused, "only the sender may edit \(target)") }
        guard row.deletedAt == nil else { throw SwitchboardError(.refused, "\(target) is deleted") }
        guard now.timeIntervalSince(row.sentAt) <= configuration.editWindow else {
            throw SwitchboardError(.refused, "edit window of \(Int(configuration.editWindow)) s has passed")
        }
        try MemoryWire.validateText(text, hasAttachments: !row.attachments.isEmpty, limits: configuration.limits)
        row.text = text
        row.editedAt = now.roundedToMicroseconds
        row.version = nextVersion
        try commit(.message(row))
        deliver(.message(row.remoteMessage), in: conversation)
    }

    /// Tombstones the sender's own message within the delete window; deleting a deleted message is a no-op.
    mutating func delete(_ target: RemoteID, in conversation: ConversationID, as user: UserID, now: Date) throws {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        if faults.refuseDeletes { throw SwitchboardError(.refused, "delete refused (injected)") }
        var row = try row(target, in: conversation)
        guard row.sender == user else { throw SwitchboardError(.refused, "only the sender may delete \(target)") }
        guard row.deletedAt == nil else { return }
        guard now.timeIntervalSince(row.sentAt) <= configuration.deleteWindow else {
            throw SwitchboardError(.refused, "delete window of \(Int(configuration.deleteWindow)) s has passed")
        }
        row.text = ""
        row.attachments = []
        row.deletedAt = now.roundedToMicroseconds
        row.version = nextVersion
        try commit(.message(row))
        deliver(.message(row.remoteMessage), in: conversation)
    }

    // MARK: Reactions and receipts

    /// Adds or removes the user's reaction under the backend's policy; setting the current state is a no-op.
    mutating func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID,
                              as user: UserID, now: Date) throws {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        if faults.refuseReactions { throw SwitchboardError(.refused, "reaction refused (injected)") }
        guard !symbol.isEmpty else { throw SwitchboardError(.invalidArgument, "reaction symbol is empty") }
        let message = try row(target, in: conversation)
        guard message.deletedAt == nil else { throw SwitchboardError(.refused, "\(target) is deleted") }
        let at = now.roundedToMicroseconds
        if isActive, configuration.reactionPolicy == .onePerUser {
            let others = (reactions[target] ?? [:]).values
                .filter { $0.user == user && $0.symbol != symbol && $0.isActive }
                .sorted { $0.version < $1.version }
            for var other in others {
                other.isActive = false
                other.at = at
                other.version = nextVersion
                try commit(.reaction(other))
                deliver(.reaction(other.remoteReaction), in: conversation)
            }
        }
        let slot = ReactionSlot(user: user, symbol: symbol)
        let existing = reactions[target]?[slot]
        guard (existing?.isActive ?? false) != isActive else { return }
        let row = ReactionRow(target: target, conversation: conversation, user: user, symbol: symbol,
                              isActive: isActive, at: at, version: nextVersion)
        try commit(.reaction(row))
        deliver(.reaction(row.remoteReaction), in: conversation)
    }

    /// Records a receipt if it climbs; a lower or equal one, or one on the user's own message, is ignored.
    mutating func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID,
                              as user: UserID, now: Date) throws {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        let message = try row(target, in: conversation)
        guard message.sender != user else { return }
        if let existing = receipts[target]?[user], existing.state >= state { return }
        let row = ReceiptRow(target: target, conversation: conversation, user: user, state: state,
                             at: now.roundedToMicroseconds, version: nextVersion)
        try commit(.receipt(row))
        deliver(.receipt(row.remoteReceipt), in: conversation)
    }

    // MARK: Blobs

    /// Checks an upload may start and says whether the fault plan makes it fail.
    mutating func beginUpload(byteCount: Int, filename: String, in conversation: ConversationID,
                              as user: UserID) throws -> Bool {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        guard Int64(byteCount) <= configuration.limits.maxAttachmentBytes else {
            throw SwitchboardError(.contentTooLarge,
                                   "\(filename) of \(byteCount) bytes exceeds \(configuration.limits.maxAttachmentBytes)")
        }
        if faults.failingUploadNames.contains(filename) { return true }
        if faults.failingUploads > 0 {
            faults.failingUploads -= 1
            return true
        }
        return false
    }

    /// Stores uploaded bytes under a fresh location.
    mutating func storeBlob(_ data: Data, filename: String, as user: UserID) throws -> String {
        try requireOnline(user)
        let location = "memory://blobs/\(UUID().uuidString.lowercased())"
        try commit(.blob(location: location, filename: filename, data: data))
        return location
    }

    /// The bytes stored under `location`.
    func blob(at location: String, as user: UserID) throws -> Data {
        try requireOnline(user)
        guard let data = blobs[location] else { throw SwitchboardError(.notFound, "no blob at \(location)") }
        return data
    }

    // MARK: Reading

    /// The change-feed position now: the global version.
    func latestCursor(in conversation: ConversationID, as user: UserID) throws -> Cursor {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        return Cursor(String(lastVersion))
    }

    /// Up to `limit` messages with seq below `cursor` (the newest when nil), oldest first, with reactions and receipts.
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int,
                 as user: UserID) throws -> HistoryPage {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        guard limit > 0 else { throw SwitchboardError(.invalidArgument, "history limit must be positive") }
        let bound = try cursor.map(Self.number) ?? Int64.max
        let seqs = conversations[conversation]?.seqs ?? []
        let end = seqs.firstIndex(atOrAfter: bound)
        let start = max(0, end - limit)
        let page = seqs[start..<end].compactMap { rows[$0] }
        var standing: [ReactionRow] = []
        var acknowledged: [ReceiptRow] = []
        for row in page {
            standing += (reactions[row.remoteID] ?? [:]).values.filter(\.isActive)
            acknowledged += (receipts[row.remoteID] ?? [:]).values
        }
        return HistoryPage(messages: page.map(\.remoteMessage),
                           reactions: standing.sorted { $0.version < $1.version }.map(\.remoteReaction),
                           receipts: acknowledged.sorted { $0.version < $1.version }.map(\.remoteReceipt),
                           olderCursor: start > 0 && end > start ? Cursor(String(seqs[start])) : nil)
    }

    /// The number of messages `history` lists in `conversation`, deleted ones included.
    func messageCount(in conversation: ConversationID, as user: UserID) throws -> Int {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        return (conversations[conversation]?.seqs ?? []).count { rows[$0] != nil }
    }

    /// Every item whose version is after `cursor`, in version order, each in its current state.
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int,
                 as user: UserID) throws -> ChangeBatch {
        try requireOnline(user)
        try requireMember(user, of: conversation)
        guard limit > 0 else { throw SwitchboardError(.invalidArgument, "change limit must be positive") }
        let after = try cursor.map(Self.number) ?? 0
        let feed = conversations[conversation]?.feed ?? []
        let start = feed.firstIndex(atOrAfter: after + 1)
        let end = min(feed.count, start + limit)
        let changes = feed[start..<end].compactMap { change(for: $0.item) }
        return ChangeBatch(changes: changes, cursor: end > start ? Cursor(String(feed[end - 1].version)) : cursor,
                           hasMore: end < feed.count)
    }

    /// The current state of a feed item as a change.
    func change(for item: FeedItem) -> RemoteChange? {
        switch item {
        case .message(let seq):
            rows[seq].map { .message($0.remoteMessage) }
        case .reaction(let target, let slot):
            reactions[target]?[slot].map { .reaction($0.remoteReaction) }
        case .receipt(let target, let user):
            receipts[target]?[user].map { .receipt($0.remoteReceipt) }
        }
    }

    /// The server rows of a conversation, in seq order.
    func messages(in conversation: ConversationID) -> [MemoryMessageRow] {
        (conversations[conversation]?.seqs ?? []).compactMap { rows[$0] }
    }
}
