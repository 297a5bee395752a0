/// How a kind of traveller moves (docs/tracks.md lists the numbers and why).
public enum MobilityProfile: String, Hashable, Sendable, Codable, CaseIterable {
    case walk, cycle, drive, transit

    /// Kinematics of the profile; speeds m/s, accelerations m/s², distances m, times s.
    public var kinematics: Kinematics {
        switch self {
        case .walk:
            Kinematics(cruiseMean: 1.35, cruiseSD: 0.15, cruiseRange: 0.8...2.0, acceleration: 0.5, deceleration: 1.0,
                       blockLength: 60...200, stopProbability: 0.35, stopDuration: 5...45, turnProbability: 0.4,
                       turnSpeed: 1.0, headingJitter: 4)
        case .cycle:
            Kinematics(cruiseMean: 5.0, cruiseSD: 0.8, cruiseRange: 3...8, acceleration: 0.8, deceleration: 1.5,
                       blockLength: 150...400, stopProbability: 0.4, stopDuration: 10...50, turnProbability: 0.35,
                       turnSpeed: 3.0, headingJitter: 2)
        case .drive:
            Kinematics(cruiseMean: 12.5, cruiseSD: 2.5, cruiseRange: 7...22, acceleration: 2.0, deceleration: 3.0,
                       blockLength: 200...600, stopProbability: 0.45, stopDuration: 10...60, turnProbability: 0.3,
                       turnSpeed: 6.0, headingJitter: 1)
        case .transit:
            Kinematics(cruiseMean: 11, cruiseSD: 1.5, cruiseRange: 8...17, acceleration: 1.0, deceleration: 1.2,
                       blockLength: 500...1500, stopProbability: 1.0, stopDuration: 20...45, turnProbability: 0.15,
                       turnSpeed: 4.0, headingJitter: 0.5)
        }
    }

    /// Typical speed, m/s: used to time points of tracks that have no times.
    public var typicalSpeed: Double { kinematics.cruiseMean }
}

/// Movement parameters of a profile.
public struct Kinematics: Hashable, Sendable {
    /// Cruise speed is drawn per block from N(mean, sd), clamped to the range.
    public var cruiseMean: Double
    public var cruiseSD: Double
    public var cruiseRange: ClosedRange<Double>
    public var acceleration: Double
    public var deceleration: Double
    /// Distance between decision points: crossings, lights, stations.
    public var blockLength: ClosedRange<Double>
    /// Chance of stopping at a decision point (red light, crossing, station dwell).
    public var stopProbability: Double
    public var stopDuration: ClosedRange<Double>
    /// Chance of turning (±90°) at a decision point.
    public var turnProbability: Double
    /// Speed a turn is taken at; the traveller brakes for it.
    public var turnSpeed: Double
    /// Standard deviation of heading drift per second, degrees.
    public var headingJitter: Double
}
