import Foundation
import SupabaseProtocol
@testable import SupabaseServer
import SwitchboardNet
import Testing

/// Storage's pure parts: key validation, routes, signed-token claims, error JSON, multipart and value parsing.
@Suite("Storage pure parts")
struct StoragePureTests {
    /// The signer every token test uses.
    static let signer = JWTSigner(secret: "storage-pure-test-secret-with-32-characters")

    /// Keys storage3 users send are accepted.
    @Test("valid keys and bucket names pass", arguments: ["a.txt", "folder/cat.png", "a b/c(1)!*'&$=@;:+,?-_.txt", "x/.hidden", "a..b"])
    func validKeys(key: String) throws {
        #expect(throws: Never.self) { try StoragePath.validateKey(key) }
    }

    /// Traversal and unsafe keys are refused.
    @Test("traversal and unsafe keys are refused", arguments: [
        "", "..", ".", "../etc/passwd", "a/../../b", "a/./b", "/abs/path", "a//b", "a/", "a\\..\\b", "a\u{0}b",
        "%2e%2e/x", "a/%2E%2E/b", "%2fetc", "..%2fx", "a/%00", "~tmp/x", "a\nb", "é",
        String(repeating: "a", count: 256), String(repeating: "a/", count: 600) + "b",
    ])
    func unsafeKeys(key: String) {
        #expect(throws: StorageError.self) { try StoragePath.validateKey(key) }
    }

    /// Bucket names are validated.
    @Test("bucket names are validated")
    func bucketNames() throws {
        #expect(try StoragePath.validateBucketName("avatars") == "avatars")
        for bad in ["", ".", "..", "a/b", "a\\b", "~tmp", "a%2fb", String(repeating: "b", count: 101)] {
            #expect(throws: StorageError.self) { try StoragePath.validateBucketName(bad) }
        }
    }

    /// Object files stay under the bucket folder.
    @Test("object files stay under the bucket folder")
    func objectFiles() throws {
        let root = URL(fileURLWithPath: "/tmp/storage-root")
        let version = StoragePath.newVersion()
        let file = try StoragePath.objectFile(root: root, bucket: "b", key: "a/c.txt", version: version)
        #expect(file.path == "/tmp/storage-root/b/a/c.txt/\(version)")
        #expect(throws: StorageError.self) { try StoragePath.objectFile(root: root, bucket: "b", key: "../x", version: version) }
        #expect(throws: StorageError.self) { try StoragePath.objectFile(root: root, bucket: "..", key: "x", version: version) }
        #expect(throws: StorageError.self) { try StoragePath.objectFile(root: root, bucket: "b", key: "x", version: "../../etc") }
        #expect(StoragePath.isInside(URL(fileURLWithPath: "/tmp/r/b/x"), URL(fileURLWithPath: "/tmp/r/b")))
        #expect(!StoragePath.isInside(URL(fileURLWithPath: "/tmp/r/bb/x"), URL(fileURLWithPath: "/tmp/r/b")))
    }

