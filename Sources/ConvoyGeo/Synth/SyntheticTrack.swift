import Foundation

/// Options for `convoy gpx synth`.
public struct SynthesisOptions: Hashable, Sendable {
    public var profile: MobilityProfile
    /// Seconds of movement; one point per second.
    public var duration: Double
    public var seed: UInt64
    public var origin: GeoPoint
    /// Time of the first point. Fixed by default so that the same seed gives a
    /// byte-identical file.
    public var start: Date
    /// A stretch (seconds from the start) through an urban canyon: high HDOP and
    /// few satellites in the file, which the noise model turns into wide errors.
    public var urbanCanyon: ClosedRange<Double>?

    public static let defaultStart = Date(timeIntervalSince1970: 1_767_600_000)  // 2026-01-05T08:00:00Z

    public init(profile: MobilityProfile, duration: Double, seed: UInt64, origin: GeoPoint,
                start: Date = defaultStart, urbanCanyon: ClosedRange<Double>? = nil) {
        self.profile = profile
        self.duration = duration
        self.seed = seed
        self.origin = origin
        self.start = start
        self.urbanCanyon = urbanCanyon
    }
}

/// Plausible movement on a street grid: cruise at a drawn speed, accelerate and
/// brake at the profile's rates, stop at some lights, crossings or stations,
/// turn at some of them, drift a little in between.
public enum SyntheticTrack {
    public static func generate(_ o: SynthesisOptions) throws(GeoError) -> GPXDocument {
        guard o.duration >= 1, o.duration <= 7 * 86_400 else {
            throw .badParameter("duration must be between 1 s and 7 days, got \(o.duration) s", key: "duration")
        }
        guard abs(o.origin.lat) <= 85, abs(o.origin.lon) <= 180 else {
            throw .badParameter("origin must be a latitude in ±85 and a longitude in ±180", key: "origin")
        }
        let k = o.profile.kinematics
        var rng = SeededGenerator(seed: o.seed, stream: UInt64(MobilityProfile.allCases.firstIndex(of: o.profile)!))
        var position = o.origin
        var heading = rng.uniform(0, 4).rounded(.down) * 90 + rng.normal(mean: 0, sd: 8)
        var speed = 0.0
        var block = Block.draw(k, &rng)
        var toNode = block.length
        var stoppedFor = 0.0
        var elevation = 20 + rng.uniform(0, 40)
        var points: [GPXPoint] = []
        let steps = Int(o.duration.rounded())

        for second in 0...steps {
            let t = Double(second)
            let inCanyon = o.urbanCanyon?.contains(t) ?? false
            let hdop = inCanyon ? rng.uniform(4, 8) : rng.uniform(0.7, 1.2)
            let sats = inCanyon ? 4 + Int(rng.uniform(0, 3)) : 9 + Int(rng.uniform(0, 4))
            points.append(GPXPoint(position: position, elevation: elevation, time: o.start.addingTimeInterval(t),
                                   hdop: (hdop * 10).rounded() / 10, satellites: sats, fix: .threeD))
            guard second < steps else { break }

            if stoppedFor > 0 {
                stoppedFor -= 1
                continue
            }
            // Speed control: never faster than lets us brake to the node's target speed.
            let target = block.stop ? 0 : block.turn ? min(block.cruise, k.turnSpeed) : block.cruise
            let allowed = (target * target + 2 * k.deceleration * max(0, toNode - speed)).squareRoot()
            if speed > allowed {
                speed = max(target, speed - k.deceleration)
            } else if speed < block.cruise {
                speed = min(block.cruise, speed + k.acceleration, max(allowed, target))
            } else {
                speed = max(block.cruise, speed - k.deceleration)
            }
            var step = speed
            if step >= toNode || (block.stop && toNode < 0.5) {
                // Through the decision point: turn, maybe stop, carry the rest of the step on.
                position = position.moved(distance: toNode, bearing: heading)
                step -= toNode
                if block.turn {
                    heading += rng.chance(0.5) ? 90 : -90
                } else {
                    heading += rng.normal(mean: 0, sd: 5)
                }
                if block.stop {
                    stoppedFor = rng.uniform(k.stopDuration.lowerBound, k.stopDuration.upperBound).rounded()
                    speed = 0
                    step = 0
                }
                block = Block.draw(k, &rng)
                toNode = block.length
            }
            position = position.moved(distance: step, bearing: heading)
            toNode -= step
            heading += rng.normal(mean: 0, sd: k.headingJitter)
            heading = heading.truncatingRemainder(dividingBy: 360)
            if heading < 0 { heading += 360 }
            elevation += rng.normal(mean: 0, sd: 0.05 * max(speed, 0.2))
        }
        let name = "\(o.profile.rawValue) seed \(o.seed)"
        return GPXDocument(version: .v1_1, creator: "Convoy gpx synth (\(o.profile.rawValue), seed \(o.seed))",
                           tracks: [GPXTrack(name: name, segments: [points])])
    }

    /// The street between two decision points, and what happens at its end.
    private struct Block {
        var length: Double
        var cruise: Double
        var stop: Bool
        var turn: Bool

        static func draw(_ k: Kinematics, _ rng: inout SeededGenerator) -> Block {
            Block(length: rng.uniform(k.blockLength.lowerBound, k.blockLength.upperBound),
                  cruise: min(max(rng.normal(mean: k.cruiseMean, sd: k.cruiseSD), k.cruiseRange.lowerBound),
                              k.cruiseRange.upperBound),
                  stop: rng.chance(k.stopProbability),
                  turn: rng.chance(k.turnProbability))
        }
    }
}
