import Foundation

/// What `convoy gpx inspect` reports about one track.
public struct TrackInspection: Hashable, Sendable, Codable {
    public struct Bounds: Hashable, Sendable, Codable {
        public var minLat: Double, minLon: Double, maxLat: Double, maxLon: Double
    }
    public struct Speeds: Hashable, Sendable, Codable {
        /// m/s between consecutive points.
        public var median: Double, p95: Double, max: Double
        /// The fastest plausible travel (the import policy's `maximumSpeed`), and how many steps exceed it.
        public var ceiling: Double, stepsOverCeiling: Int
    }
    public struct Gaps: Hashable, Sendable, Codable {
        /// Median seconds between points.
        public var medianInterval: Double
        /// Intervals longer than `threshold` seconds (max(5 s, 3 × median)).
        public var threshold: Double
        public var count: Int
        public var longest: Double
    }

    public var name: String
    public var kind: String
    public var points: Int
    public var segments: Int
    public var duration: Double
    public var distance: Double
    public var speed: Speeds
    public var gaps: Gaps
    public var pointsWithoutTime: Int
    public var bounds: Bounds
    public var importPolicy: ImportReport

    public init(_ imported: ImportedTrack, ceiling: Double = ImportPolicy.default.maximumSpeed) {
        let t = imported.track
        name = t.name
        kind = imported.kind
        points = t.count
        segments = imported.report.segmentsRead - imported.report.emptySegmentsDropped
        duration = t.duration
        distance = t.distance
        pointsWithoutTime = imported.report.pointsWithoutTime
        importPolicy = imported.report

        var intervals: [Double] = [], speeds: [Double] = []
        for i in 1..<max(1, t.count) {
            let dt = t.times[i] - t.times[i - 1]
            intervals.append(dt)
            speeds.append(t.points[i - 1].distance(to: t.points[i]) / dt)
        }
        speed = Speeds(median: Self.quantile(speeds, 0.5), p95: Self.quantile(speeds, 0.95), max: speeds.max() ?? 0,
                       ceiling: ceiling, stepsOverCeiling: speeds.count { $0 > ceiling })
        let median = Self.quantile(intervals, 0.5)
        let threshold = max(5, 3 * median)
        let long = intervals.filter { $0 > threshold }
        gaps = Gaps(medianInterval: median, threshold: threshold, count: long.count, longest: intervals.max() ?? 0)
        bounds = Bounds(minLat: t.points.map(\.lat).min()!, minLon: t.points.map(\.lon).min()!,
                        maxLat: t.points.map(\.lat).max()!, maxLon: t.points.map(\.lon).max()!)
    }

    /// Nearest-rank quantile; 0 for an empty sample.
    static func quantile(_ values: [Double], _ q: Double) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
        return sorted[min(max(rank, 0), sorted.count - 1)]
    }
}
