import Foundation

/// A WGS-84 position in degrees, with the few spherical-earth helpers Convoy needs
/// (the errors it simulates are metres, far above the sphere's approximation).
public struct GeoPoint: Hashable, Sendable, Codable {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    /// Mean earth radius (IUGG), metres.
    public static let earthRadius = 6_371_008.8
    /// Metres per degree of latitude on that sphere (≈ 111.2 km).
    public static let metresPerDegree = earthRadius * .pi / 180

    /// Great-circle distance in metres (haversine).
    public func distance(to other: GeoPoint) -> Double {
        let φ1 = lat * .pi / 180, φ2 = other.lat * .pi / 180
        let dφ = φ2 - φ1, dλ = (other.lon - lon) * .pi / 180
        let a = sin(dφ / 2) * sin(dφ / 2) + cos(φ1) * cos(φ2) * sin(dλ / 2) * sin(dλ / 2)
        return 2 * Self.earthRadius * asin(min(1, a.squareRoot()))
    }

    /// Initial bearing to `other`, degrees clockwise from north, 0…360.
    public func bearing(to other: GeoPoint) -> Double {
        let φ1 = lat * .pi / 180, φ2 = other.lat * .pi / 180
        let dλ = (other.lon - lon) * .pi / 180
        let y = sin(dλ) * cos(φ2)
        let x = cos(φ1) * sin(φ2) - sin(φ1) * cos(φ2) * cos(dλ)
        let deg = atan2(y, x) * 180 / .pi
        return deg < 0 ? deg + 360 : deg
    }

    /// The point `north` and `east` metres away (local tangent plane).
    public func offset(north: Double, east: Double) -> GeoPoint {
        let dLat = north / Self.metresPerDegree
        let cosφ = max(cos(lat * .pi / 180), 1e-9)
        var newLon = lon + east / (Self.metresPerDegree * cosφ)
        if newLon > 180 { newLon -= 360 } else if newLon < -180 { newLon += 360 }
        return GeoPoint(lat: min(90, max(-90, lat + dLat)), lon: newLon)
    }

    /// The point `distance` metres away along `bearing` degrees.
    public func moved(distance: Double, bearing: Double) -> GeoPoint {
        let θ = bearing * .pi / 180
        return offset(north: distance * cos(θ), east: distance * sin(θ))
    }

    /// Linear interpolation (adequate between consecutive fixes metres apart).
    public func interpolated(to other: GeoPoint, fraction f: Double) -> GeoPoint {
        var dLon = other.lon - lon
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        var newLon = lon + dLon * f
        if newLon > 180 { newLon -= 360 } else if newLon < -180 { newLon += 360 }
        return GeoPoint(lat: lat + (other.lat - lat) * f, lon: newLon)
    }
}
