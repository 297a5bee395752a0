import Foundation

/// A position fix assembled from the RMC and GGA sentences of one epoch.
public struct NMEAFix: Hashable, Sendable {
    /// Absolute time: the RMC date (or the assumed day, see
    /// `NMEAStats.dateAssumed`) plus the time of day.
    public var time: Date
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
    /// No RMC date in the log (GGA only): times are on an assumed day,
    /// 2026-01-05, with midnight rollovers followed.
    public var dateAssumed = false

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
        var epochs: [(fix: NMEAFix, valid: Bool, midnight: Date?)] = []

        for (index, rawLine) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            stats.lines += 1
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
            // Sentences with the same time of day (however it is written) are one epoch.
            if var last = epochs.last, abs(last.fix.secondsOfDay - epoch.secondsOfDay) < 1e-6 {
                epoch.merge(into: &last.fix, valid: &last.valid)
                if let m = epoch.midnight { last.midnight = m }
                epochs[epochs.count - 1] = last
            } else {
                var fix = NMEAFix(time: Date(timeIntervalSince1970: 0), secondsOfDay: epoch.secondsOfDay,
                                  position: epoch.position, quality: 1, line: index + 1)
                var valid = true
                epoch.merge(into: &fix, valid: &valid)
                epochs.append((fix, valid, epoch.midnight))
            }
        }

        // Days: the time of day falling back by more than 12 h is a midnight.
        var day = 0
        var days: [Int] = []
        for (i, e) in epochs.enumerated() {
            if i > 0, e.fix.secondsOfDay < epochs[i - 1].fix.secondsOfDay - 43_200 { day += 1 }
            days.append(day)
        }
        // Anchor day 0 on the first RMC date; without one, on an assumed day.
        var dayZero = SynthesisOptions.defaultStart.addingTimeInterval(-8 * 3600)  // 2026-01-05T00:00:00Z
        if let i = epochs.firstIndex(where: { $0.midnight != nil }) {
            dayZero = epochs[i].midnight!.addingTimeInterval(-Double(days[i]) * 86_400)
        } else if !epochs.isEmpty {
            stats.dateAssumed = true
        }
        var fixes: [NMEAFix] = []
        for (i, e) in epochs.enumerated() {
            guard e.valid else {
                stats.noFix += 1
                continue
            }
            var fix = e.fix
            fix.time = dayZero.addingTimeInterval(Double(days[i]) * 86_400 + fix.secondsOfDay)
            fixes.append(fix)
        }
        return NMEALog(fixes: fixes, stats: stats)
    }
}

/// The fields of one RMC or GGA sentence, read strictly.
private struct Epoch {
    let secondsOfDay: Double
    let position: GeoPoint
    var midnight: Date?
    var valid = true
    var speed: Double?, course: Double?, altitude: Double?, hdop: Double?
    var quality: Int?, satellites: Int?

    init?(_ s: NMEASentence) {
        let f = s.fields
        let isRMC = s.type == "RMC"
        // RMC: time,status,lat,N,lon,E,speed,course,date…  GGA: time,lat,N,lon,E,quality,sats,hdop,alt,M…
        let latAt = isRMC ? 2 : 1
        guard f.count >= 9, let tod = NMEAFields.secondsOfDay(f[0]) else { return nil }
        secondsOfDay = tod
        func optional<T>(_ field: Substring, _ read: (Substring) -> T?) -> T?? {
            field.isEmpty ? .some(nil) : read(field).map { .some($0) }
        }
        if isRMC {
            guard f[1] == "A" || f[1] == "V", let speed = optional(f[6], NMEAFields.unsigned),
                  let course = optional(f[7], NMEAFields.unsigned), let date = optional(f[8], NMEAFields.date)
            else { return nil }
            valid = f[1] == "A"
            self.speed = speed.map { $0 * 1852 / 3600 }
            self.course = course.flatMap { $0 < 360 ? $0 : nil }
            midnight = date
        } else {
            guard let q = NMEAFields.whole(f[5]), q <= 9, let sats = optional(f[6], NMEAFields.whole),
                  let hdop = optional(f[7], NMEAFields.unsigned), let alt = optional(f[8], NMEAFields.signed)
            else { return nil }
            quality = q
            valid = q > 0
            satellites = sats.flatMap { $0 <= 99 ? $0 : nil }
            self.hdop = hdop
            altitude = alt
        }
        if !valid, f[latAt].isEmpty {
            position = GeoPoint(lat: 0, lon: 0)
            return
        }
        guard let lat = NMEAFields.coordinate(f[latAt], f[latAt + 1], degreeDigits: 2, limit: 90),
              let lon = NMEAFields.coordinate(f[latAt + 2], f[latAt + 3], degreeDigits: 3, limit: 180)
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
}

extension NMEALog {
    /// The fixes as a replayable track, under the same import policy as GPX.
    public func track(name: String, policy: ImportPolicy = .default) throws(GeoError) -> ImportedTrack {
        let points = fixes.map {
            GPXPoint(position: $0.position, elevation: $0.altitude, time: $0.time, hdop: $0.hdop,
                     satellites: $0.satellites, fix: $0.quality >= 2 ? .dgps : .threeD, line: $0.line)
        }
        guard var imported = try GPXImport.importTrack(name: name, segments: [points], policy: policy, file: name) else {
            throw .noTrack("no valid fix in the log (\(stats.noFix) epoch(s) without a fix, \(stats.rejected) rejected sentence(s))",
                           file: name)
        }
        if stats.dateAssumed {
            imported.1.notes.insert("no RMC date in the log: times are on an assumed day (2026-01-05 UTC)", at: 0)
        }
        return ImportedTrack(track: imported.0, report: imported.1, kind: "nmea")
    }
}
