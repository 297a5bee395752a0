import Foundation
import Synchronization

extension RealtimeClient {
    /// The first result of an attempt, whichever comes first: the connection's end, the open timeout, cancellation.
    final class Outcome: Sendable {
        private struct State {
            var result: Result<Void, any Error>?
            var waiter: CheckedContinuation<Void, any Error>?
            var open = false
        }

        private let state = Mutex(State())

        /// The connection opened; false when the attempt was already given up.
        func markOpen() -> Bool {
            state.withLock { s in
                guard s.result == nil else { return false }
                s.open = true
                return true
            }
        }

        /// The attempt's result, if it is the first; with `unlessOpen`, only if it has not opened. True when taken.
        @discardableResult
        func resume(_ result: Result<Void, any Error>, unlessOpen: Bool = false) -> Bool {
            let (taken, waiter) = state.withLock { s -> (Bool, CheckedContinuation<Void, any Error>?) in
                guard s.result == nil, !(unlessOpen && s.open) else { return (false, nil) }
                s.result = result
                defer { s.waiter = nil }
                return (true, s.waiter)
            }
            waiter?.resume(with: result)
            return taken
        }

        func wait() async throws {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { s -> Result<Void, any Error>? in
                    if let r = s.result { return r }
                    s.waiter = c
                    return nil
                }
                if let ready { c.resume(with: ready) }
            }
        }
    }

    /// How long a connection may take to open (TCP, TLS and the websocket upgrade) by default, seconds.
    public static let openTimeout = 20.0

    struct OpenTimeout: Error, CustomStringConvertible {
        var description: String { "the websocket did not open in time" }
    }

    struct HeartbeatTimeout: Error, CustomStringConvertible {
        var description: String { "heartbeat timeout" }
    }
}
