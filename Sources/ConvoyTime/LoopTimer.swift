import NIOCore
import NIOPosix
import Synchronization

/// Sleeping on NIO's event loops rather than on Dispatch's timer thread: the
/// sleeper is woken by the loop it slept on (the one the caller runs on, when
/// it runs on one), so when Swift's tasks run on NIO's loops too
/// (`ConcurrencyOnLoops`) a timer costs no thread switch.
enum LoopTimer {
    /// Returns at `deadline` (nanoseconds on NIO's monotonic clock); throws when the task is cancelled.
    static func sleep(until deadline: NIODeadline) async throws {
        let loop = MultiThreadedEventLoopGroup.singleton.any()
        let waiter = Waiter()
        try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { (c: UnsafeContinuation<Void, any Error>) in
                guard waiter.set(c) else { return c.resume(throwing: CancellationError()) }
                let scheduled = loop.scheduleTask(deadline: deadline) { waiter.resume(with: .success(())) }
                waiter.onCancel { scheduled.cancel() }
            }
        } onCancel: {
            waiter.resume(with: .failure(CancellationError()))
        }
    }

    /// The continuation, resumed once: by the timer or by cancellation, whichever is first.
    private final class Waiter: Sendable {
        private struct State {
            var continuation: UnsafeContinuation<Void, any Error>?
            var done = false
            var cancelTimer: (@Sendable () -> Void)?
        }
        private let state = Mutex(State())

        /// False when it was cancelled before the continuation arrived.
        func set(_ c: UnsafeContinuation<Void, any Error>) -> Bool {
            state.withLock { s in
                guard !s.done else { return false }
                s.continuation = c
                return true
            }
        }

        func onCancel(_ cancel: @escaping @Sendable () -> Void) {
            let now = state.withLock { s -> Bool in
                if s.done { return true }
                s.cancelTimer = cancel
                return false
            }
            if now { cancel() }
        }

        func resume(with result: Result<Void, any Error>) {
            let (c, cancel) = state.withLock { s -> (UnsafeContinuation<Void, any Error>?, (@Sendable () -> Void)?) in
                guard !s.done else { return (nil, nil) }
                s.done = true
                defer { s.continuation = nil; s.cancelTimer = nil }
                return (s.continuation, s.cancelTimer)
            }
            if case .failure = result { cancel?() }
            c?.resume(with: result)
        }
    }
}

/// Swift's tasks on NIO's event loops (`NIOSingletons`' takeover of the global
/// executor): a task resumed by a websocket read, a timer or another task on a
/// loop stays on that loop's thread instead of waking one of the cooperative
/// pool's. Install once, before the fleet starts.
public enum ConcurrencyOnLoops {
    private static let installed = Atomic(false)

    /// True when Swift's global executor is now NIO's loops.
    @discardableResult
    public static func install() -> Bool {
        guard installed.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return true }
        return NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
    }
}
