/// A TPV report as libgps hands it over: doubles that are NaN when gpsd did
/// not send them. `GPSDReport.fix` turns it into a `GPSDFix` (pure, no gpsd needed).
public struct GPSDReport: Hashable, Sendable {
    /// gpsd's fix mode: 0 not seen, 1 no fix, 2 2-D, 3 3-D.
    public var mode: Int
    public var device: String
    /// Unix seconds; nil when the report had no time.
    public var time: Double?
    public var latitude: Double
    public var longitude: Double
    public var altMSL: Double
    public var eph: Double
    public var speed: Double
    public var track: Double
    /// From the device's last SKY report (NaN / nil when none).
    public var hdop: Double
    public var satellites: Int?

    public init(mode: Int, device: String, time: Double?, latitude: Double, longitude: Double, altMSL: Double = .nan,
                eph: Double = .nan, speed: Double = .nan, track: Double = .nan, hdop: Double = .nan, satellites: Int? = nil) {
        self.mode = mode
        self.device = device
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altMSL = altMSL
        self.eph = eph
        self.speed = speed
        self.track = track
        self.hdop = hdop
        self.satellites = satellites
    }

    /// gpsd's `eph` is ≈ a 95 % radius (2.4477 σ for a 2-D Gaussian); Convoy
    /// reports the 68 % radius (1.5096 σ): multiply by 1.5096 / 2.4477 ≈ 0.617.
    public static let eph95To68 = 1.5096 / 2.4477
    /// gpsd's own estimate when a receiver gives only HDOP: eph ≈ 19 m × HDOP (95 %).
    public static let ephPerHDOP = 19.0
    /// A 2-D fix reports twice the radius: its altitude is assumed, not measured,
    /// and an altitude off by tens of metres leaks into latitude and longitude
    /// without showing in any DOP (docs/gpsd.md).
    public static let twoDFactor = 2.0
    /// The 68 % radius when gpsd sends neither eph nor HDOP: a consumer-grade
    /// receiver's 95 % of ≈ 19 m at HDOP 1, taken as the 68 % radius to stay cautious.
    public static let unknownAccuracy68 = 19.0

    /// What the report means for Convoy: a fix, or no fix (mode 0/1, or no usable position).
    public var fix: GPSDFix? {
        guard mode >= 2, latitude.isFinite, longitude.isFinite, abs(latitude) <= 90, abs(longitude) <= 180,
              let time, time.isFinite
        else { return nil }
        let altitude = altMSL.isFinite ? altMSL : nil
        let fixMode: GPSDFix.Mode = mode >= 3 && altitude != nil ? .threeD : .twoD
        let fixEph = eph.isFinite && eph > 0 ? eph : nil
        let fixHdop = hdop.isFinite && hdop > 0 ? hdop : nil
        var acc: Double
        if let fixEph {
            acc = fixEph * Self.eph95To68
        } else if let fixHdop {
            acc = Self.ephPerHDOP * fixHdop * Self.eph95To68
        } else {
            acc = Self.unknownAccuracy68
        }
        if fixMode == .twoD { acc *= Self.twoDFactor }
        return GPSDFix(device: device, time: time, position: GeoPoint(lat: latitude, lon: longitude),
                       altitude: fixMode == .threeD ? altitude : nil, accuracy68: acc, mode: fixMode,
                       speed: speed.isFinite ? speed : nil, track: track.isFinite ? track : nil,
                       eph: fixEph, hdop: fixHdop, satellites: satellites)
    }
}
