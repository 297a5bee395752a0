#if canImport(Glibc)
import Glibc
#endif

/// A lock ThreadSanitizer can see, for `make test-tsan` only (docs/sanitizers.md).
///
/// Synchronization's `Mutex` is a futex in the standard library, which is not built with ThreadSanitizer: TSan sees
/// no lock taken, and reports every access made under one as a race (a four-thread `withLock` loop does it). Under
/// `-DCONVOY_TSAN` each module that takes locks (`Mutex+TSan.swift` in it) names this type `Mutex` instead: a
/// pthread mutex, whose calls TSan intercepts. Same `withLock`; a class, not `~Copyable`. Other builds never use it.
public final class VisibleMutex<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    public init(_ value: sending Value) {
        self.value = value
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value)
    }
}
