import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardCore
import SwitchboardNet
import XMTPAdapter
import XMTPCodec
import XMTPConformance
import XMTPCrypto
import XMTPNode

/// The reference servers in this process on loopback, as `switchboard demo` starts them: the Supabase-like server
/// on its own private PostgreSQL under a temporary data folder and, when asked, the XMTP-like node beside it.
final class BenchServers: Sendable {
    /// The temporary folder holding both servers' data (removed by `stop`).
    let directory: BenchDirectory
    /// The Supabase-like server.
    let supabase: SupabaseServer
    /// Its base URL.
    let supabaseURL: URL
    /// Token minting and conversation setup on it.
    let supabaseHarness: SupabaseHarness
    /// The XMTP-like node, when started.
    let node: XMTPNodeServer?
    /// Its base URL (meaningful only with a node).
    let nodeURL: URL
    /// Inbox registration and group creation on the node.
    let xmtpHarness: XMTPHarness

    private init(directory: BenchDirectory, supabase: SupabaseServer, supabaseURL: URL, supabaseHarness: SupabaseHarness,
                 node: XMTPNodeServer?, nodeURL: URL) {
        self.directory = directory
        self.supabase = supabase
        self.supabaseURL = supabaseURL
        self.supabaseHarness = supabaseHarness
        self.node = node
        self.nodeURL = nodeURL
        self.xmtpHarness = XMTPHarness(baseURL: nodeURL)
    }

    /// Starts the servers in a fresh temporary folder; on any failure stops what started and removes the folder.
    static func start(_ label: String, xmtp: Bool) async throws -> BenchServers {
        let directory = try BenchDirectory(label)
        let secret = Digest.hex(try SecureRandom.bytes(32))
        let supabase = SupabaseServer(configuration: SupabaseServerConfiguration(dataDirectory: directory.url.appendingPathComponent("supabase"),
                                                                                 jwtSecret: secret))
        let supabasePort: Int
        do {
            supabasePort = try await supabase.start()
        } catch {
            await supabase.stop()
            directory.remove()
            throw error
        }
        var node: XMTPNodeServer?
        var nodePort = 0
        if xmtp {
            let server = XMTPNodeServer(configuration: XMTPNodeConfiguration(dataDirectory: directory.url.appendingPathComponent("xmtp")))
            do {
                nodePort = try await server.start()
            } catch {
                await server.stop()
                await supabase.stop()
                directory.remove()
                throw error
            }
            node = server
        }
        let supabaseURL = URL(string: "http://127.0.0.1:\(supabasePort)")!
        return BenchServers(directory: directory, supabase: supabase, supabaseURL: supabaseURL,
                            supabaseHarness: SupabaseHarness(baseURL: supabaseURL, jwtSecret: secret),
                            node: node, nodeURL: URL(string: "http://127.0.0.1:\(nodePort)")!)
    }

    /// Stops both servers and removes the folder; safe to call twice.
    func stop() async {
        await node?.stop()
        await supabase.stop()
        directory.remove()
    }

    /// Starts the servers, runs `body`, and stops them and removes their folder whether `body` succeeds or throws.
    static func with<T: Sendable>(_ label: String, xmtp: Bool, _ body: (BenchServers) async throws -> T) async throws -> T {
        let servers = try await start(label, xmtp: xmtp)
        do {
            let value = try await body(servers)
            await servers.stop()
            return value
        } catch {
            await servers.stop()
            throw error
        }
    }

    /// Settles the Supabase-like server between measured phases, as pgbench vacuums before a run: waits (up to
    /// 60 s) until its realtime feed has dispatched every change logged so far, then vacuums and analyzes the
    /// chat tables, so a phase pays neither for the previous phase's changes still being fanned out nor for an
    /// autovacuum the previous phase's rows set off.
    func settle() async throws {
        try await feedCaughtUp()
        let database = try BareCopyConnection(url: try databaseURL())
        _ = try database.query("VACUUM ANALYZE public.messages, public.reactions, public.receipts, realtime.change_log", [])
    }

    /// Waits (up to 60 s) until the Supabase-like server's realtime feed has dispatched every change logged so far,
    /// so a phase's measured cost includes the fan-out of what it wrote.
    func feedCaughtUp() async throws {
        let database = try BareCopyConnection(url: try databaseURL())
        let newest = Int64(try database.query("SELECT coalesce(max(id), 0)::text FROM realtime.change_log", []).first ?? "") ?? 0
        let deadline = ContinuousClock.now + .seconds(60)
        while (supabase.realtimeFeedPosition ?? newest) < newest {
            guard ContinuousClock.now < deadline else {
                throw BenchError("the realtime feed did not catch up with change \(newest) within 60 s")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    // MARK: Supabase side

    /// The anon key.
    var anonKey: String { supabaseHarness.token(role: "anon") }

    /// A user's access token.
    func accessToken(_ user: UserID) -> String { supabaseHarness.token(role: "authenticated", sub: user.rawValue) }

    /// A Supabase adapter signed in as `user` on its own HTTP client.
    func supabaseAdapter(_ user: UserID) -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(baseURL: supabaseURL, apiKey: anonKey,
                                                                      accessToken: accessToken(user), localUser: user),
                        http: HTTPClient())
    }

    /// The database URL of the private cluster (never logged).
    func databaseURL() throws -> String {
        guard let context = supabase.context else { throw BenchError("the Supabase-like server is not running") }
        return context.databaseURL
    }

    // MARK: XMTP side

    /// A fresh group on the node: `creator` and `members` registered under fresh inbox names, a random ID and secret.
    func makeGroup(creator: String, members: [String]) async throws -> BenchGroup {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        var tokens: [UserID: String] = [:]
        let creatorID = UserID("\(creator)-\(suffix)")
        tokens[creatorID] = try await xmtpHarness.register(creatorID)
        var memberIDs: [UserID] = []
        for member in members {
            let id = UserID("\(member)-\(suffix)")
            tokens[id] = try await xmtpHarness.register(id)
            memberIDs.append(id)
        }
        let groupID = try SecureRandom.bytes(16)
        try await xmtpHarness.createGroup(groupID, members: memberIDs, token: tokens[creatorID] ?? "")
        return BenchGroup(nodeURL: nodeURL, groupID: groupID, secret: try SecureRandom.bytes(32), creator: creatorID,
                          members: memberIDs, tokens: tokens)
    }
}

/// One XMTP-like group made for a run: its ID, secret and the tokens of its inboxes.
struct BenchGroup: Sendable {
    /// The node's base URL.
    let nodeURL: URL
    /// The 16-byte group ID.
    let groupID: [UInt8]
    /// The group's 32-byte secret (handed to adapters out of band).
    let secret: [UInt8]
    /// The inbox that created the group (the sender).
    let creator: UserID
    /// The other members, in the order asked for.
    let members: [UserID]
    /// Bearer tokens of every inbox.
    let tokens: [UserID: String]

