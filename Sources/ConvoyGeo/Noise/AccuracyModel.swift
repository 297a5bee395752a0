import Foundation

/// How wrong a simulated GPS is, and what it says about it (docs/noise.md).
///
/// Phones report accuracy as the 68 % horizontal radius. For a 2-D Gaussian
/// error with per-axis σ that radius is σ·√(−2 ln 0.32) ≈ 1.51 σ, so Convoy
/// derives σ from the configured accuracy and reports the radius of the error it
/// actually applies: the fraction of fixes inside their reported radius is 68 %.
public struct AccuracyModel: Hashable, Sendable, Codable {
    /// Open-sky 68 % radius, metres (a phone outdoors: 3–5 m).
    public var accuracy68: Double
    /// Correlation time τ of the first-order Gauss–Markov error, seconds.
    public var correlationTime: Double
    public var urbanCanyon: UrbanCanyon
    public var denied: GPSDenied
    /// Probability that a fix is missing altogether.
    public var dropoutProbability: Double

    public init(accuracy68: Double = 5, correlationTime: Double = 60, urbanCanyon: UrbanCanyon = .init(),
                denied: GPSDenied = .init(), dropoutProbability: Double = 0) {
        self.accuracy68 = accuracy68
        self.correlationTime = correlationTime
        self.urbanCanyon = urbanCanyon
        self.denied = denied
        self.dropoutProbability = dropoutProbability
    }

    /// √(−2 ln 0.32): the 68 % radius of a 2-D Gaussian in units of σ.
    public static let radius68PerSigma = (-2 * log(0.32)).squareRoot()
    /// √(−2 ln 0.05): the 95 % radius in units of σ (gpsd's `eph` is about this).
    public static let radius95PerSigma = (-2 * log(0.05)).squareRoot()

    public func validate() throws(GeoError) {
        guard accuracy68 > 0, accuracy68.isFinite else {
            throw .badParameter("accuracy must be > 0 m, got \(accuracy68)", key: "accuracy")
        }
        guard correlationTime > 0 else {
            throw .badParameter("the correlation time τ must be > 0 s, got \(correlationTime)", key: "tau")
        }
        guard (0...1).contains(dropoutProbability) else {
            throw .badParameter("dropout probability must be in 0…1, got \(dropoutProbability)", key: "dropout")
        }
        try urbanCanyon.validate()
        try denied.validate()
    }
}

/// Multipath in street canyons: accuracy degrades with HDOP, and some fixes are
/// outliers from a much wider distribution (reported as such).
public struct UrbanCanyon: Hashable, Sendable, Codable {
    /// Points whose HDOP is at least this are in a canyon.
    public var hdopThreshold: Double
    /// Extra canyon stretches by device time, seconds (for tracks without HDOP).
    public var windows: [ClosedRange<Double>]
    /// In a canyon, the chance that a fix is a multipath outlier.
    public var outlierProbability: Double
    /// 68 % radius of outlier fixes, metres.
    public var outlierAccuracy68: Double

    public init(hdopThreshold: Double = 3, windows: [ClosedRange<Double>] = [],
                outlierProbability: Double = 0.15, outlierAccuracy68: Double = 40) {
        self.hdopThreshold = hdopThreshold
        self.windows = windows
        self.outlierProbability = outlierProbability
        self.outlierAccuracy68 = outlierAccuracy68
    }

    func validate() throws(GeoError) {
        guard (0...1).contains(outlierProbability) else {
            throw .badParameter("urban-canyon outlier probability must be in 0…1", key: "urbanCanyon.outlierProbability")
        }
        guard outlierAccuracy68 > 0 else {
            throw .badParameter("urban-canyon outlier accuracy must be > 0 m", key: "urbanCanyon.outlierAccuracy")
        }
    }
}

/// Stretches without GPS (indoors, tunnels): the phone falls back to Wi-Fi or
/// cell positioning, reported with a reduced-accuracy flag.
public struct GPSDenied: Hashable, Sendable, Codable {
    public enum Fallback: String, Hashable, Sendable, Codable, CaseIterable {
        case wifi, cell

        /// 68 % radius range of the fallback fix, metres.
        public var accuracyRange: ClosedRange<Double> {
            switch self {
            case .wifi: 30...100
            case .cell: 300...600
            }
        }
    }

    /// Denied stretches by device time, seconds.
    public var windows: [ClosedRange<Double>]
    /// Mean time between random denied episodes, seconds (nil: none).
    public var meanInterval: Double?
    /// Mean length of a random episode, seconds.
    public var meanDuration: Double
    public var fallback: Fallback

    public init(windows: [ClosedRange<Double>] = [], meanInterval: Double? = nil, meanDuration: Double = 120,
                fallback: Fallback = .wifi) {
        self.windows = windows
        self.meanInterval = meanInterval
        self.meanDuration = meanDuration
        self.fallback = fallback
    }

    func validate() throws(GeoError) {
        if let m = meanInterval, !(m > 0) {
            throw .badParameter("GPS-denied mean interval must be > 0 s", key: "denied.meanInterval")
        }
        guard meanDuration > 0 else {
            throw .badParameter("GPS-denied mean duration must be > 0 s", key: "denied.meanDuration")
        }
    }
}