    /// Routes parse as storage3 sends them.
    @Test("routes parse as storage3 sends them")
    func routes() throws {
        #expect(try StorageRoute.parse(method: .get, path: "/bucket") == .listBuckets)
        #expect(try StorageRoute.parse(method: .post, path: "/bucket") == .createBucket)
        #expect(try StorageRoute.parse(method: .post, path: "/bucket/b/empty") == .emptyBucket("b"))
        #expect(try StorageRoute.parse(method: .post, path: "/object/b/f/a.txt") == .upload(bucket: "b", key: "f/a.txt", isUpdate: false))
        #expect(try StorageRoute.parse(method: .put, path: "/object/b/a.txt") == .upload(bucket: "b", key: "a.txt", isUpdate: true))
        #expect(try StorageRoute.parse(method: .get, path: "/object/public/b/a.txt")
                == .getObject(.publicBucket, bucket: "b", key: "a.txt", head: false))
        #expect(try StorageRoute.parse(method: .head, path: "/object/authenticated/b/a.txt")
                == .getObject(.authenticated, bucket: "b", key: "a.txt", head: true))
        #expect(try StorageRoute.parse(method: .get, path: "/object/info/b/x/y") == .objectInfo(.authenticated, bucket: "b", key: "x/y"))
        #expect(try StorageRoute.parse(method: .delete, path: "/object/b") == .deleteObjects(bucket: "b"))
        #expect(try StorageRoute.parse(method: .post, path: "/object/list/b") == .listObjects(bucket: "b"))
        #expect(try StorageRoute.parse(method: .post, path: "/object/sign/b/a.txt") == .signURL(bucket: "b", key: "a.txt"))
        #expect(try StorageRoute.parse(method: .post, path: "/object/sign/b") == .signURLs(bucket: "b"))
        #expect(try StorageRoute.parse(method: .get, path: "/object/sign/b/a.txt") == .getSigned(bucket: "b", key: "a.txt", head: false))
        #expect(try StorageRoute.parse(method: .post, path: "/object/upload/sign/b/a.txt") == .signUpload(bucket: "b", key: "a.txt"))
        #expect(try StorageRoute.parse(method: .put, path: "/object/upload/sign/b/a.txt") == .uploadSigned(bucket: "b", key: "a.txt"))
        #expect(try StorageRoute.parse(method: .post, path: "/object/move") == .moveObject)
        #expect(throws: StorageError.self) { try StorageRoute.parse(method: .get, path: "/object/b/../x") }
        #expect(throws: StorageError.self) { try StorageRoute.parse(method: .post, path: "/object/b/%2e%2e/x") }
        #expect(throws: StorageError.self) { try StorageRoute.parse(method: .post, path: "/object/b//x") }
        #expect(throws: StorageError.self) { try StorageRoute.parse(method: .get, path: "/nothing") }
    }

    /// Error JSON has the real service's shape and HTTP 400.
    @Test("error JSON has the real service's shape and HTTP 400")
    func errorJSON() {
        let duplicate = StorageError.duplicateObject
        #expect(duplicate.json.serialized
                == #"{"statusCode":"409","code":"ResourceAlreadyExists","error":"Duplicate","message":"The resource already exists"}"#)
        #expect(duplicate.httpStatus == 400)
        #expect(StorageError.internalError.httpStatus == 500)
        #expect(StorageError.noSuchKey.json["error"] == .string("not_found"))
        #expect(StorageError.entityTooLarge(limit: 10).json["statusCode"] == .string("413"))
        #expect(StorageError.accessDenied("jwt expired").json["statusCode"] == .string("403"))
        #expect(StorageError.routeNotFound(method: "GET", path: "/x").httpStatus == 404)
    }

    /// Signed tokens carry url, scope and exp and are checked.
    @Test("signed tokens carry url, scope and exp and are checked")
    func signedTokens() throws {
        let now = Date()
        let upload = StorageSignedToken(url: "b/a.txt", scope: .upload, owner: "u1", upsert: true,
                                        expiresAt: now.addingTimeInterval(60))
        let token = upload.sign(with: Self.signer, now: now)
        let claims = try Self.signer.verify(token).object
        #expect(claims["url"] == .string("b/a.txt"))
        #expect(claims["scope"] == .string("upload"))
        #expect(claims["owner"] == .string("u1"))
        #expect(claims["upsert"] == .bool(true))
        #expect(claims["exp"]?.intValue == Int64(now.addingTimeInterval(60).timeIntervalSince1970.rounded(.up)))
        let verified = try StorageSignedToken.verify(token, bucket: "b", key: "a.txt", scope: .upload, signer: Self.signer)
        #expect(verified.owner == "u1" && verified.upsert)

        /// The storage error `body` throws, if any.
        func failure(_ body: () throws -> StorageSignedToken) -> StorageError? {
            do { _ = try body(); return nil } catch let error as StorageError { return error } catch { return nil }
        }
        #expect(failure { try StorageSignedToken.verify(token, bucket: "b", key: "other.txt", scope: .upload, signer: Self.signer) }?
            .code == "InvalidSignature")
        #expect(failure { try StorageSignedToken.verify(token, bucket: "b", key: "a.txt", scope: .download, signer: Self.signer) }?
            .code == "InvalidSignature")
        let expired = failure {
            try StorageSignedToken.verify(token, bucket: "b", key: "a.txt", scope: .upload, signer: Self.signer,
                                          now: now.addingTimeInterval(120))
        }
        #expect(expired?.code == "InvalidJWT" && expired?.message == "jwt expired" && expired?.statusCode == 400)
        let foreign = JWTSigner(secret: "another-secret-that-is-also-32-characters-long")
        #expect(failure { try StorageSignedToken.verify(token, bucket: "b", key: "a.txt", scope: .upload, signer: foreign) }?
            .message == "invalid signature")
        // A user's access token is not a signed-URL token.
        let access = Self.signer.sign(claims: ["role": "authenticated", "exp": .int(Int64(now.timeIntervalSince1970) + 60)])
        #expect(failure { try StorageSignedToken.verify(access, bucket: "b", key: "a.txt", scope: .download, signer: Self.signer) }
            != nil)
    }

    /// Auth headers map to identities or 403 AccessDenied.
    @Test("auth headers map to identities or 403 AccessDenied")
    func authentication() throws {
        let now = Date()
        let good = Self.signer.sign(claims: ["role": "authenticated", "sub": "u1", "exp": .int(Int64(now.timeIntervalSince1970) + 60)])
        let identity = try StorageAuthentication.identity(headers: ["Authorization": "Bearer \(good)"], signer: Self.signer)
        #expect(identity.role == .authenticated && identity.userID == "u1")
        let expired = Self.signer.sign(claims: ["role": "anon", "exp": .int(Int64(now.timeIntervalSince1970) - 10)])
        do {
            _ = try StorageAuthentication.identity(headers: ["apikey": expired], signer: Self.signer)
            Issue.record("expired token accepted")
        } catch {
            #expect(error.statusCode == 403 && error.message == "jwt expired" && error.error == "Unauthorized")
        }
        #expect(throws: StorageError.self) { try StorageAuthentication.identity(headers: [:], signer: Self.signer) }
    }

    /// Multipart bodies as storage3 sends them are read.
    @Test("multipart bodies as storage3 sends them are read")
    func multipart() throws {
        let boundary = "b0undary"
        var body = Data()
        body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"cacheControl\"\r\n\r\n3600\r\n".utf8))
        body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"k\":1}\r\n".utf8))
        body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.bin\"\r\n".utf8))
        body.append(Data("Content-Type: image/png\r\n\r\n".utf8))
        let payload = Data([0, 13, 10, 45, 45, 255] + Array("--b0und".utf8))
        body.append(payload)
        body.append(Data("\r\n--\(boundary)--\r\n".utf8))
        let upload = try StorageUploadBody.parse(headers: ["Content-Type": "multipart/form-data; boundary=\(boundary)"], body: body)
        #expect(upload.data == payload)
        #expect(upload.contentType == "image/png")
        #expect(upload.cacheControl == "max-age=3600")
        #expect(upload.userMetadata?["k"]?.intValue == 1)
        let raw = try StorageUploadBody.parse(headers: ["Content-Type": "text/plain", "Cache-Control": "max-age=60"], body: Data("hi".utf8))
        #expect(raw.data == Data("hi".utf8) && raw.contentType == "text/plain" && raw.cacheControl == "max-age=60")
        #expect(throws: StorageError.self) {
            try StorageUploadBody.parse(headers: ["Content-Type": "multipart/form-data; boundary=zz"], body: Data("junk".utf8))
        }
    }

    /// Size limits, expiries and mime types parse like the real service.
    @Test("size limits, expiries and mime types parse like the real service")
    func values() throws {
        #expect(try StorageValues.sizeLimit(.int(1024)) == 1024)
        #expect(try StorageValues.sizeLimit(.string("20MB")) == 20 << 20)
        #expect(try StorageValues.sizeLimit(.string("3b")) == 3)
        #expect(try StorageValues.sizeLimit(.null) == nil)
        #expect(throws: StorageError.self) { try StorageValues.sizeLimit(.string("lots")) }
        #expect(try StorageValues.expiresIn(.string("60")) == 60)
        #expect(throws: StorageError.self) { try StorageValues.expiresIn(.int(0)) }
        #expect(StorageUploadBody.isAllowed(mimeType: "image/png", allowed: ["image/*"]))
        #expect(StorageUploadBody.isAllowed(mimeType: "text/plain;charset=UTF-8", allowed: ["text/plain"]))
        #expect(!StorageUploadBody.isAllowed(mimeType: "text/html", allowed: ["image/*", "text/plain"]))
        #expect(StorageUploadBody.isAllowed(mimeType: "anything", allowed: nil))
    }
}