    /// The conversation ID (32 hex digits).
    var conversation: ConversationID { ConversationID(Digest.hex(groupID)) }

    /// An adapter as `user` on the group, on its own local database at `database`.
    func adapter(_ user: UserID, database: String) throws -> XMTPAdapter {
        let secret = self.secret
        return try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: nodeURL, inboxID: user, token: tokens[user] ?? "", databasePath: database,
            groupSecret: { _ in secret }), http: HTTPClient())
    }

    /// Text messages from the creator, sealed for the group the way the adapter seals them, each under a fresh
    /// key, as the node's bulk-send items; returns the keys too.
    func sealedTexts(_ count: Int, label: String) throws -> [(key: MessageID, item: JSONValue)] {
        let cipher = try GroupCipher(secret: secret)
        var result: [(key: MessageID, item: JSONValue)] = []
        result.reserveCapacity(count)
        for index in 0..<count {
            let key = MessageID.make()
            let content = XMTPText("\(label) \(index)").encoded().encoded()
            let sealed = XMTPSealedMessage(senderInboxID: creator.rawValue, content: content, idempotencyKey: key.rawValue).encoded()
            let (nonce, ciphertext) = try cipher.seal(sealed, aad: groupID)
            let envelope = XMTPGroupEnvelope(groupID: groupID, nonce: nonce, ciphertext: ciphertext).encoded()
            result.append((key, ["v1": ["data": .string(Data(envelope).base64EncodedString()), "sender_hmac": "", "should_push": true]]))
        }
        return result
    }

    /// Sends sealed items as the creator in one `send-group-messages` request (the node's bulk send).
    func send(_ items: ArraySlice<JSONValue>, http: HTTPClient) async throws {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Authorization", "Bearer \(tokens[creator] ?? "")")
        let body: JSONValue = ["messages": .array(Array(items))]
        let response = try await http.send(HTTPRequest(method: .post, url: nodeURL.appendingPathComponent("mls/v1/send-group-messages"),
                                                       headers: headers, body: Data(body.serialized.utf8), timeout: .seconds(60)))
        guard response.isSuccess else {
            throw BenchError("bulk send to the node failed: HTTP \(response.status) "
                             + String(decoding: response.body.prefix(300), as: UTF8.self))
        }
    }

    /// Sends every item in requests of `chunk`.
    func sendAll(_ items: [JSONValue], chunk: Int, http: HTTPClient) async throws {
        for start in stride(from: 0, to: items.count, by: chunk) {
            try await send(items[start..<min(items.count, start + chunk)], http: http)
        }
    }
}

/// Arrival times of messages on a live stream, by key, recorded by the listening task as they come.
final class ArrivalBook: Sendable {
    private struct State {
        var arrivals: [MessageID: ContinuousClock.Instant] = [:]
        var connected = false
    }

    private let state = Locked(State())

    /// Records `key`'s first arrival now.
    func arrived(_ key: MessageID) {
        let now = ContinuousClock.now
        state.withLock { state in
            if state.arrivals[key] == nil { state.arrivals[key] = now }
        }
    }

    /// Notes that the stream is connected.
    func markConnected() { state.withLock { $0.connected = true } }

    /// Whether the stream reported itself connected.
    var isConnected: Bool { state.withLock { $0.connected } }

    /// When `key` arrived, if it did.
    func arrival(of key: MessageID) -> ContinuousClock.Instant? { state.withLock { $0.arrivals[key] } }

    /// How many of `keys` arrived.
    func count(of keys: [MessageID]) -> Int { state.withLock { state in keys.reduce(0) { $0 + (state.arrivals[$1] == nil ? 0 : 1) } } }

    /// How many distinct messages arrived so far.
    var total: Int { state.withLock { $0.arrivals.count } }

    /// Listens to `stream` in a task, recording message arrivals (by idempotency key) and the connection.
    func listen(to stream: AsyncStream<AdapterEvent>) -> Task<Void, Never> {
        Task {
            for await event in stream {
                switch event {
                case .change(.message(let message)):
                    if let key = message.idempotencyKey { arrived(key) }
                case .connection(.connected):
                    markConnected()
                default:
                    break
                }
            }
        }
    }

    /// Waits (polling every `step`) until `condition` holds or `timeout` passes; returns whether it held.
    static func wait(timeout: Duration, step: Duration = .milliseconds(1), _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: step)
        }
        return true
    }
}
