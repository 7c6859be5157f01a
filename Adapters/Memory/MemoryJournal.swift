#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import SwitchboardCore

/// One mutation of the server, as the journal keeps it: the resulting row, so replay needs no clock.
enum JournalRecord: Codable, Sendable {
    /// First line of a journal: the scheme the rows were made under.
    case header(scheme: IDScheme, backend: BackendID)
    /// A conversation was created with these members.
    case conversation(id: ConversationID, members: [UserID])
    /// A member joined a conversation.
    case member(conversation: ConversationID, user: UserID)
    /// A message row was inserted or updated (full row).
    case message(MemoryMessageRow)
    /// A reaction row was inserted or updated (full row).
    case reaction(ReactionRow)
    /// A receipt row was inserted or updated (full row).
    case receipt(ReceiptRow)
    /// Attachment bytes were stored under a location.
    case blob(location: String, filename: String, data: Data)
}

/// An append-only file of JSON lines: every mutation is one line written with a single `write` call, so a process
/// killed at any instant leaves at most one truncated last line, which replay ignores and the next append repairs.
struct MemoryJournal: Sendable {
    /// The journal file.
    let url: URL
    private let descriptor: Int32

    /// Opens (creating if needed) the journal at `url`, returning it and the records it already holds.
    static func open(_ url: URL) throws -> (MemoryJournal, [JournalRecord]) {
        let path = url.path
        let descriptor = path.withCString { Glue.open($0, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0o644) }
        guard descriptor >= 0 else {
            throw SwitchboardError(.storage, "cannot open journal \(path): errno \(errno)")
        }
        let journal = MemoryJournal(url: url, descriptor: descriptor)
        do {
            let records = try journal.readAndRepair()
            return (journal, records)
        } catch {
            journal.close()
            throw error
        }
    }

    /// Appends one record as one line with one `write` call.
    func append(_ record: JournalRecord) throws {
        var line: Data
        do {
            line = try MemoryWire.makeEncoder().encode(record)
        } catch {
            throw SwitchboardError(.storage, "cannot encode journal record: \(error)")
        }
        line.append(0x0A)
        let sizeBefore = Glue.lseek(descriptor, 0, SEEK_END)
        let written = line.withUnsafeBytes { buffer in Glue.write(descriptor, buffer.baseAddress, buffer.count) }
        guard written == line.count else {
            let code = errno
            if written > 0, sizeBefore >= 0 { _ = Glue.ftruncate(descriptor, sizeBefore) }
            throw SwitchboardError(.storage, "journal write failed (\(written) of \(line.count) bytes, errno \(code))")
        }
    }

    /// Closes the file.
    func close() { _ = Glue.close(descriptor) }

    /// Reads every complete line; drops a truncated last line from the file so later appends start clean.
    private func readAndRepair() throws -> [JournalRecord] {
        let contents: Data
        do {
            contents = try Data(contentsOf: url)
        } catch {
            throw SwitchboardError(.storage, "cannot read journal \(url.path): \(error)")
        }
        var end = contents.count
        if let last = contents.last, last != 0x0A {
            end = (contents.lastIndex(of: 0x0A).map { $0 + 1 }) ?? 0
            guard Glue.ftruncate(descriptor, off_t(end)) == 0 else {
                throw SwitchboardError(.storage, "cannot repair journal \(url.path): errno \(errno)")
            }
        }
        let decoder = MemoryWire.makeDecoder()
        var records: [JournalRecord] = []
        var number = 0
        for line in contents[contents.startIndex..<end].split(separator: 0x0A, omittingEmptySubsequences: true) {
            number += 1
            do {
                records.append(try decoder.decode(JournalRecord.self, from: Data(line)))
            } catch {
                throw SwitchboardError(.corruptStore, "journal \(url.path) line \(number) is unreadable")
            }
        }
        return records
    }
}

/// The C calls, named apart from the methods above.
private enum Glue {
    static func open(_ path: UnsafePointer<CChar>, _ flags: Int32, _ mode: mode_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.open(path, flags, mode)
        #elseif canImport(Musl)
        Musl.open(path, flags, mode)
        #else
        Glibc.open(path, flags, mode)
        #endif
    }

    static func write(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Darwin)
        Darwin.write(descriptor, bytes, count)
        #elseif canImport(Musl)
        Musl.write(descriptor, bytes, count)
        #else
        Glibc.write(descriptor, bytes, count)
        #endif
    }

    static func ftruncate(_ descriptor: Int32, _ length: off_t) -> Int32 {
        #if canImport(Darwin)
        Darwin.ftruncate(descriptor, length)
        #elseif canImport(Musl)
        Musl.ftruncate(descriptor, length)
        #else
        Glibc.ftruncate(descriptor, length)
        #endif
    }

    static func lseek(_ descriptor: Int32, _ offset: off_t, _ whence: Int32) -> off_t {
        #if canImport(Darwin)
        Darwin.lseek(descriptor, offset, whence)
        #elseif canImport(Musl)
        Musl.lseek(descriptor, offset, whence)
        #else
        Glibc.lseek(descriptor, offset, whence)
        #endif
    }

    static func close(_ descriptor: Int32) -> Int32 {
        #if canImport(Darwin)
        Darwin.close(descriptor)
        #elseif canImport(Musl)
        Musl.close(descriptor)
        #else
        Glibc.close(descriptor)
        #endif
    }
}
