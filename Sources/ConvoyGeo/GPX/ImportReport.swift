import Foundation

/// What the import policy did to one track: every change is counted, so that a
/// messy file is never quietly replayed as something else.
public struct ImportReport: Hashable, Sendable, Codable {
    /// Segments in the source (a route counts as one).
    public var segmentsRead = 0
    public var pointsRead = 0
    /// `<trkseg>` elements with no points, dropped.
    public var emptySegmentsDropped = 0
    /// Consecutive points at the same place and time (or both untimed), dropped.
    public var duplicatePointsRemoved = 0
    /// Points that had no `<time>`.
    public var pointsWithoutTime = 0
    /// Timed points whose time broke the increasing order; their time was set aside.
    public var outOfOrderTimes = 0
    /// Points given a time by the policy (interpolated or extrapolated).
    public var retimedPoints = 0
    /// The whole track had no usable time and was timed by distance at `fallbackSpeed`.
    public var retimedByDistance = false
    /// Absolute time of the first point in the source; replay is relative to it.
    public var sourceStart: Date?
    /// Seconds between consecutive segments (each is kept: the device jumps).
    public var segmentGaps: [Double] = []
    /// Plain-language notes for `convoy gpx inspect`.
    public var notes: [String] = []

    public init() {}
}

/// How messy GPX input becomes a replayable `TimedTrack` (docs/tracks.md):
/// - empty segments are dropped; segments are joined in order, gaps kept;
/// - consecutive duplicates (same place, same or no time) are dropped;
/// - times are kept along the longest strictly increasing run; the others, and
///   missing times, are interpolated by distance between their timed
///   neighbours, or extrapolated at `fallbackSpeed` beyond them;
/// - a track with no usable time is timed by distance at `fallbackSpeed`: one
///   whose times are all one placeholder, or span less time than its distance
///   takes at `maximumSpeed` (placeholders a second or less apart), counts as such;
/// - routes are timed the same way;
/// - times are re-based to the first point, so old tracks replay today.
public struct ImportPolicy: Hashable, Sendable {
    /// Speed, m/s, used to time points that have no usable time (1.4 = walking).
    public var fallbackSpeed: Double
    /// Smallest step between re-timed points at the same place, seconds.
    public var minimumStep: Double
    /// Fastest plausible travel, m/s: times that would need more over the whole track are placeholders,
    /// and `convoy gpx inspect` warns about each step faster than this.
    public var maximumSpeed: Double

    public init(fallbackSpeed: Double = 1.4, minimumStep: Double = 1, maximumSpeed: Double = 100) {
        self.fallbackSpeed = fallbackSpeed
        self.minimumStep = minimumStep
        self.maximumSpeed = maximumSpeed
    }

    public static let `default` = ImportPolicy()

    /// Speeds a person or vehicle can have: 1 cm/s to 1,000 m/s.
    public static let fallbackSpeeds: ClosedRange<Double> = 0.01...1000

    public func validate() throws(GeoError) {
        guard Self.fallbackSpeeds.contains(fallbackSpeed) else {
            throw .badParameter("the fallback speed must be within 0.01…1000 m/s, got \(fallbackSpeed)", key: "fallbackSpeed")
        }
        guard maximumSpeed >= fallbackSpeed, maximumSpeed <= 100_000 else {
            throw .badParameter("the maximum speed must be within the fallback speed (\(fallbackSpeed))…100000 m/s, got \(maximumSpeed)",
                                key: "maximumSpeed")
        }
        guard minimumStep > 0, minimumStep <= 3600 else {
            throw .badParameter("the minimum step must be within 0…3600 s, got \(minimumStep)", key: "minimumStep")
        }
    }
}
