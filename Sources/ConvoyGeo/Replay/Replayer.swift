/// What a track end does when a device's replay runs past it.
public enum ReplayMode: String, Hashable, Sendable, Codable, CaseIterable {
    /// Start again from the first point.
    case loop
    /// Walk the track backwards, then forwards again.
    case pingPong = "ping-pong"
    /// Stay at the last point.
    case hold
}

/// The true position of a replaying device at one instant.
public struct ReplayFix: Hashable, Sendable {
    public var position: GeoPoint
    public var elevation: Double?
    /// Ground speed, m/s (after the speed factor).
    public var speed: Double
    /// Direction of travel, degrees from north.
    public var heading: Double
    /// HDOP and satellites of the source point, where the track had them.
    public var hdop: Double?
    public var satellites: Int?
    /// Seconds along the track this instant maps to.
    public var trackTime: Double
}

/// Positions along a shared track for one device: its own time offset and speed
/// factor keep thousands of devices on a handful of tracks out of lockstep.
///
/// Queries at increasing times are O(1) amortised (a cursor); any order works.
public struct Replayer: Sendable {
    public let track: TimedTrack
    public var mode: ReplayMode
    /// Seconds into the track at device time 0.
    public var offset: Double
    /// Track seconds per device second (> 0): 2 replays twice as fast.
    public var speedFactor: Double
    private var cursor = 0

    public init(track: TimedTrack, mode: ReplayMode = .loop, offset: Double = 0, speedFactor: Double = 1) throws(GeoError) {
        guard speedFactor > 0, speedFactor.isFinite else {
            throw .badParameter("the speed factor must be a positive number, got \(speedFactor)", key: "speedFactor")
        }
        guard offset.isFinite else { throw .badParameter("the time offset must be finite", key: "offset") }
        self.track = track
        self.mode = mode
        self.offset = offset
        self.speedFactor = speedFactor
    }

    /// The position at device time `t` seconds.
    public mutating func fix(at t: Double) -> ReplayFix {
        let d = track.duration
        let raw = offset + t * speedFactor
        guard d > 0 else { return fixAt(trackTime: 0, direction: 1, moving: false) }
        switch mode {
        case .loop:
            return fixAt(trackTime: positiveRemainder(raw, d), direction: 1, moving: true)
        case .pingPong:
            let m = positiveRemainder(raw, 2 * d)
            return m <= d ? fixAt(trackTime: m, direction: 1, moving: true)
                          : fixAt(trackTime: 2 * d - m, direction: -1, moving: true)
        case .hold:
            let clamped = min(max(raw, 0), d)
            return fixAt(trackTime: clamped, direction: 1, moving: raw >= 0 && raw < d)
        }
    }

    private func positiveRemainder(_ x: Double, _ m: Double) -> Double {
        let r = x.truncatingRemainder(dividingBy: m)
        return r < 0 ? r + m : r
    }

    private mutating func fixAt(trackTime τ: Double, direction: Double, moving: Bool) -> ReplayFix {
        let times = track.times
        let i = index(for: τ)
        let p0 = track.points[i]
        guard i + 1 < times.count else {
            return ReplayFix(position: p0, elevation: track.elevations[i], speed: 0, heading: 0,
                             hdop: track.hdops[i], satellites: track.satellites[i], trackTime: τ)
        }
        let p1 = track.points[i + 1]
        let dt = times[i + 1] - times[i]
        let f = min(max((τ - times[i]) / dt, 0), 1)
        let elevation: Double? = switch (track.elevations[i], track.elevations[i + 1]) {
        case let (e0?, e1?): e0 + (e1 - e0) * f
        case let (e0?, nil): e0
        default: nil
        }
        let distance = p0.distance(to: p1)
        var heading = distance > 0 ? p0.bearing(to: p1) : 0
        if direction < 0 { heading = (heading + 180).truncatingRemainder(dividingBy: 360) }
        let near = f < 0.5 ? i : i + 1
        return ReplayFix(position: p0.interpolated(to: p1, fraction: f), elevation: elevation,
                         speed: moving ? distance / dt * speedFactor : 0, heading: heading,
                         hdop: track.hdops[near], satellites: track.satellites[near], trackTime: τ)
    }

    /// The last point index with time ≤ τ; starts from the cursor.
    private mutating func index(for τ: Double) -> Int {
        let times = track.times
        if cursor < times.count, times[cursor] <= τ, cursor + 1 == times.count || τ < times[cursor + 1] {
            return cursor
        }
        if cursor + 2 < times.count, times[cursor + 1] <= τ, τ < times[cursor + 2] {
            cursor += 1
            return cursor
        }
        var lo = 0, hi = times.count - 1
        while lo < hi {
            let mid = (lo + hi + 1) / 2
            if times[mid] <= τ { lo = mid } else { hi = mid - 1 }
        }
        cursor = lo
        return lo
    }
}
