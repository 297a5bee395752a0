import ConvoyGeo
import Synchronization

/// Positions from outside the run, such as a GPS receiver behind gpsd
/// (`convoy live`): whoever reads the receiver pushes each fix here, and the
/// devices fed by it share the newest one on their cadence, as it is: a real
/// receiver's error and accuracy, with no modelled noise on top (privacy
/// fuzzing per friend still applies).
public final class LiveFeed: Sendable {
    public struct Fix: Sendable, Equatable {
        public var position: GeoPoint
        /// Radius of 68 % confidence, metres.
        public var accuracy: Double
        /// Unix seconds, as the receiver reported it.
        public var time: Double

        public init(position: GeoPoint, accuracy: Double, time: Double) { (self.position, self.accuracy, self.time) = (position, accuracy, time) }
    }

    /// The receiver's name (gpsd's device path, or "any").
    public let name: String
    /// A fix that came in longer ago than this (seconds, by this machine's clock) is not shared.
    public let maxAge: Double
    private let state = Mutex<(latest: Fix?, at: Double, received: Int)>((nil, 0, 0))

    public init(name: String, maxAge: Double = 10) { (self.name, self.maxAge) = (name, maxAge) }

    /// A fix that came in at Unix time `now` (this machine's clock: a replayed capture's own times may be years old).
    public func update(_ fix: Fix, at now: Double) {
        state.withLock {
            $0.latest = fix
            $0.at = now
            $0.received += 1
        }
    }

    /// The newest fix if it came in at most `maxAge` before Unix time `now`.
    public func current(now: Double) -> Fix? {
        state.withLock { s in now - s.at <= maxAge ? s.latest : nil }
    }

    /// Fixes pushed so far.
    public var received: Int { state.withLock { $0.received } }
}
