import Foundation
import NIOCore
import Synchronization

/// Time, as every part of Convoy is given it: the phones' scheduler and
/// Realtime client, the retention checker, and `convoy serve` (token expiry,
/// retention, invite lifetimes) all take one of these, so tests move time by
/// hand (`ManualClock`) instead of sleeping.
public protocol ConvoyClock: Sendable {
    /// Monotonic seconds: intervals, deadlines, schedules.
    func now() -> Double
    /// Unix time, seconds.
    func wallNow() -> Double
    /// Returns at monotonic `deadline` or later (at once if it has passed); throws when the task is cancelled.
    func sleep(until deadline: Double) async throws
}

extension ConvoyClock {
    /// Unix time as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: wallNow()) }

    /// Waits `seconds` on this clock.
    public func sleep(for seconds: Double) async throws { try await sleep(until: now() + seconds) }
}

/// The machine's clocks: the monotonic clock (seconds since the process's
/// first reading) and the system's wall clock.
public struct SystemClock: ConvoyClock {
    private static let origin = ContinuousClock.now

    public init() {}

    public func now() -> Double {
        let d = ContinuousClock.now - Self.origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    public func wallNow() -> Double { Date().timeIntervalSince1970 }

    public func sleep(until deadline: Double) async throws {
        guard deadline.isFinite else {
            while true { try await Task.sleep(for: .seconds(3600)) }  // until cancelled
        }
        let wait = deadline - now()
        // On NIO's loops (`LoopTimer`), not coalesced: scheduler lag is measured.
        if wait > 0 { try await LoopTimer.sleep(until: NIODeadline.now() + TimeAmount.nanoseconds(Int64(wait * 1e9))) }
    }
}

/// A clock that moves only when told to; sleepers wake when it reaches their
/// deadline. Monotonic time starts at 0, wall time at `wallStart`; both move
/// together (moving back is allowed, for tests of clock skew, and wakes nobody).
public final class ManualClock: ConvoyClock {
    private struct Sleeper {
        var deadline: Double
        var continuation: CheckedContinuation<Void, any Error>
    }
    private struct Watcher {
        var matches: @Sendable (Double) -> Bool
        var continuation: CheckedContinuation<Double, Never>
    }
    private struct State {
        var now = 0.0
        var sleepers: [UInt64: Sleeper] = [:]
        var watchers: [Watcher] = []
        var next: UInt64 = 0
    }
    private let state = Mutex(State())
    private let wallStart: Double

    public init(wallStart: Double = 1_767_600_000) { self.wallStart = wallStart }

    public convenience init(_ start: Date) { self.init(wallStart: start.timeIntervalSince1970) }

    public func now() -> Double { state.withLock { $0.now } }
    public func wallNow() -> Double { wallStart + now() }

    /// Moves to monotonic `t`, waking the sleepers whose deadline it reaches.
    public func advance(to t: Double) {
        let wake = state.withLock { s -> [CheckedContinuation<Void, any Error>] in
            s.now = t
            let due = s.sleepers.filter { $0.value.deadline <= t }
            for k in due.keys { s.sleepers[k] = nil }
            return due.values.map(\.continuation)
        }
        for c in wake { c.resume() }
    }

    public func advance(by seconds: Double) { advance(to: now() + seconds) }

    /// Waits until something sleeps until a deadline that `matches` (returns at once if something does
    /// now) and returns that deadline: a test learns that a timer is set, and to what, before it moves the clock.
    public func sleeper(where matches: @escaping @Sendable (Double) -> Bool) async -> Double {
        await withCheckedContinuation { (c: CheckedContinuation<Double, Never>) in
            let now = state.withLock { s -> Double? in
                if let found = s.sleepers.values.map(\.deadline).sorted().first(where: matches) { return found }
                s.watchers.append(Watcher(matches: matches, continuation: c))
                return nil
            }
            if let now { c.resume(returning: now) }
        }
    }

    public func sleep(until deadline: Double) async throws {
        let id = state.withLock { s -> UInt64 in
            s.next += 1
            return s.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
                let (now, watching) = state.withLock { s -> (Result<Void, any Error>?, [Watcher]) in
                    if Task.isCancelled { return (.failure(CancellationError()), []) }
                    if s.now >= deadline { return (.success(()), []) }
                    s.sleepers[id] = Sleeper(deadline: deadline, continuation: c)
                    let watching = s.watchers.filter { $0.matches(deadline) }
                    s.watchers.removeAll { $0.matches(deadline) }
                    return (nil, watching)
                }
                if let now { c.resume(with: now) }
                for w in watching { w.continuation.resume(returning: deadline) }
            }
        } onCancel: {
            let c = state.withLock { $0.sleepers.removeValue(forKey: id) }
            c?.continuation.resume(throwing: CancellationError())
        }
    }
}
