import Foundation

/// A position fix assembled from the RMC and GGA sentences of one epoch.
public struct NMEAFix: Hashable, Sendable {
    /// Absolute time when a date was known (from RMC), else nil.
    public var time: Date?
    /// Seconds since midnight UTC.
    public var secondsOfDay: Double
    public var position: GeoPoint
    public var altitude: Double?
    /// Ground speed, m/s (RMC).
    public var speed: Double?
    /// Course over ground, degrees (RMC).
    public var course: Double?
    /// GGA fix quality (0 = invalid, 1 = GPS, 2 = DGPS …); RMC-only fixes are 1.
    public var quality: Int
    public var satellites: Int?
    public var hdop: Double?
    /// Line of the first sentence of the epoch.
    public var line: Int
}

/// What the reader saw, sentence by sentence.
public struct NMEAStats: Hashable, Sendable, Codable {
    public var lines = 0
    /// Sentences with a valid checksum.
    public var sentences = 0
    /// RMC and GGA sentences used.
    public var used = 0
    /// Valid sentences of other types (GSV, VTG, HDG …), skipped.
    public var otherTypes = 0
    public var badChecksum = 0
    public var missingChecksum = 0
    /// Sentences with a valid checksum whose fields could not be read.
    public var malformed = 0
    /// Comments, blank lines, and lines that are not sentences.
    public var ignoredLines = 0
    /// Epochs where the receiver reported no fix (RMC status V or GGA quality 0).
    public var noFix = 0

    public var rejected: Int { badChecksum + missingChecksum + malformed }
}

public struct NMEALog: Hashable, Sendable {
    public var fixes: [NMEAFix]
    public var stats: NMEAStats
}

/// Reads NMEA 0183 logs (receiver captures, gpsfake input): RMC and GGA with
/// checksums verified; bad sentences are counted and skipped, never fatal.
public enum NMEAReader {
    public static func read(contentsOf path: String) throws(GeoError) -> NMEALog {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .unreadable("cannot read the file (missing or not readable)", file: path)
        }
        return read(text: String(decoding: data, as: UTF8.self))
    }

    public static func read(text: String) -> NMEALog {
        var stats = NMEAStats()
        var fixes: [NMEAFix] = []
        var pending: (key: Substring, fix: NMEAFix, valid: Bool)?
        var date: DateComponents?

        func flush() {
            guard let p = pending else { return }
            pending = nil
            if p.valid { fixes.append(p.fix) } else { stats.noFix += 1 }
        }

        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            stats.lines += 1
            let lineNumber = index + 1
            let sentence: NMEASentence
            do {
                sentence = try NMEASentence(line: rawLine)
            } catch {
                switch error {
                case .notASentence: stats.ignoredLines += 1
                case .missingChecksum: stats.missingChecksum += 1
                case .badChecksum: stats.badChecksum += 1
                case .malformed: stats.malformed += 1
                }
                continue
            }
            stats.sentences += 1
            guard sentence.type == "RMC" || sentence.type == "GGA" else {
                stats.otherTypes += 1
                continue
            }
            guard let epoch = Epoch(sentence) else {
                stats.malformed += 1
                continue
            }
            stats.used += 1
            if let d = epoch.date { date = d }
            if pending?.key != epoch.timeKey {
                flush()
                pending = (epoch.timeKey, NMEAFix(time: nil, secondsOfDay: epoch.secondsOfDay, position: epoch.position,
                                                  quality: 1, line: lineNumber), true)
            }
            var current = pending!
            epoch.merge(into: &current.fix, valid: &current.valid)
            if let d = date { current.fix.time = Self.absolute(d, epoch.secondsOfDay) }
            pending = current
        }
        flush()
        // Epochs before the first RMC have no date; give them the first known one.
        if let firstDated = fixes.first(where: { $0.time != nil }), let day = firstDated.time {
            let midnight = day.addingTimeInterval(-firstDated.secondsOfDay)
            for i in fixes.indices where fixes[i].time == nil {
                fixes[i].time = midnight.addingTimeInterval(fixes[i].secondsOfDay)
            }
        }
        return NMEALog(fixes: fixes, stats: stats)
    }

    private static func absolute(_ date: DateComponents, _ secondsOfDay: Double) -> Date? {
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        return utc.date(from: date)?.addingTimeInterval(secondsOfDay)
    }
}

