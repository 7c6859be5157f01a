import Dispatch
import Foundation
import SwitchboardCore

/// The bucket folders under `<dataDirectory>/storage`; writes go to `~tmp` and are renamed into place.
struct StorageFiles: Sendable {
    /// `<dataDirectory>/storage`.
    let root: URL
    /// `<root>/~tmp` (`~` is never valid in a bucket name, so it cannot clash with a bucket).
    let temporaryDirectory: URL

    /// The store under `root`; creates the folders.
    init(root: URL) throws {
        self.root = root.standardizedFileURL
        self.temporaryDirectory = self.root.appendingPathComponent("~tmp", isDirectory: true)
        try FileManager.default.createDirectory(at: temporaryDirectory, withIntermediateDirectories: true)
    }

    /// Creates the folder of `bucket`.
    func createBucket(_ bucket: String) throws {
        try FileManager.default.createDirectory(at: StoragePath.bucketDirectory(root: root, bucket: bucket),
                                                withIntermediateDirectories: true)
    }

    /// Removes the folder of `bucket` and everything in it.
    func removeBucket(_ bucket: String) {
        guard let directory = try? StoragePath.bucketDirectory(root: root, bucket: bucket) else { return }
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes `data` to a new temporary file and returns it with the data's hex SHA-256.
    func writeTemporary(_ data: Data) throws -> (file: URL, sha256: String) {
        let file = temporaryDirectory.appendingPathComponent(UUID().uuidString.lowercased(), isDirectory: false)
        try data.write(to: file, options: [.withoutOverwriting])
        return (file, Digest.sha256Hex(data))
    }

    /// Moves `temporary` to be `version` of `key` with an atomic rename; returns the final file.
    func install(_ temporary: URL, bucket: String, key: String, version: String) throws -> URL {
        let file = try StoragePath.objectFile(root: root, bucket: bucket, key: key, version: version)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard rename(temporary.path, file.path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: file.path])
        }
        return file
    }

    /// Copies `version` of `source` to a new temporary file (for copy).
    func copyToTemporary(bucket: String, key: String, version: String) throws -> URL {
        let source = try StoragePath.objectFile(root: root, bucket: bucket, key: key, version: version)
        let file = temporaryDirectory.appendingPathComponent(UUID().uuidString.lowercased(), isDirectory: false)
        try FileManager.default.copyItem(at: source, to: file)
        return file
    }

    /// Moves a stored version to another key (for move), atomically.
    func move(bucket: String, key: String, version: String, toBucket: String, toKey: String) throws {
        let source = try StoragePath.objectFile(root: root, bucket: bucket, key: key, version: version)
        let target = try StoragePath.objectFile(root: root, bucket: toBucket, key: toKey, version: version)
        try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        guard rename(source.path, target.path) == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
        }
        pruneEmptyFolders(from: source.deletingLastPathComponent(), bucket: bucket)
    }

    /// The bytes of `version` of `key`.
    func read(bucket: String, key: String, version: String) throws -> Data {
        try Data(contentsOf: StoragePath.objectFile(root: root, bucket: bucket, key: key, version: version))
    }

    /// Deletes `version` of `key` and the folders it leaves empty; missing files are ignored.
    func remove(bucket: String, key: String, version: String) {
        guard let file = try? StoragePath.objectFile(root: root, bucket: bucket, key: key, version: version) else { return }
        unlink(file.path)
        pruneEmptyFolders(from: file.deletingLastPathComponent(), bucket: bucket)
    }

    /// Deletes a file that never made it into the catalog.
    func discard(_ file: URL) {
        unlink(file.path)
    }

    /// Removes empty folders from `directory` up to (not including) the bucket folder.
    private func pruneEmptyFolders(from directory: URL, bucket: String) {
        guard let bucketDirectory = try? StoragePath.bucketDirectory(root: root, bucket: bucket) else { return }
        var current = directory.standardizedFileURL
        while StoragePath.isInside(current, bucketDirectory) {
            guard rmdir(current.path) == 0 else { return }
            current = current.deletingLastPathComponent().standardizedFileURL
        }
    }

    /// Runs blocking file work on a dispatch queue instead of the cooperative pool.
    static func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try body() }) }
        }
    }
}
