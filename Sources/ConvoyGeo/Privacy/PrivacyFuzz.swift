import Foundation

/// What one friend is allowed to see of a position (greenbox-prd.md §4.4 step 2b).
public enum PrivacyFuzz: Hashable, Sendable {
    /// The position as measured.
    case precise
    /// "General location": coordinates rounded to `decimals` places
    /// (2 ≈ 1.1 km, 3 ≈ 111 m of latitude).
    case general(decimals: Int)
    /// Geo-indistinguishability (Andrés et al., CCS 2013): planar Laplace noise
    /// with privacy parameter `epsilon` per metre; mean offset 2/ε.
    case geoIndistinguishable(epsilon: Double)

    /// The PRD's default for "General Location".
    public static let general = PrivacyFuzz.general(decimals: 2)

    public func validate() throws(GeoError) {
        switch self {
        case .precise: break
        case .general(let d):
            guard (0...6).contains(d) else {
                throw .badParameter("general location rounds to 0…6 decimals (the PRD uses 2 or 3), got \(d)", key: "decimals")
            }
        case .geoIndistinguishable(let ε):
            guard ε > 0, ε.isFinite else {
                throw .badParameter("ε must be > 0 per metre, got \(ε)", key: "epsilon")
            }
        }
    }
}

/// A position as shared with one friend.
public struct FuzzedPosition: Hashable, Sendable {
    public var position: GeoPoint
    /// Accuracy sent to the friend: never smaller than the fuzzing's own radius,
    /// so a receiver draws a circle, not a precise dot, for a general location.
    public var accuracy: Double
}

extension PrivacyFuzz {
    /// Applies the rule to a measured position. `rng` is used only by the
    /// Laplace mechanism (a fresh draw per update and friend).
    public func apply(to point: GeoPoint, accuracy: Double, using rng: inout SeededGenerator) -> FuzzedPosition {
        switch self {
        case .precise:
            return FuzzedPosition(position: point, accuracy: accuracy)
        case .general(let d):
            let scale = Self.powerOfTen(d)
            let lat = (point.lat * scale).rounded() / scale
            let lon = (point.lon * scale).rounded() / scale
            // Half the cell's diagonal: the farthest rounding can move a point here.
            let half = 0.5 / scale * GeoPoint.metresPerDegree
            let diagonal = (half * half + pow(half * cos(point.lat * .pi / 180), 2)).squareRoot()
            return FuzzedPosition(position: GeoPoint(lat: lat, lon: lon), accuracy: max(accuracy, diagonal))
        case .geoIndistinguishable(let ε):
            let θ = rng.uniform(0, 2 * .pi)
            let r = Self.laplaceRadius(p: rng.uniform(), epsilon: ε)
            let moved = point.offset(north: r * cos(θ), east: r * sin(θ))
            return FuzzedPosition(position: moved, accuracy: max(accuracy, Self.laplaceRadius(p: 0.68, epsilon: ε)))
        }
    }

    /// Inverse CDF of the planar Laplace radius: r = −(W₋₁((p−1)/e) + 1)/ε.
    static func laplaceRadius(p: Double, epsilon ε: Double) -> Double {
        -(LambertW.minusOne((p - 1) / M_E) + 1) / ε
    }

    private static func powerOfTen(_ d: Int) -> Double {
        var s = 1.0
        for _ in 0..<d { s *= 10 }
        return s
    }
}
