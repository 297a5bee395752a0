import Foundation

/// Writes NMEA 0183 (GGA, GSA, RMC per epoch, valid checksums, CRLF) from a
/// track, for gpsfake to replay into a real gpsd. Coordinates carry 5 decimals
/// of minutes (≈ 2 cm).
public enum NMEAWriter {
    /// - Parameters:
    ///   - start: absolute time of the track's first point (default: the track's
    ///     own start, else 2026-01-05T08:00:00Z).
    ///   - interval: seconds between epochs; nil writes one epoch per track point.
    public static func text(for track: TimedTrack, start: Date? = nil, interval: Double? = 1) throws(GeoError) -> String {
        if let interval, !(interval > 0) {
            throw .badParameter("the epoch interval must be > 0 s", key: "interval")
        }
        let t0 = start ?? track.start ?? SynthesisOptions.defaultStart
        var replay = try Replayer(track: track, mode: .hold)
        let times: [Double] = interval.map { step in
            stride(from: 0, through: track.duration, by: step).map { $0 }
        } ?? track.times
        var out = ""
        out.reserveCapacity(times.count * 220)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        for t in times {
            let fix = replay.fix(at: t)
            let when = t0.addingTimeInterval(t)
            out += epoch(fix, at: when, calendar: utc)
        }
        return out
    }

    private static func epoch(_ fix: ReplayFix, at when: Date, calendar: Calendar) -> String {
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: when)
        let centis = min(99, Int((Double(c.nanosecond ?? 0) / 1e7).rounded()))
        let time = String(format: "%02d%02d%02d.%02d", c.hour!, c.minute!, c.second!, centis)
        let date = String(format: "%02d%02d%02d", c.day!, c.month!, c.year! % 100)
        let (lat, ns) = coordinate(fix.position.lat, degreeDigits: 2, positive: "N", negative: "S")
        let (lon, ew) = coordinate(fix.position.lon, degreeDigits: 3, positive: "E", negative: "W")
        let hdop = fix.hdop ?? 0.9
        let vdop = hdop * 1.4
        let pdop = (hdop * hdop + vdop * vdop).squareRoot()
        let sats = min(max(fix.satellites ?? 10, 4), 12)
        let alt = fix.elevation.map { String(format: "%.1f", $0) } ?? ""
        let prns = (1...12).map { $0 <= sats ? String(format: "%02d", $0 * 2) : "" }.joined(separator: ",")
        let knots = fix.speed * 3600 / 1852
        let lines = [
            "GPGGA,\(time),\(lat),\(ns),\(lon),\(ew),1,\(String(format: "%02d", sats)),\(String(format: "%.1f", hdop)),\(alt),M,,M,,",
            "GPGSA,A,3,\(prns),\(String(format: "%.1f,%.1f,%.1f", pdop, hdop, vdop))",
            "GPRMC,\(time),A,\(lat),\(ns),\(lon),\(ew),\(String(format: "%.2f", knots)),\(String(format: "%.1f", fix.heading)),\(date),,,A",
        ]
        return lines.map { NMEASentence.line($0) + "\r\n" }.joined()
    }

    /// (d)ddmm.mmmmm with the hemisphere letter; carries 60.00000 minutes over.
    static func coordinate(_ value: Double, degreeDigits: Int, positive: String, negative: String) -> (String, String) {
        let a = abs(value)
        var deg = Int(a)
        var minutes = ((a - Double(deg)) * 60 * 100_000).rounded() / 100_000
        if minutes >= 60 {
            deg += 1
            minutes -= 60
        }
        let text = String(format: "%0\(degreeDigits)d%08.5f", deg, minutes)
        return (text, value < 0 ? negative : positive)
    }
}
