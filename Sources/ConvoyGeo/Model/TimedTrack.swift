import Foundation

/// A track ready to replay: positions at strictly increasing times, relative to
/// the first point (seconds), plus what the source said about signal quality.
///
/// A value type over arrays: thousands of devices share one copy.
public struct TimedTrack: Hashable, Sendable {
    public var name: String
    /// Seconds since the first point; strictly increasing, `times[0] == 0`.
    public private(set) var times: [Double]
    public private(set) var points: [GeoPoint]
    public private(set) var elevations: [Double?]
    /// HDOP per point where the source had it (urban canyons show as high HDOP).
    public private(set) var hdops: [Double?]
    /// Satellites per point where known.
    public private(set) var satellites: [Int?]
    /// The absolute time of the first point when the source had one.
    public var start: Date?

    public init(name: String, times: [Double], points: [GeoPoint], elevations: [Double?]? = nil,
                hdops: [Double?]? = nil, satellites: [Int?]? = nil, start: Date? = nil) throws(GeoError) {
        guard !points.isEmpty, times.count == points.count else {
            throw .badParameter("a track needs at least one point and one time per point", key: "track")
        }
        for (key, count) in [("elevations", elevations?.count), ("hdops", hdops?.count), ("satellites", satellites?.count)] {
            if let count, count != points.count {
                throw .badParameter("a track needs one of \(key) per point: \(count) for \(points.count) points", key: key)
            }
        }
        for (i, p) in points.enumerated() where !(abs(p.lat) <= 90 && abs(p.lon) <= 180) {
            throw .badParameter("point \(i + 1) is not a position: \(p.lat), \(p.lon)", key: "track")
        }
        for i in times.indices where !times[i].isFinite || (i > 0 && !(times[i] > times[i - 1])) {
            throw .badParameter("track times must be finite and increase strictly (point \(i + 1))", key: "track")
        }
        if let e = elevations?.first(where: { $0.map { !$0.isFinite } ?? false }) {
            throw .badParameter("elevation \(e!) is not finite", key: "elevations")
        }
        self.name = name
        let t0 = times[0]
        self.times = t0 == 0 ? times : times.map { $0 - t0 }
        self.points = points
        self.elevations = elevations ?? Array(repeating: nil, count: points.count)
        self.hdops = hdops ?? Array(repeating: nil, count: points.count)
        self.satellites = satellites ?? Array(repeating: nil, count: points.count)
        self.start = start.map { $0.addingTimeInterval(0) }
    }

    public var count: Int { points.count }
    public var duration: Double { times.last ?? 0 }

    /// Total path length in metres.
    public var distance: Double {
        zip(points, points.dropFirst()).reduce(0) { $0 + $1.0.distance(to: $1.1) }
    }
}
