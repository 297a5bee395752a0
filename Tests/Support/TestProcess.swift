import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A child process for the tests, as Foundation's `Process` is used there (executable, arguments, standard
/// output and error as a `Pipe` or a `FileHandle`, run, wait, signals, exit status), spawned with
/// posix_spawn. Not Foundation's: on Linux its `run()` lists /proc/self/fd to close every inherited
/// descriptor and over-reads each directory entry (swift-corelibs-foundation #5472), which crashes the
/// test process now and then once fleets in it hold a thousand descriptors. Here the child closes them
/// with glibc's `posix_spawn_file_actions_addclosefrom_np`.
public final class TestProcess: @unchecked Sendable {
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    public var executableURL: URL?
    public var arguments: [String]?
    public var environment: [String: String]?
    /// A `Pipe` (its read end becomes the child's) or a `FileHandle`; nil: /dev/null.
    public var standardInput: Any?
    /// A `Pipe` (its write end becomes the child's) or a `FileHandle`; nil inherits the test process's.
    public var standardOutput: Any?
    public var standardError: Any?

    /// Called once the child has exited, on a thread of its own.
    public var terminationHandler: (@Sendable (TestProcess) -> Void)?

    private struct State {
        var pid: pid_t = 0
        var status: Int32?
    }
    private let state = Mutex(State())
    private let exited = NSCondition()

    public init() {}

    public var processIdentifier: Int32 { state.withLock { $0.pid } }

    public func run() throws {
        guard let path = executableURL?.path else { throw SpawnError(message: "no executable", code: EINVAL) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let pipe = standardInput as? Pipe {
            posix_spawn_file_actions_adddup2(&actions, pipe.fileHandleForReading.fileDescriptor, 0)
        } else if let handle = standardInput as? FileHandle {
            posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        for (fd, target) in [(Int32(1), standardOutput), (2, standardError)] {
            if let pipe = target as? Pipe {
                posix_spawn_file_actions_adddup2(&actions, pipe.fileHandleForWriting.fileDescriptor, fd)
            } else if let handle = target as? FileHandle {
                posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, fd)
            }
        }
        guard let closeFrom = Self.closeFrom else { throw SpawnError(message: "posix_spawn_file_actions_addclosefrom_np is missing", code: ENOSYS) }
        _ = closeFrom(&actions, 3)

        // A child of its own: default signal dispositions and nothing blocked (the spawning thread may be a
        // dispatch worker, which blocks every signal: inherited, SIGTERM would never reach the child), and its
        // own process group, as Foundation's Process gives it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t(), all = sigset_t()
        sigemptyset(&none)
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = ([path] + (arguments ?? [])).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let env = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { env?.forEach { free($0) } }
        var spawned: pid_t = 0
        let rc = env.map { e in posix_spawn(&spawned, path, &actions, &attributes, argv, e) }
            ?? posix_spawn(&spawned, path, &actions, &attributes, argv, environ)
        guard rc == 0 else { throw SpawnError(message: "cannot start \(path)", code: rc) }
        let pid = spawned
        state.withLock { $0.pid = pid }
        // One reaper per child: it waits for the exit, keeps the status, wakes the waiters, calls the handler.
        Thread { [self] in
            var status: Int32 = 0
            var rc: pid_t
            repeat { rc = waitpid(pid, &status, 0) } while rc == -1 && errno == EINTR
            exited.lock()
            state.withLock { $0.status = status }
            exited.broadcast()
            exited.unlock()
            terminationHandler?(self)
        }.start()
        // The child has its own copies of the pipes' write ends: the reader sees the end when the child exits.
        for target in [standardOutput, standardError] {
            if let pipe = target as? Pipe { try? pipe.fileHandleForWriting.close() }
        }
        if let pipe = standardInput as? Pipe { try? pipe.fileHandleForReading.close() }
    }

    public var isRunning: Bool { state.withLock { $0.pid > 0 && $0.status == nil } }

    public func waitUntilExit() {
        exited.lock()
        while state.withLock({ $0.pid > 0 && $0.status == nil }) { exited.wait() }
        exited.unlock()
    }

    public func terminate() { signal(SIGTERM) }
    public func interrupt() { signal(SIGINT) }

    private func signal(_ s: Int32) {
        let pid = state.withLock { $0.status == nil ? $0.pid : 0 }
        if pid > 0 { kill(pid, s) }
    }

    public var terminationStatus: Int32 {
        let status = state.withLock { $0.status } ?? 0
        return status & 0x7f == 0 ? (status >> 8) & 0xff : status & 0x7f
    }

    public var terminationReason: TerminationReason {
        (state.withLock { $0.status } ?? 0) & 0x7f == 0 ? .exit : .uncaughtSignal
    }

    public struct SpawnError: Error, CustomStringConvertible {
        public let message: String
        public let code: Int32
        public var description: String { "\(message): \(String(cString: strerror(code)))" }
    }

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not declare.
    private static let closeFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()
}
