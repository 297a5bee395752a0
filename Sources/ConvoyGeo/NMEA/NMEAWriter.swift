import Foundation

/// Writes NMEA 0183 (GGA, GSA, RMC per epoch, valid checksums, CRLF) from a
/// track, for gpsfake to replay into a real gpsd. Coordinates carry 5 decimals
/// of minutes (≈ 2 cm).
public enum NMEAWriter {
    /// Most epochs one call writes (23 days at 1 Hz, ≈ 440 MB of text).
    public static let maximumEpochs = 2_000_000
    /// Shortest interval between epochs: receivers report at 25 Hz at most.
    public static let minimumInterval = 0.04
    /// Points further apart in time than this are a gap in the source
    /// (a receiver without a fix): no epochs are invented inside it.
    public static let maximumInterpolation = 10.0

    /// - Parameters:
    ///   - start: absolute time of the track's first point (default: the track's
    ///     own start, else 2026-01-05T08:00:00Z).
    ///   - interval: seconds between epochs; nil writes one epoch per track point.
    public static func text(for track: TimedTrack, start: Date? = nil, interval: Double? = 1) throws(GeoError) -> String {
        let times = try epochTimes(for: track, interval: interval)
        let t0 = start ?? track.start ?? SynthesisOptions.defaultStart
        var replay = try Replayer(track: track, mode: .hold)
        var out = ""
        out.reserveCapacity(times.count * 220)
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        for t in times {
            out += epoch(replay.fix(at: t), at: t0.addingTimeInterval(t), calendar: utc)
        }
        return out
    }

    /// Epoch times: every `interval` seconds, except inside gaps longer than
    /// `maximumInterpolation` (and never more than `maximumEpochs`).
    static func epochTimes(for track: TimedTrack, interval: Double?) throws(GeoError) -> [Double] {
        guard let step = interval else { return track.times }
        guard step >= minimumInterval, step.isFinite else {
            throw .badParameter("the epoch interval must be at least \(minimumInterval) s, got \(step)", key: "interval")
        }
        var times: [Double] = []
        var j = 0
        var k = 0.0
        while true {
            let t = k * step
            guard t <= track.duration + 1e-9 else { break }
            while j + 1 < track.count, track.times[j + 1] <= t { j += 1 }
            if j + 1 < track.count, track.times[j + 1] - track.times[j] > max(maximumInterpolation, step), t > track.times[j] {
                // Inside a gap: resume at the first epoch on or after the next point.
                k = (track.times[j + 1] / step).rounded(.up)
                continue
            }
            times.append(t)
            guard times.count <= maximumEpochs else {
                throw .badParameter("the track would give more than \(maximumEpochs) NMEA epochs at \(step) s; use a longer --interval",
                                    key: "interval")
            }
            k += 1
        }
        return times
    }

    private static func epoch(_ fix: ReplayFix, at when: Date, calendar: Calendar) -> String {
        // Round to the centisecond first, so .996 s carries into the next second.
        let rounded = Date(timeIntervalSince1970: (when.timeIntervalSince1970 * 100).rounded() / 100)
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond], from: rounded)
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
            // Without an altitude the fix is honestly 2-D (gpsd treats it so anyway).
            "GPGSA,A,\(fix.elevation == nil ? 2 : 3),\(prns),\(String(format: "%.1f,%.1f,%.1f", pdop, hdop, vdop))",
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