/// The fields of one RMC or GGA sentence.
private struct Epoch {
    let timeKey: Substring
    let secondsOfDay: Double
    let position: GeoPoint
    var date: DateComponents?
    var valid = true
    var speed: Double?, course: Double?, altitude: Double?, hdop: Double?
    var quality: Int?, satellites: Int?

    init?(_ s: NMEASentence) {
        let f = s.fields
        let isRMC = s.type == "RMC"
        // RMC: time,status,lat,N,lon,E,speed,course,date…  GGA: time,lat,N,lon,E,quality,sats,hdop,alt,M…
        let (latAt, minCount) = isRMC ? (2, 9) : (1, 9)
        guard f.count >= minCount, let tod = Epoch.secondsOfDay(f[0]) else { return nil }
        timeKey = f[0]
        secondsOfDay = tod
        if isRMC {
            valid = f[1] == "A"
            speed = Double(f[6]).map { $0 * 1852 / 3600 }
            course = Double(f[7])
            date = Epoch.date(f[8])
            if date == nil, !f[8].isEmpty { return nil }
        } else {
            guard let q = Int(f[5]) else { return nil }
            quality = q
            valid = q > 0
            satellites = Int(f[6])
            hdop = Double(f[7])
            altitude = Double(f[8])
        }
        if !valid, f[latAt].isEmpty {
            position = GeoPoint(lat: 0, lon: 0)
            return
        }
        guard let lat = Epoch.coordinate(f[latAt], f[latAt + 1], degreeDigits: 2, limit: 90),
              let lon = Epoch.coordinate(f[latAt + 2], f[latAt + 3], degreeDigits: 3, limit: 180)
        else { return nil }
        position = GeoPoint(lat: lat, lon: lon)
    }

    func merge(into fix: inout NMEAFix, valid epochValid: inout Bool) {
        epochValid = epochValid && valid
        if valid { fix.position = position }
        if let speed { fix.speed = speed }
        if let course { fix.course = course }
        if let altitude { fix.altitude = altitude }
        if let hdop { fix.hdop = hdop }
        if let satellites { fix.satellites = satellites }
        if let quality { fix.quality = quality }
    }

    /// hhmmss(.sss)
    static func secondsOfDay(_ s: Substring) -> Double? {
        guard s.count >= 6, let h = Int(s.prefix(2)), let m = Int(s.dropFirst(2).prefix(2)),
              let sec = Double(s.dropFirst(4)), h < 24, m < 60, sec < 61 else { return nil }
        return Double(h * 3600 + m * 60) + sec
    }

    /// ddmmyy; years 80–99 are 19xx.
    static func date(_ s: Substring) -> DateComponents? {
        guard s.count == 6, let d = Int(s.prefix(2)), let m = Int(s.dropFirst(2).prefix(2)),
              let y = Int(s.suffix(2)), (1...31).contains(d), (1...12).contains(m) else { return nil }
        return DateComponents(year: y >= 80 ? 1900 + y : 2000 + y, month: m, day: d)
    }

    /// (d)ddmm.mmmm plus hemisphere.
    static func coordinate(_ value: Substring, _ hemisphere: Substring, degreeDigits: Int, limit: Double) -> Double? {
        guard value.count > degreeDigits + 2, let deg = Double(value.prefix(degreeDigits)),
              let min = Double(value.dropFirst(degreeDigits)), min < 60 else { return nil }
        let v = deg + min / 60
        guard v <= limit else { return nil }
        switch hemisphere {
        case "N", "E": return v
        case "S", "W": return -v
        default: return nil
        }
    }
}

extension NMEALog {
    /// The fixes as a replayable track, under the same import policy as GPX.
    public func track(name: String, policy: ImportPolicy = .default) throws(GeoError) -> ImportedTrack {
        let points = fixes.map {
            GPXPoint(position: $0.position, elevation: $0.altitude, time: $0.time, hdop: $0.hdop,
                     satellites: $0.satellites, fix: $0.quality >= 2 ? .dgps : .threeD, line: $0.line)
        }
        guard let imported = try GPXImport.importTrack(name: name, segments: [points], policy: policy) else {
            throw .noTrack("no valid fix in the log (\(stats.noFix) epoch(s) without a fix, \(stats.rejected) rejected sentence(s))",
                           file: name)
        }
        return ImportedTrack(track: imported.0, report: imported.1, kind: "nmea")
    }
}
