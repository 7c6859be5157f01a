import SwitchboardCore
import Foundation
import SupabaseProtocol
@testable import SupabaseServer
import SwitchboardNet
import Testing

/// A small HTTP helper for storage tests: requests below `/storage/v1`, JSON decoding, curl for raw paths.
struct StorageTestClient: Sendable {
    /// The server under test.
    let server: SupabaseTestServer
    /// The shared HTTP client.
    let http = HTTPClient()

    /// Sends `method path` below `/storage/v1` with `token` (as Bearer and apikey) unless nil.
    func send(_ method: HTTPMethod, _ path: String, token: String?, headers: HTTPHeaders = [:],
              body: Data? = nil) async throws -> HTTPResponse {
        var all = headers
        if let token {
            all["Authorization"] = "Bearer \(token)"
            all["apikey"] = token
        }
        let url = try #require(URL(string: server.baseURL + "/storage/v1" + path))
        return try await http.send(HTTPRequest(method: method, url: url, headers: all, body: body))
    }

    /// Sends a JSON body.
    func sendJSON(_ method: HTTPMethod, _ path: String, token: String?, _ body: JSONValue,
                  headers: HTTPHeaders = [:]) async throws -> HTTPResponse {
        var all = headers
        all["Content-Type"] = "application/json"
        return try await send(method, path, token: token, headers: all, body: Data(body.serialized.utf8))
    }

    /// The response body as JSON.
    static func json(_ response: HTTPResponse) throws -> JSONValue {
        try #require(JSONValue.parseOrNil(response.body), "not JSON: \(String(decoding: response.body, as: UTF8.self))")
    }

    /// The storage error `statusCode` of an HTTP 400 answer.
    static func errorStatus(_ response: HTTPResponse) -> String? {
        guard response.status == 400 || response.status == 500 else { return "HTTP \(response.status)" }
        return JSONValue.parseOrNil(response.body)?["statusCode"]?.stringValue
    }

    /// Runs curl with `--path-as-is` so dot segments reach the server unnormalized; returns the HTTP status.
    func curlStatus(method: String, rawPath: String, token: String, body: String) throws -> Int {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--path-as-is", "-X", method,
                             "-H", "Authorization: Bearer \(token)", "-H", "Content-Type: text/plain",
                             "--data-binary", body, server.baseURL + rawPath]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Int(String(decoding: data, as: UTF8.self)) ?? -1
    }
}

/// Storage over HTTP against one running server: buckets, objects, signed URLs, limits, traversal, access.
@Suite("Storage API over HTTP", .serialized, .supabaseServer)
struct StorageServerTests {
    /// Creates bucket `id` as service_role.
    static func createBucket(_ client: StorageTestClient, _ id: String, isPublic: Bool = false,
                             limit: JSONValue = .null) async throws {
        let response = try await client.sendJSON(.post, "/bucket", token: client.server.serviceKey,
                                                 ["id": .string(id), "name": .string(id), "public": .bool(isPublic),
                                                  "file_size_limit": limit])
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    /// Upload then download round-trips bytes, content type, cache control and ETag.
    @Test("upload then download round-trips bytes, content type, cache control and ETag")
    func roundTrip() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "round")
        let user = client.server.token(role: "authenticated", sub: "11111111-1111-1111-1111-111111111111")
        let bytes = Data((0..<5000).map { UInt8($0 % 251) })
        let upload = try await client.send(.post, "/object/round/dir/blob.bin", token: user,
                                           headers: ["Content-Type": "application/x-test", "Cache-Control": "max-age=60"], body: bytes)
        #expect(upload.status == 200)
        let uploaded = try StorageTestClient.json(upload)
        #expect(uploaded["Key"] == .string("round/dir/blob.bin"))
        #expect(uploaded["Id"]?.stringValue?.count == 36)

