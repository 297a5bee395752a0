import ConvoyTime
import ConvoyWire
import Foundation
import Synchronization

/// The run's two times: the scheduler's monotonic seconds, which every
/// intended time and duration uses, and Unix time for what goes on the wire
/// (`ts`, `sent_ns`). The wall time of a monotonic instant is fixed once at
/// the start, so in one process both ends of an end-to-end latency come from
/// the same monotonic clock; across processes they rely on synchronised
/// clocks (docs/results.md). A view of the clock the run is given (the
/// machine's, or a test's `ManualClock`), itself a `ConvoyClock`: what the
/// run hands on (the scheduler, each phone's Realtime client) keeps its times.
public struct RunClock: ConvoyClock {
    public let monotonic: any ConvoyClock
    /// Unix seconds at monotonic 0.
    public let wallOrigin: Double

    public init(_ monotonic: any ConvoyClock = SystemClock()) {
        self.monotonic = monotonic
        wallOrigin = monotonic.wallNow() - monotonic.now()
    }

    public func now() -> Double { monotonic.now() }
    public func sleep(until deadline: Double) async throws { try await monotonic.sleep(until: deadline) }
    /// Unix seconds at monotonic time `t`.
    public func wall(_ t: Double) -> Double { wallOrigin + t }
    public func wallNow() -> Double { wallOrigin + monotonic.now() }
    /// The monotonic time of Unix time `unix`.
    public func monotonic(ofWall unix: Double) -> Double { unix - wallOrigin }
}

/// Which devices are online (subscribed to Realtime and not yet leaving): an
/// update is expected at a friend only if the friend was online when it was
/// sent. Updates to friends not online are counted apart (`sent_offline`).
public final class Presence: Sendable {
    private let online: Mutex<[Bool]>
    private let count = Atomic(0)

    public init(devices: Int) { online = Mutex(Array(repeating: false, count: devices)) }

    public func set(_ device: Int, online value: Bool) {
        let changed = online.withLock { o -> Bool in
            guard o[device] != value else { return false }
            o[device] = value
            return true
        }
        if changed { count.wrappingAdd(value ? 1 : -1, ordering: .relaxed) }
    }

    public func isOnline(_ device: Int) -> Bool { online.withLock { $0[device] } }

    /// Whether each of `devices` is online, under one lock.
    public func areOnline(_ devices: [Int]) -> [Bool] { online.withLock { o in devices.map { o[$0] } } }

    public var onlineCount: Int { count.load(ordering: .relaxed) }

    /// How many devices there are.
    public var devices: Int { online.withLock { $0.count } }

    /// How many of each range of devices are online, under one lock.
    public func onlineCounts(_ ranges: [Range<Int>]) -> [Int] {
        online.withLock { o in ranges.map { r in r.reduce(0) { $0 + (o[$1] ? 1 : 0) } } }
    }
}
