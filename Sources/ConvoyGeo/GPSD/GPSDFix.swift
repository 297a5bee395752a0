import Foundation

/// One position report from a receiver behind gpsd, in Convoy's terms: a
/// 68 % accuracy radius like a phone reports (docs/gpsd.md).
public struct GPSDFix: Hashable, Sendable {
    /// How much the receiver knew. gpsd's MODE_2D and MODE_3D; a 3-D mode with
    /// no altitude in the report counts as 2-D (NMEA receivers often claim 3-D).
    public enum Mode: String, Hashable, Sendable, Codable {
        case twoD = "2d", threeD = "3d"
    }

    /// The receiver, as gpsd names it (`/dev/ttyUSB0`, `/dev/pts/3`).
    public var device: String
    /// Unix seconds, UTC, as the receiver reported it.
    public var time: Double
    public var position: GeoPoint
    /// Metres above mean sea level, when the fix is 3-D.
    public var altitude: Double?
    /// Radius of 68 % confidence in metres (Android `getAccuracy`).
    public var accuracy68: Double
    public var mode: Mode
    /// Metres per second over ground.
    public var speed: Double?
    /// Course over ground, degrees from true north.
    public var track: Double?
    /// gpsd's horizontal error estimate (≈ 95 %), metres, as reported.
    public var eph: Double?
    /// Horizontal dilution of precision from the device's last SKY report.
    public var hdop: Double?
    /// Satellites used in the solution, from the device's last SKY report.
    public var satellites: Int?

    public init(device: String, time: Double, position: GeoPoint, altitude: Double? = nil, accuracy68: Double,
                mode: Mode, speed: Double? = nil, track: Double? = nil, eph: Double? = nil,
                hdop: Double? = nil, satellites: Int? = nil) {
        self.device = device
        self.time = time
        self.position = position
        self.altitude = altitude
        self.accuracy68 = accuracy68
        self.mode = mode
        self.speed = speed
        self.track = track
        self.eph = eph
        self.hdop = hdop
        self.satellites = satellites
    }

    public var date: Date { Date(timeIntervalSince1970: time) }
}