        let download = try await client.send(.get, "/object/round/dir/blob.bin", token: user)
        #expect(download.status == 200)
        #expect(download.body == bytes)
        #expect(download.headers["Content-Type"] == "application/x-test")
        #expect(download.headers["Cache-Control"] == "max-age=60")
        let eTag = try #require(download.headers["ETag"])
        #expect(eTag.count == 66 && eTag.hasPrefix("\""))
        let authenticated = try await client.send(.get, "/object/authenticated/round/dir/blob.bin", token: user)
        #expect(authenticated.body == bytes)

        let info = try StorageTestClient.json(try await client.send(.get, "/object/info/round/dir/blob.bin", token: user))
        #expect(info["size"]?.intValue == 5000)
        #expect(info["content_type"] == .string("application/x-test"))
        #expect(info["etag"] == .string(eTag))

        let list = try StorageTestClient.json(try await client.sendJSON(.post, "/object/list/round", token: user,
                                                                         ["prefix": "", "limit": 100, "offset": 0]))
        #expect(list.arrayValue?.first?["name"] == .string("dir"))
        #expect(list.arrayValue?.first?["id"] == .null)
        let inner = try StorageTestClient.json(try await client.sendJSON(.post, "/object/list/round", token: user, ["prefix": "dir"]))
        #expect(inner.arrayValue?.first?["name"] == .string("blob.bin"))
        #expect(inner.arrayValue?.first?["metadata"]?["size"]?.intValue == 5000)

