import ConvoyGeo
import Foundation

/// The position readers: GPX files, NMEA 0183 captures, gpsd's JSON lines.
enum FuzzGeo {
    static let gpx = FuzzTarget(
        name: "gpx",
        summary: "GPX (XMLParser, libxml2); every point read is within ±90/±180; every imported track's times start at 0 "
            + "and never go backwards, its points finite and within ±90/±180"
    ) { bytes in
        var inv = Invariants()
        guard let doc = try? GPXReader.read(data: Data(bytes), file: "fuzz.gpx") else { return inv }
        inv.accepted = true
        let points = doc.tracks.flatMap { $0.segments.joined() } + doc.routes.flatMap(\.points) + doc.waypoints
        for p in points { onEarth(p.position, "point at line \(p.line)", &inv) }
        if let tracks = try? GPXImport.tracks(from: doc, file: "fuzz.gpx") {
            for t in tracks { replayable(t.track, &inv) }
        }
        return inv
    }

    static let nmea = FuzzTarget(
        name: "nmea",
        summary: "NMEA 0183 (RMC, GGA, checksums); every fix within ±90/±180, every line counted once (ignored, rejected, other, used); "
            + "the imported track's times start at 0 and never go backwards"
    ) { bytes in
        var inv = Invariants()
        let log = NMEAReader.read(text: bytes.text)
        inv.accepted = !log.fixes.isEmpty
        for f in log.fixes { onEarth(f.position, "fix at line \(f.line)", &inv) }
        let s = log.stats
        let counted = s.ignoredLines + s.missingChecksum + s.badChecksum + s.otherTypes + s.used + s.malformed
        inv.expect(counted == s.lines, "\(s.lines) line(s) but \(counted) counted (ignored, rejected, other, used)")
        inv.expect(s.used >= log.fixes.count, "\(log.fixes.count) fix(es) from \(s.used) sentence(s) used")
        if let imported = try? log.track(name: "fuzz.nmea") { replayable(imported.track, &inv) }
        return inv
    }

    static let gpsd = FuzzTarget(
        name: "gpsd",
        summary: "gpsd's JSON lines (libgps's gps_unpack, then Convoy's TPV and SKY reading); a fix is within ±90/±180 "
            + "with a finite time and a finite, positive accuracy"
    ) { bytes in
        var inv = Invariants()
        let reader = GPSDLineReader()
        var hdop = Double.nan, satellites: Int?
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            switch reader.read(Array(line)) {
            case .sky(let h, let s):
                (hdop, satellites) = (h, s)
            case .tpv(var report):
                (report.hdop, report.satellites) = (hdop, satellites)
                guard let fix = report.fix else { continue }
                inv.accepted = true
                onEarth(fix.position, "fix", &inv)
                inv.expect(fix.time.isFinite, "a fix at time \(fix.time)")
                inv.expect(fix.accuracy68.isFinite && fix.accuracy68 > 0, "a fix with accuracy \(fix.accuracy68) m")
            case .other:
                break
            }
        }
        return inv
    }

    static func onEarth(_ p: GeoPoint, _ what: @autoclosure () -> String, _ inv: inout Invariants) {
        inv.expect(p.lat.isFinite && p.lon.isFinite && abs(p.lat) <= 90 && abs(p.lon) <= 180, "\(what()) at \(p.lat), \(p.lon)")
    }

    /// What a replay needs of a track: times from 0, never backwards, finite; points on Earth.
    static func replayable(_ t: TimedTrack, _ inv: inout Invariants) {
        inv.expect(t.times.first == 0 || t.times.isEmpty, "track \(t.name) starts at \(t.times.first ?? 0) s")
        inv.expect(t.times.allSatisfy(\.isFinite), "track \(t.name) has a time that is not finite")
        inv.expect(zip(t.times, t.times.dropFirst()).allSatisfy { $0 <= $1 }, "track \(t.name)'s times go backwards")
        for p in t.points { onEarth(p, "track \(t.name)'s point", &inv) }
    }
}
