/// What a group app's phone shows of its teammates (survale-spec.md: each member's last position and a
/// 10-minute trail): per teammate, its positions of the last `window` seconds, oldest first, kept compact
/// (a few thousand phones each keep a team's trails).
struct TeamMap: Sendable {
    struct Point: Sendable, Equatable {
        var lat: Float
        var lon: Float
        /// Seconds after the trail's origin (the first position it kept).
        var t: Float
    }

    struct Trail: Sendable {
        var origin: Double
        var points: [Point] = []
        /// The first kept point (older ones are dropped lazily, in bulk).
        var start = 0

        var count: Int { points.count - start }
        var last: Point? { points.last }
    }

    /// 10 minutes, as the app draws it.
    var window: Double = 600
    private(set) var trails: [Int32: Trail] = [:]

    /// A teammate's position at `ts` (Unix seconds); one older than its last is ignored (the map shows the newest).
    mutating func add(_ teammate: Int32, lat: Double, lon: Double, ts: Double) {
        var trail = trails[teammate] ?? Trail(origin: ts)
        let t = Float(ts - trail.origin)
        if let last = trail.last, t < last.t { return }
        trail.points.append(Point(lat: Float(lat), lon: Float(lon), t: t))
        while trail.start < trail.points.count, Double(t - trail.points[trail.start].t) > window { trail.start += 1 }
        // Drop what fell out of the window once it is half the array.
        if trail.start > 32, trail.start * 2 > trail.points.count {
            trail.points.removeFirst(trail.start)
            trail.start = 0
        }
        trails[teammate] = trail
    }

    /// The teammate's trail, oldest first, with times as Unix seconds.
    func trail(of teammate: Int32) -> [(lat: Double, lon: Double, ts: Double)] {
        guard let trail = trails[teammate] else { return [] }
        return trail.points[trail.start...].map { (Double($0.lat), Double($0.lon), trail.origin + Double($0.t)) }
    }

    /// When the last position shown of the teammate was taken, Unix seconds.
    func lastSeen(_ teammate: Int32) -> Double? {
        guard let trail = trails[teammate], let last = trail.last else { return nil }
        return trail.origin + Double(last.t)
    }
}
