import Foundation
import Synchronization

/// One phone's radio link under its group's `NetworkConditions`: what the
/// phone's bytes wait for (the link's queue at its bandwidth, half the round
/// trip with its jitter, a retransmission timeout for each lost segment), and
/// when it has no network (offline windows) or loses its connections (resets).
///
/// Times are seconds on the caller's monotonic clock. Until `begin` (the phone
/// arrives) the link is transparent: set-up is not shaped. The schedule of
/// windows and resets is drawn from `seed`, so a phone's is the same every run.
public final class NetworkLink: Sendable {
    public enum Direction: Sendable {
        /// Phone → backend.
        case up
        /// Backend → phone.
        case down
    }

    public let conditions: NetworkConditions
    public let phone: Int
    private let state: Mutex<State>

    /// TCP's segment (a 1,500-byte MTU less IP and TCP headers).
    static let segment = 1_460
    /// Linux's least retransmission timeout.
    static let minimumRTO = 0.2

    private struct State {
        var rng: SplitMix
        var start: Double?
        /// When each direction's queue is free again.
        var upFree = 0.0
        var downFree = 0.0
        /// Drawn ahead as time goes: offline windows (start, end) not yet over, and the next reset.
        var windows: [(start: Double, end: Double)] = []
        var drawnUntil = 0.0
        var nextReset = Double.infinity
        /// The last time `cut(since:)` looked.
        var lastCutCheck = 0.0
        /// Every offline window drawn, kept (`windows` drops those over) for `offlineTime`.
        var offlineDrawn: [(start: Double, end: Double)] = []
    }

    public init(conditions: NetworkConditions, phone: Int, seed: UInt64) {
        self.conditions = conditions
        self.phone = phone
        state = Mutex(State(rng: SplitMix(seed: seed ^ (UInt64(truncatingIfNeeded: phone) &* 0x9E37_79B9_7F4A_7C15))))
    }

    /// The phone arrived at `t`: the conditions apply from now (the first time only).
    public func begin(at t: Double) {
        state.withLock { s in
            guard s.start == nil else { return }
            s.start = t
            s.upFree = t
            s.downFree = t
            s.lastCutCheck = t
            s.drawnUntil = t
            if conditions.resetEvery > 0 { s.nextReset = t + s.rng.exponential(mean: conditions.resetEvery) }
            if case .periodic(let every, _) = conditions.offline {
                // Each phone enters its tunnels at its own phase.
                s.drawnUntil = t + s.rng.unit() * every - every
            }
        }
    }

    public var begun: Bool { state.withLock { $0.start != nil } }

    /// Whether the phone has no network at `t`.
    public func isOffline(at t: Double) -> Bool {
        state.withLock { s in
            guard s.start != nil else { return false }
            draw(&s, until: t)
            return s.windows.contains { $0.start <= t && t < $0.end }
        }
    }

    /// Seconds the phone had no network between its arrival and `t`, and the seconds from its arrival to `t`
    /// (nil before it arrived): what share of its time the offline windows took, as drawn.
    public func offlineTime(until t: Double) -> (offline: Double, total: Double)? {
        state.withLock { s in
            guard let start = s.start, t > start else { return nil }
            draw(&s, until: t)
            let offline = s.offlineDrawn.reduce(0.0) { sum, w in sum + max(0, min(w.end, t) - max(w.start, start)) }
            return (offline, t - start)
        }
    }

    /// The phone's offline windows between `from` and `to`, clipped to them, in order (none before it arrived).
    public func offlineSpans(from: Double, to: Double) -> [(start: Double, end: Double)] {
        state.withLock { s in
            guard let start = s.start, to > max(from, start) else { return [] }
            draw(&s, until: to)
            return s.offlineDrawn.compactMap { w in
                let (a, b) = (max(w.start, from, start), min(w.end, to))
                return a < b ? (a, b) : nil
            }.sorted { $0.start < $1.start }
        }
    }

    /// Whether the phone's connections were cut between the last call and `t`: an offline window
    /// began, or a reset came. The proxy asks this every 100 ms and closes the phone's connections when so.
    public func cut(at t: Double) -> Bool {
        state.withLock { s in
            guard s.start != nil else { return false }
            draw(&s, until: t)
            let since = s.lastCutCheck
            s.lastCutCheck = t
            var cut = s.windows.contains { $0.start > since && $0.start <= t }
            while s.nextReset <= t {
                if s.nextReset > since { cut = true }
                s.nextReset += s.rng.exponential(mean: conditions.resetEvery)
            }
            return cut
        }
    }

    /// When `bytes` read at `t` going `direction` reach the other end: after the bytes queued before them
    /// at the link's bandwidth, half the round trip with its jitter, and a retransmission timeout for each
    /// lost segment; never before `previous` (the connection's last arrival: TCP does not reorder).
    public func arrival(of bytes: Int, at t: Double, direction: Direction, after previous: Double) -> Double {
        state.withLock { s in
            guard s.start != nil else { return max(t, previous) }
            let c = conditions
            let bandwidth = direction == .up ? c.up : c.down
            let transmit = bandwidth > 0 ? Double(bytes * 8) / bandwidth : 0
            var departs = direction == .up ? max(t, s.upFree) : max(t, s.downFree)
            departs += transmit
            if direction == .up { s.upFree = departs } else { s.downFree = departs }
            var delay = max(0, c.rtt / 2 + (c.jitter > 0 ? (s.rng.unit() * 2 - 1) * c.jitter : 0))
            if c.loss > 0 {
                let rto = max(Self.minimumRTO, c.rtt + 4 * c.jitter)
                let segments = max(1, (bytes + Self.segment - 1) / Self.segment)
                for _ in 0..<segments where s.rng.unit() < c.loss { delay += rto }
            }
            return max(departs + delay, previous)
        }
    }

    /// The TCP handshake's round trip, which a new connection waits before its first byte; 0 before `begin`.
    public var handshake: Double { begun ? conditions.rtt : 0 }

    private func draw(_ s: inout State, until t: Double) {
        // Windows over before now (and before the sweep last looked) are done with; they are kept in order.
        let done = min(t, s.lastCutCheck) - 1
        if let keep = s.windows.firstIndex(where: { $0.end >= done }) { s.windows.removeFirst(keep) } else { s.windows.removeAll() }
        switch conditions.offline {
        case .periodic(let every, let length)?:
            while s.drawnUntil <= t {
                s.windows.append((s.drawnUntil, s.drawnUntil + length))
                s.offlineDrawn.append((s.drawnUntil, s.drawnUntil + length))
                s.drawnUntil += every
            }
        case .random(let interval, let length)?:
            while s.drawnUntil <= t {
                let start = s.drawnUntil + s.rng.exponential(mean: interval)
                let end = start + max(1, s.rng.exponential(mean: length))
                s.windows.append((start, end))
                s.offlineDrawn.append((start, end))
                s.drawnUntil = end
            }
        case nil:
            break
        }
    }
}

/// SplitMix64: a small seeded generator (ConvoyWire has no dependency on ConvoyGeo's).
struct SplitMix: Sendable {
    private var x: UInt64

    init(seed: UInt64) { x = seed }

    mutating func next() -> UInt64 {
        x &+= 0x9E37_79B9_7F4A_7C15
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// In [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    mutating func exponential(mean: Double) -> Double { -mean * log(1 - unit()) }
}