        let removed = try await client.sendJSON(.delete, "/object/round", token: user, ["prefixes": ["dir/blob.bin"]])
        #expect(try StorageTestClient.json(removed).arrayValue?.count == 1)
        let gone = try await client.send(.get, "/object/round/dir/blob.bin", token: user)
        #expect(StorageTestClient.errorStatus(gone) == "404")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: client.server.root.appendingPathComponent("storage/round").path)
        #expect(leftovers.isEmpty)
    }

    /// Byte ranges on every download route: 206 with Content-Range, 416 past the end, If-Range honoured.
    @Test("downloads serve one byte range (206, Content-Range), refuse one past the end (416) and honour If-Range")
    func byteRanges() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "ranges", isPublic: true)
        let user = client.server.token(role: "authenticated", sub: "22222222-2222-2222-2222-222222222222")
        let bytes = Data((0..<1000).map { UInt8($0 % 256) })
        let upload = try await client.send(.post, "/object/ranges/video.bin", token: user,
                                           headers: ["Content-Type": "application/octet-stream"], body: bytes)
        #expect(upload.status == 200)
        let sign = try await client.sendJSON(.post, "/object/sign/ranges/video.bin", token: user, ["expiresIn": 60])
        let signedURL = try #require(try StorageTestClient.json(sign)["signedURL"]?.stringValue)
        for path in ["/object/ranges/video.bin", "/object/public/ranges/video.bin", "/object/authenticated/ranges/video.bin",
                     signedURL.replacingOccurrences(of: "/storage/v1", with: "")] {
            let whole = try await client.send(.get, path, token: user)
            #expect(whole.status == 200, "\(path)")
            #expect(whole.headers["Accept-Ranges"] == "bytes")
            let middle = try await client.send(.get, path, token: user, headers: ["Range": "bytes=100-199"])
            #expect(middle.status == 206, "\(path)")
            #expect(middle.body == bytes[100..<200])
            #expect(middle.headers["Content-Range"] == "bytes 100-199/1000")
            let tail = try await client.send(.get, path, token: user, headers: ["Range": "bytes=-10"])
            #expect(tail.body == bytes[990..<1000])
            #expect(tail.headers["Content-Range"] == "bytes 990-999/1000")
            let past = try await client.send(.get, path, token: user, headers: ["Range": "bytes=1000-"])
            #expect(past.status == 416, "\(path)")
            #expect(past.headers["Content-Range"] == "bytes */1000")
        }
        let eTag = try #require(try await client.send(.get, "/object/ranges/video.bin", token: user).headers["ETag"])
        let same = try await client.send(.get, "/object/ranges/video.bin", token: user,
                                         headers: ["Range": "bytes=0-9", "If-Range": eTag])
        #expect(same.status == 206)
        let changed = try await client.send(.get, "/object/ranges/video.bin", token: user,
                                            headers: ["Range": "bytes=0-9", "If-Range": "\"another-version\""])
        #expect(changed.status == 200)
        #expect(changed.body == bytes)
    }

    /// A second POST is a 409 Duplicate; x-upsert and PUT overwrite.
    @Test("a second POST is a 409 Duplicate; x-upsert and PUT overwrite")
    func duplicateAndUpsert() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "dup")
        let user = client.server.token(role: "authenticated", sub: "22222222-2222-2222-2222-222222222222")
        let first = try await client.send(.post, "/object/dup/a.txt", token: user, headers: ["Content-Type": "text/plain"],
                                          body: Data("one".utf8))
        #expect(first.status == 200)
        let second = try await client.send(.post, "/object/dup/a.txt", token: user, headers: ["Content-Type": "text/plain"],
                                           body: Data("two".utf8))
        #expect(second.status == 400)
        let error = try StorageTestClient.json(second)
        #expect(error["statusCode"] == .string("409"))
        #expect(error["error"] == .string("Duplicate"))
        let upsert = try await client.send(.post, "/object/dup/a.txt", token: user,
                                           headers: ["Content-Type": "text/plain", "x-upsert": "true"], body: Data("two".utf8))
        #expect(upsert.status == 200)
        #expect(try await client.send(.get, "/object/dup/a.txt", token: user).body == Data("two".utf8))
        let update = try await client.send(.put, "/object/dup/a.txt", token: user, headers: ["Content-Type": "text/plain"],
                                           body: Data("three".utf8))
        #expect(update.status == 200)
        #expect(try await client.send(.get, "/object/dup/a.txt", token: user).body == Data("three".utf8))
        // Only the current version stays on disk.
        let versions = try FileManager.default.contentsOfDirectory(atPath: client.server.root.appendingPathComponent("storage/dup/a.txt").path)
        #expect(versions.count == 1)
    }

    /// A signed upload URL works without an auth header; a signed download URL too.
    @Test("a signed upload URL works without an auth header; a signed download URL too")
    func signedURLs() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "signed")
        let user = client.server.token(role: "authenticated", sub: "33333333-3333-3333-3333-333333333333")
        let sign = try StorageTestClient.json(try await client.send(.post, "/object/upload/sign/signed/up/file.txt", token: user))
        let url = try #require(sign["url"]?.stringValue)
        let token = try #require(sign["token"]?.stringValue)
        #expect(url == "/object/upload/sign/signed/up/file.txt?token=\(token)")
        let put = try await client.send(.put, url, token: nil, headers: ["Content-Type": "text/plain"], body: Data("signed".utf8))
        #expect(put.status == 200)
        #expect(try StorageTestClient.json(put)["Key"] == .string("signed/up/file.txt"))
        // The token is bound to its path.
        let other = try await client.send(.put, "/object/upload/sign/signed/up/other.txt?token=\(token)", token: nil,
                                          headers: ["Content-Type": "text/plain"], body: Data("x".utf8))
        #expect(StorageTestClient.errorStatus(other) == "400")
        // Without auth the object cannot be read directly, but a signed download URL can.
        #expect(StorageTestClient.errorStatus(try await client.send(.get, "/object/signed/up/file.txt", token: nil)) == "403")
        let signedDownload = try StorageTestClient.json(try await client.sendJSON(.post, "/object/sign/signed/up/file.txt",
                                                                                   token: user, ["expiresIn": "60"]))
        let downloadURL = try #require(signedDownload["signedURL"]?.stringValue)
        #expect(downloadURL.hasPrefix("/object/sign/signed/up/file.txt?token="))
        let fetched = try await client.send(.get, downloadURL, token: nil)
        #expect(fetched.status == 200)
        #expect(fetched.body == Data("signed".utf8))
        // A download token does not upload.
        let downloadToken = String(downloadURL.split(separator: "=", maxSplits: 1).last ?? "")
        let misuse = try await client.send(.put, "/object/upload/sign/signed/up/file.txt?token=\(downloadToken)", token: nil,
                                           headers: ["Content-Type": "text/plain"], body: Data("x".utf8))
        #expect(try StorageTestClient.json(misuse)["code"] == .string("InvalidSignature"))
    }

    /// Objects over the size limit are refused with 413 EntityTooLarge.
    @Test("objects over the size limit are refused with 413 EntityTooLarge")
    func sizeLimit() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "small", limit: .string("1KB"))
        let service = client.server.serviceKey
        let ok = try await client.send(.post, "/object/small/ok.bin", token: service, body: Data(count: 1024))
        #expect(ok.status == 200)
        let big = try await client.send(.post, "/object/small/big.bin", token: service, body: Data(count: 1025))
        #expect(StorageTestClient.errorStatus(big) == "413")
        #expect(try StorageTestClient.json(big)["code"] == .string("EntityTooLarge"))
    }

    /// Path traversal never leaves the bucket folder, encoded or not.
    @Test("path traversal never leaves the bucket folder, encoded or not")
    func traversal() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "safe")
        let service = client.server.serviceKey
        // civetweb percent-decodes and removes dot segments (and `\`, `//`) before routing; whatever reaches
        // storage is validated again, so each of these is either refused or lands inside the bucket folder.
        for raw in ["/storage/v1/object/safe/../../escape1.txt", "/storage/v1/object/safe/%2e%2e/%2e%2e/escape2.txt",
                    "/storage/v1/object/safe/a/%2E%2E%2F%2E%2E%2Fescape3.txt", "/storage/v1/object/safe/%252e%252e/escape4.txt",
                    "/storage/v1/object/safe/a%5C..%5C..%5Cescape5.txt", "/storage/v1/object/safe//escape6.txt",
                    "/storage/v1/object/..%2F..%2Fescape7.txt", "/storage/v1/object/safe/%2e%2e%252fescape8.txt"] {
            _ = try client.curlStatus(method: "POST", rawPath: raw, token: service, body: "evil")
        }
        let encoded = try await client.send(.post, "/object/safe/%252e%252e/escape9.txt", token: service, body: Data("x".utf8))
        #expect(StorageTestClient.errorStatus(encoded) == "400")
        let bucketFolder = client.server.root.appendingPathComponent("storage/safe").path + "/"
        let enumerator = FileManager.default.enumerator(atPath: client.server.root.path)
        while let relative = enumerator?.nextObject() as? String {
            let path = client.server.root.appendingPathComponent(relative).path
            if relative.contains("escape") { #expect(path.hasPrefix(bucketFolder), "\(path) was written outside the bucket") }
        }
    }

    /// Anon cannot read or write a private bucket but reads a public one.
    @Test("anon cannot read or write a private bucket but reads a public one")
    func anonAccess() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        try await Self.createBucket(client, "private")
        try await Self.createBucket(client, "open", isPublic: true)
        let service = client.server.serviceKey
        let anon = client.server.anonKey
        _ = try await client.send(.post, "/object/private/p.txt", token: service, body: Data("secret".utf8))
        _ = try await client.send(.post, "/object/open/o.txt", token: service, headers: ["Content-Type": "text/plain"],
                                  body: Data("hello".utf8))
        #expect(StorageTestClient.errorStatus(try await client.send(.get, "/object/private/p.txt", token: anon)) == "404")
        #expect(StorageTestClient.errorStatus(try await client.send(.get, "/object/public/private/p.txt", token: nil)) == "404")
        let write = try await client.send(.post, "/object/open/new.txt", token: anon, body: Data("x".utf8))
        #expect(StorageTestClient.errorStatus(write) == "403")
        let bucket = try await client.sendJSON(.post, "/bucket", token: anon, ["name": "mine"])
        #expect(StorageTestClient.errorStatus(bucket) == "403")
        let open = try await client.send(.get, "/object/public/open/o.txt", token: nil)
        #expect(open.status == 200 && open.body == Data("hello".utf8))
        #expect(try await client.send(.get, "/object/open/o.txt", token: anon).status == 200)
        let badToken = try await client.send(.get, "/object/open/o.txt", token: anon + "x")
        #expect(StorageTestClient.errorStatus(badToken) == "403")
        #expect(try StorageTestClient.json(badToken)["message"] == .string("invalid signature"))
    }

    /// Bucket lifecycle: get, update, empty, delete; non-empty delete is refused.
    @Test("bucket lifecycle: get, update, empty, delete; non-empty delete is refused")
    func bucketLifecycle() async throws {
        let client = StorageTestClient(server: try SupabaseTestServer.required())
        let service = client.server.serviceKey
        try await Self.createBucket(client, "life")
        let again = try await client.sendJSON(.post, "/bucket", token: service, ["name": "life"])
        #expect(StorageTestClient.errorStatus(again) == "409")
        let update = try await client.sendJSON(.put, "/bucket/life", token: service,
                                               ["public": true, "allowed_mime_types": ["text/*"]])
        #expect(update.status == 200)
        let bucket = try StorageTestClient.json(try await client.send(.get, "/bucket/life", token: service))
        #expect(bucket["public"] == .bool(true))
        #expect(bucket["allowed_mime_types"] == .array(["text/*"]))
        let refused = try await client.send(.post, "/object/life/x.png", token: service, headers: ["Content-Type": "image/png"],
                                            body: Data("x".utf8))
        #expect(StorageTestClient.errorStatus(refused) == "415")
        _ = try await client.send(.post, "/object/life/x.txt", token: service, headers: ["Content-Type": "text/plain"],
                                  body: Data("x".utf8))
        #expect(StorageTestClient.errorStatus(try await client.send(.delete, "/bucket/life", token: service)) == "409")
        #expect(try await client.sendJSON(.post, "/bucket/life/empty", token: service, [:]).status == 200)
        #expect(try await client.send(.delete, "/bucket/life", token: service).status == 200)
        #expect(StorageTestClient.errorStatus(try await client.send(.get, "/bucket/life", token: service)) == "404")
    }

    /// The official storage3 client uploads, signs, downloads, lists and removes.
    @Test("the official storage3 client uploads, signs, downloads, lists and removes")
    func officialClient() async throws {
        let server = try SupabaseTestServer.required()
        let result = try await PythonFixture.run("storage_client.py", [server.baseURL],
                                                 environment: ["SUPABASE_SERVICE_KEY": server.serviceKey,
                                                               "SUPABASE_USER_KEY": server.token(role: "authenticated",
                                                                                                 sub: "44444444-4444-4444-4444-444444444444")])
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(result.stdout.contains("storage3 ok"))
    }
}

/// Signed upload URLs expire after `signedUploadLifetime` (a suite with its own one-second server).
@Suite("Storage signed upload expiry", .serialized)
struct StorageSignedExpiryTests {
    /// An expired signed upload URL is refused with jwt expired.
    @Test("an expired signed upload URL is refused with jwt expired")
    func expiry() async throws {
        let server = try await SupabaseTestServer.start { $0.signedUploadLifetime = .seconds(1) }
        do {
            let client = StorageTestClient(server: server)
            let service = server.serviceKey
            #expect(try await client.sendJSON(.post, "/bucket", token: service, ["name": "late"]).status == 200)
            let sign = try StorageTestClient.json(try await client.send(.post, "/object/upload/sign/late/f.txt", token: service))
            let url = try #require(sign["url"]?.stringValue)
            try await Task.sleep(for: .seconds(2.5))
            let put = try await client.send(.put, url, token: nil, headers: ["Content-Type": "text/plain"], body: Data("x".utf8))
            #expect(put.status == 400)
            let error = try StorageTestClient.json(put)
            #expect(error["statusCode"] == .string("400"))
            #expect(error["message"] == .string("jwt expired"))
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
