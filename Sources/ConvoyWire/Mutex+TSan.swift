#if CONVOY_TSAN
// make test-tsan: a Mutex ThreadSanitizer can see (ConvoySync.VisibleMutex says why).
@_exported import ConvoySync
typealias Mutex<Value> = ConvoySync.VisibleMutex<Value>
#endif
