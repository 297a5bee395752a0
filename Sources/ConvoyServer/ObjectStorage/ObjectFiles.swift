import Foundation
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#endif

/// Object bytes on the server's disk: each version of an object is one file,
/// `<root>/objects/<version>` (a random UUID: no key ever names a file). An
/// upload streams into `<root>/tmp/<uuid>` and is renamed into place once
/// complete, so a reader sees a whole version or none; a version replaced or
/// deleted is unlinked (a download already streaming it keeps its open file).
/// Blocking file calls run on NIO's thread pool, never on a cooperative thread.
/// Renames are atomic for readers; files are not fsynced (a crash may lose the
/// latest uploads, as a load-test backend may).
struct ObjectFiles: Sendable {
    let root: URL
    private let pool = NIOThreadPool.singleton

    init(root: URL) { self.root = root }

    /// At start: makes `root/objects` and `root/tmp` (0700) and empties `tmp` of
    /// uploads a previous run left half-written.
    func prepare() throws {
        let fm = FileManager.default
        for dir in ["objects", "tmp"] {
            try fm.createDirectory(at: root.appendingPathComponent(dir), withIntermediateDirectories: true,
                                   attributes: [.posixPermissions: 0o700])
        }
        for leftover in (try? fm.contentsOfDirectory(atPath: root.appendingPathComponent("tmp").path)) ?? [] {
            try? fm.removeItem(at: root.appendingPathComponent("tmp").appendingPathComponent(leftover))
        }
    }

    private func path(_ version: String) -> String { root.appendingPathComponent("objects").appendingPathComponent(version).path }

    /// A new, empty upload file.
    func create() async throws -> PartialFile {
        let path = root.appendingPathComponent("tmp").appendingPathComponent(UUID().uuidString.lowercased()).path
        let fd = try await pool.runIfActive { () throws -> Int32 in
            let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw FileError("create", path) }
            return fd
        }
        return PartialFile(fd: fd, path: path, pool: pool)
    }

    /// Writes what is buffered, closes the file and renames it to `version`.
    func commit(_ file: PartialFile, as version: String) async throws {
        try await file.finish()
        let (from, to) = (file.path, path(version))
        try await pool.runIfActive {
            guard rename(from, to) == 0 else { throw FileError("rename", to) }
        }
    }

    /// Drops an upload that will not be kept.
    func discard(_ file: PartialFile) async {
        try? await file.finish()
        let path = file.path
        _ = try? await pool.runIfActive { unlink(path) }
    }

    /// The version's file, open for reading, with its size; nil when it is not there.
    func open(_ version: String) async throws -> ReadableFile? {
        let path = path(version)
        return try await pool.runIfActive { () throws -> ReadableFile? in
            let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            if fd < 0 {
                if errno == ENOENT { return nil }
                throw FileError("open", path)
            }
            // Its size by seeking, not fstat: which module owns `struct stat` (Glibc or
            // CoreFoundation, both include <sys/stat.h>) depends on the order a compile
            // job loads them in, and a fresh build refused `stat()` under MemberImportVisibility.
            let size = lseek(fd, 0, SEEK_END)
            guard size >= 0, lseek(fd, 0, SEEK_SET) == 0 else {
                close(fd)
                throw FileError("stat", path)
            }
            return ReadableFile(fd: fd, size: Int(size))
        }
    }

    /// Unlinks the version's file (nothing when it is gone already).
    func remove(_ version: String) async {
        let path = path(version)
        _ = try? await pool.runIfActive { unlink(path) }
    }

    /// A failed file call: which, on what, and errno's words.
    struct FileError: Error, CustomStringConvertible {
        let description: String
        init(_ call: String, _ path: String) { description = "\(call) \(path): \(String(cString: strerror(errno)))" }
    }
}

/// An upload being written: bytes are gathered and written in 256 KiB runs.
/// Owned by one request's task (not Sendable: the compiler keeps it there); the pool's thread gets copies.
final class PartialFile {
    let path: String
    private var fd: Int32
    private let pool: NIOThreadPool
    private var pending: [UInt8] = []
    private(set) var size = 0
    private static let run = 256 * 1024

    init(fd: Int32, path: String, pool: NIOThreadPool) {
        self.fd = fd
        self.path = path
        self.pool = pool
        pending.reserveCapacity(Self.run)
    }

    deinit { if fd >= 0 { close(fd) } }

    func append(_ bytes: ByteBuffer) async throws {
        pending.append(contentsOf: bytes.readableBytesView)
        size += bytes.readableBytes
        if pending.count >= Self.run { try await flush() }
    }

    /// Writes what is pending and closes the file.
    func finish() async throws {
        guard fd >= 0 else { return }
        try await flush()
        let fd = self.fd
        self.fd = -1
        close(fd)
    }

    private func flush() async throws {
        guard !pending.isEmpty, fd >= 0 else { return }
        let (fd, bytes, path) = (self.fd, pending, self.path)
        pending.removeAll(keepingCapacity: true)
        try await pool.runIfActive {
            try bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw ObjectFiles.FileError("write", path)
                    }
                    offset += n
                }
            }
        }
    }
}

/// A version's file, open: read in chunks into a response body, closed when
/// the last reference goes (also when a response is never written).
final class ReadableFile: Sendable {
    let fd: Int32
    let size: Int

    init(fd: Int32, size: Int) {
        self.fd = fd
        self.size = size
    }

    deinit { close(fd) }

    /// The next chunk from the current offset; empty at the end.
    func read(upTo count: Int, pool: NIOThreadPool = .singleton) async throws -> ByteBuffer {
        let fd = self.fd
        return try await pool.runIfActive { () throws -> ByteBuffer in
            var buffer = ByteBufferAllocator().buffer(capacity: count)
            try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { raw -> Int in
                while true {
                    let n = Glibc.read(fd, raw.baseAddress!, count)
                    if n < 0, errno == EINTR { continue }
                    guard n >= 0 else { throw ObjectFiles.FileError("read", "object") }
                    return n
                }
            }
            return buffer
        }
    }
}
