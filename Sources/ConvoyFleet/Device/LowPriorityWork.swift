import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Work a phone would do on its own CPU that the harness does on the shared one (Closer's Argon2id key
/// derivations): on a few threads of their own at a lower priority (nice 10), so that they yield to the event
/// loops whose timings the run reports instead of stalling them. When the harness is short of CPU the work is
/// delayed (the pairing starts later), not the calls it times. (Dispatch's global queue, which ran it before,
/// runs `.userInitiated` work at nice −4: ahead of the event loops.)
public final class LowPriorityWork: Sendable {
    public static let shared = LowPriorityWork(threads: max(1, ProcessInfo.processInfo.activeProcessorCount))

    /// The threads' nice value: a tenth of an event loop's share of a busy core (CFS weights 110 against 1024),
    /// all of an idle one.
    static let nice: Int32 = 10

    /// The work not yet taken, oldest first; `waiting` counts it, so a thread takes one only after it was queued.
    private let jobs = Mutex<[@Sendable () -> Void]>([])
    private let waiting = DispatchSemaphore(value: 0)

    init(threads: Int) {
        for _ in 0..<threads {
            let thread = Thread { [self] in
                // Linux keeps the nice value per thread: 0 names the calling one.
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, Self.nice)
                while true { next()() }
            }
            thread.start()
        }
    }

    private func next() -> @Sendable () -> Void {
        waiting.wait()
        return jobs.withLock { $0.removeFirst() }
    }

    /// `work`'s result, computed on one of the low-priority threads.
    public func run<T: Sendable, E: Error>(_ work: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { done in
            jobs.withLock { $0.append { done.resume(returning: Result { () throws(E) -> T in try work() }) } }
            waiting.signal()
        }
        return try result.get()
    }
}
