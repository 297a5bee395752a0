import Synchronization

/// Notifications waiting to be handled: the listener puts, the router takes
/// everything there is (up to a limit) each time it wakes. Bounded: past
/// `limit` the oldest go, and the next batch says how many.
final class Inbox: Sendable {
    private struct State {
        var items: [String] = []
        var dropped = 0
        var waiter: CheckedContinuation<Void, Never>?
        var closed = false
    }
    private let state = Mutex(State())
    let limit: Int

    init(limit: Int) { self.limit = limit }

    func put(_ item: String) {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.items.append(item)
            let over = s.items.count - limit
            if over > 0 {
                s.items.removeFirst(over)
                s.dropped += over
            }
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    func close() {
        let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
            s.closed = true
            defer { s.waiter = nil }
            return s.waiter
        }
        waiter?.resume()
    }

    /// The next items (and how many were dropped before them), waiting for at
    /// least one; nil once closed.
    func take(upTo max: Int) async -> (items: [String], dropped: Int)? {
        while true {
            if let batch = state.withLock({ s -> (items: [String], dropped: Int)? in
                guard !s.items.isEmpty else { return nil }
                let n = min(max, s.items.count)
                defer {
                    s.items.removeFirst(n)
                    s.dropped = 0
                }
                return (Array(s.items.prefix(n)), s.dropped)
            }) {
                return batch
            }
            if state.withLock({ $0.closed }) || Task.isCancelled { return nil }
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if !s.items.isEmpty || s.closed { return true }
                    s.waiter = c
                    return false
                }
                if resumeNow { c.resume() }
            }
        }
    }
}
