import Dispatch
import Synchronization

/// An async call made from libFuzzer's synchronous callback (or a test's replay): run on a task, waited for on
/// this thread, which must never be one of the concurrency pool's (nor may `body` first read a static whose
/// initialiser calls this: it would wait on a pool thread for a task that needs one).
enum Blocking {
    static func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }
}
