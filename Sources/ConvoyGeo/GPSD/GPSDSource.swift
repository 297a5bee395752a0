import Foundation
import Synchronization

/// Live fixes from gpsd over libgps. Connects to `HOST:PORT`, watches every
/// device as JSON, and hands each subscriber an `AsyncStream<Event>`.
///
/// libgps blocks, so the connection lives on a thread of its own (never the
/// Swift concurrency pool); it waits for gpsd with poll(2), at most `pollInterval` at a time, so it
/// notices within that time when it should stop. It runs while anyone is
/// subscribed: the first `events()` starts it, and it ends when the last
/// subscriber's stream ends (its task cancelled, or `stop()`). When gpsd goes
/// away the source reports `.disconnected` and reconnects with capped backoff.
///
/// gpsd may send the same TPV twice (after GGA and again after RMC): a report
/// whose time equals the device's previous one is merged into `latest(device:)`
/// but not delivered again.
public final class GPSDSource: Sendable {
    public enum Event: Hashable, Sendable {
        /// Connected and watching (again, after a reconnect).
        case connected(GPSDAddress)
        /// A position (2-D or 3-D).
        case fix(GPSDFix)
        /// A report without a fix (mode 0 or 1): skipped, for counting.
        case noFix(device: String)
        /// A connection attempt failed; the next comes after `retryIn` seconds.
        case unreachable(reason: String, retryIn: Double)
        /// An open connection was lost; reconnecting follows.
        case disconnected(reason: String)
    }

    public struct Configuration: Sendable {
        public var address: GPSDAddress
        /// Receivers to report (gpsd's device paths); empty means every device.
        public var devices: Set<String>
        /// Longest wait for gpsd's next line, seconds: how soon a stop is noticed.
        public var pollInterval: Double
        /// Backoff between connection attempts: doubles from `initialBackoff` up to `maximumBackoff`.
        public var initialBackoff: Double
        public var maximumBackoff: Double

        public init(address: GPSDAddress, devices: Set<String> = [], pollInterval: Double = 0.1,
                    initialBackoff: Double = 0.25, maximumBackoff: Double = 5) {
            self.address = address
            self.devices = devices
            self.pollInterval = pollInterval
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    private struct Subscriber {
        let devices: Set<String>
        let continuation: AsyncStream<Event>.Continuation
    }

    private struct State {
        var subscribers: [UInt64: Subscriber] = [:]
        var nextID: UInt64 = 0
        var latest: [String: GPSDFix] = [:]
        var threadRunning = false
        var stopped = false
    }

    public let configuration: Configuration
    private let state = Mutex(State())

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    deinit { stop() }

    /// A stream of what the source sees, for fixes of `devices` (empty: every
    /// device the configuration allows). Connection events go to everyone.
    /// The first subscription connects; ending the stream (cancel the task
    /// iterating it) unsubscribes. After `stop()` the stream is finished at once.
    public func events(devices: Set<String> = [],
                       buffering: AsyncStream<Event>.Continuation.BufferingPolicy = .bufferingNewest(4096))
        -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: buffering)
        let (id, start) = state.withLock { s -> (UInt64?, Bool) in
            guard !s.stopped else { return (nil, false) }
            let id = s.nextID
            s.nextID += 1
            s.subscribers[id] = Subscriber(devices: devices, continuation: continuation)
            let start = !s.threadRunning
            s.threadRunning = true
            return (id, start)
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        if start {
            let thread = Thread { [self] in GPSDReader(source: self).run() }
            thread.name = "convoy-gpsd"
            thread.start()
        }
        return stream
    }

    /// The newest fix from `device`, whether or not anyone took it from a stream.
    public func latest(device: String) -> GPSDFix? { state.withLock { $0.latest[device] } }

    /// Devices that have delivered a fix, sorted.
    public var devices: [String] { state.withLock { $0.latest.keys.sorted() } }

    /// Ends every stream and the connection (within `pollInterval`); for good.
    public func stop() {
        let continuations = state.withLock { s -> [AsyncStream<Event>.Continuation] in
            s.stopped = true
            defer { s.subscribers = [:] }
            return s.subscribers.values.map(\.continuation)
        }
        for c in continuations { c.finish() }
    }

    // MARK: for the reader thread

    /// Whether the reader should go on; when not, it is marked ended in the same lock.
    func shouldRun() -> Bool {
        state.withLock { s in
            if s.stopped || s.subscribers.isEmpty {
                s.threadRunning = false
                return false
            }
            return true
        }
    }

    func deliver(_ event: Event) {
        let device: String?
        switch event {
        case .fix(let f): device = f.device
        case .noFix(let d): device = d
        default: device = nil
        }
        if let device, !configuration.devices.isEmpty, !configuration.devices.contains(device) { return }
        let targets = state.withLock { s -> [AsyncStream<Event>.Continuation] in
            if case .fix(let f) = event { s.latest[f.device] = f }
            return s.subscribers.values.compactMap { sub in
                guard let device, !sub.devices.isEmpty else { return sub.continuation }
                return sub.devices.contains(device) ? sub.continuation : nil
            }
        }
        for c in targets { c.yield(event) }
    }

    /// A repeated report of `fix`'s epoch: fills in what the earlier one lacked, delivers nothing.
    func merge(_ fix: GPSDFix) {
        state.withLock { s in
            guard var old = s.latest[fix.device], old.time == fix.time else { return }
            old.speed = old.speed ?? fix.speed
            old.track = old.track ?? fix.track
            old.hdop = old.hdop ?? fix.hdop
            old.satellites = old.satellites ?? fix.satellites
            s.latest[fix.device] = old
        }
    }
}
