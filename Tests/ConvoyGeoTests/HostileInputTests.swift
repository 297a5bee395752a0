import Foundation
import Testing
@testable import ConvoyGeo

/// Inputs found by review that once crashed, hung, or were read wrongly.
@Suite struct HostileGPXTests {
    @Test func foreignNamespaceElementsAreNotGPXFields() throws {
        let doc = try GPXReader.read(data: gpx("""
          <trk><trkseg><trkpt lat="1" lon="2" xmlns:x="urn:other">
            <ele>5</ele><x:ele>unknown</x:ele><time>2020-01-01T00:00:00Z</time><x:time>1999-01-01T00:00:00Z</x:time>
          </trkpt></trkseg></trk>
        """))
        let p = doc.tracks[0].segments[0][0]
        #expect(p.elevation == 5)
        #expect(p.time == Date(timeIntervalSince1970: 1_577_836_800))
    }

    @Test func rootNamespaceIsAcceptedWhateverItSays() throws {
        let data = Data(#"<gpx version="1.1" xmlns="http://example.com/not-quite-gpx"><wpt lat="1" lon="2"><ele>3</ele></wpt></gpx>"#.utf8)
        #expect(try GPXReader.read(data: data).waypoints.first?.elevation == 3)
    }

    @Test(arguments: ["<hdop>-5</hdop>", "<ele>1e308</ele>", "<vdop>nan</vdop>", "<sat>-1</sat>", "<pdop>inf</pdop>"])
    func outOfRangeValuesAreRejectedWithTheirPlace(child: String) {
        do {
            _ = try GPXReader.read(data: gpx(#"<wpt lat="1" lon="2">\#(child)</wpt>"#), file: "odd.gpx")
            Issue.record("accepted \(child)")
        } catch {
            #expect(error == .badValue)
            #expect(error.description.hasPrefix("odd.gpx:"))
        }
    }

    /// Two points at one time 1 m apart, then a glitch 11 km away 1 ms later: 11 km in 1 ms cannot be real
    /// times, so they are placeholders and the track is timed at the fallback speed; it still imports.
    @Test func glitchAfterEqualTimesStillImports() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let a = o.offset(north: 1, east: 0), far = o.offset(north: 11_000, east: 0)
        let doc = try GPXReader.read(data: gpx("""
          <trk><trkseg>
          <trkpt lat="\(o.lat)" lon="\(o.lon)"><time>2020-01-01T00:00:00Z</time></trkpt>
          <trkpt lat="\(a.lat)" lon="\(a.lon)"><time>2020-01-01T00:00:00Z</time></trkpt>
          <trkpt lat="\(far.lat)" lon="\(far.lon)"><time>2020-01-01T00:00:00.001Z</time></trkpt>
          </trkseg></trk>
        """))
        let t = try GPXImport.tracks(from: doc)[0]
        #expect(t.track.count == 3)
        #expect(t.report.retimedByDistance && t.report.pointsWithoutTime == 3, "\(t.report.notes)")
        #expect(t.track.times[1] > 0 && t.track.times[1] < t.track.times[2])
    }

    @Test func policyAndTrackRejectNonsense() throws {
        #expect(throws: GeoError.badParameter) { try ImportPolicy(fallbackSpeed: 1e-20).validate() }
        #expect(throws: GeoError.badParameter) { try ImportPolicy(fallbackSpeed: .infinity).validate() }
        let o = GeoPoint(lat: 1, lon: 1)
        #expect(throws: GeoError.badParameter) { try TimedTrack(name: "x", times: [0, 1], points: [o, o], elevations: [1]) }
        #expect(throws: GeoError.badParameter) { try TimedTrack(name: "x", times: [0, .infinity], points: [o, o]) }
        #expect(throws: GeoError.badParameter) { try TimedTrack(name: "x", times: [0, 1], points: [o, GeoPoint(lat: 91, lon: 0)]) }
    }
}

@Suite struct HostileNMEATests {
    /// Each has a valid checksum; each field is junk that `Double("…")` would take.
    @Test(arguments: [
        "GPRMC,094737,A,-100.000,N,00518.8170,E,5.6,230.5,200818,,,A",   // signed latitude
        "GPRMC,1200-5,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,,,A",  // signed seconds
        "GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,310218,,,A",  // 31 February
        "GPRMC,094737,A,5251.0093,N,00518.8170,E,nan,230.5,200818,,,A",  // speed nan
        "GPRMC,094737,A,52e1.0093,N,00518.8170,E,5.6,230.5,200818,,,A",  // exponent
        "GPGGA,094737,5251.0093,N,00518.8170,E,1,-5,0.9,12,M,,M,,",       // negative satellites
        "GPGGA,094737,5251.0093,N,00518.8170,E,1,09,nan,12,M,,M,,",       // hdop nan
        "GPGGA,094737,5251.0093,N,00518.8170,E,1,09,0.9,inf,M,,M,,",      // altitude inf
        "GPGGA,094737,5251.0093,X,00518.8170,E,1,09,0.9,12,M,,M,,",       // hemisphere X
        "GPGGA,094737,5261.0093,N,00518.8170,E,1,09,0.9,12,M,,M,,",       // 61 minutes
    ])
    func junkFieldsAreMalformedNotRead(body: String) {
        let log = NMEAReader.read(text: NMEASentence.line(body))
        #expect(log.stats.malformed == 1, "\(body)")
        #expect(log.fixes.isEmpty)
    }

    @Test func sameTimeWrittenTwoWaysIsOneEpoch() {
        let log = NMEAReader.read(text: [
            NMEASentence.line("GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,,,A"),
            NMEASentence.line("GPGGA,094737.00,5251.0093,N,00518.8170,E,1,09,0.9,-4,M,,M,,"),
        ].joined(separator: "\r\n"))
        #expect(log.fixes.count == 1)
        #expect(log.fixes[0].satellites == 9 && log.fixes[0].speed != nil)
    }

    @Test func ggaOnlyLogsKeepTheirTimingAcrossMidnight() throws {
        let lines = ["235958", "235959", "000000", "000001"].map {
            NMEASentence.line("GPGGA,\($0),5251.0093,N,00518.8170,E,1,09,0.9,-4,M,,M,,")
        }
        let log = NMEAReader.read(text: lines.joined(separator: "\n"))
        #expect(log.stats.dateAssumed)
        #expect(log.fixes.count == 4)
        let t0 = log.fixes[0].time
        #expect(log.fixes.map { $0.time.timeIntervalSince(t0) } == [0, 1, 2, 3])
        let track = try log.track(name: "gga.log")
        #expect(track.track.duration == 3)
        #expect(track.report.retimedPoints == 0)
        #expect(track.report.notes.first?.contains("assumed day") == true)
    }
}

@Suite struct NMEAWriterLimitsTests {
    @Test func noEpochsAreInventedInsideALongGap() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let year = 365 * 86_400.0
        let track = try TimedTrack(name: "gap", times: [0, 1, 2, year, year + 1],
                                   points: (0..<5).map { o.offset(north: Double($0), east: 0) })
        let times = try NMEAWriter.epochTimes(for: track, interval: 1)
        #expect(times == [0, 1, 2, year, year + 1])
    }

    @Test func tooSmallAnIntervalOrTooManyEpochsIsRefused() throws {
        let track = try straightTrack(points: 17_000, step: 5, metresPerStep: 5)  // 23.6 h
        #expect(throws: GeoError.badParameter) { try NMEAWriter.epochTimes(for: track, interval: 1e-9) }
        #expect(throws: GeoError.badParameter) { try NMEAWriter.epochTimes(for: track, interval: 0.04) }
        #expect(try NMEAWriter.epochTimes(for: track, interval: 1).count == 84_996)
    }

    @Test func centisecondsCarryAndTheFirstEpochMoves() throws {
        let track = try straightTrack(points: 3, step: 1, metresPerStep: 10)
        let text = try NMEAWriter.text(for: track, start: Date(timeIntervalSince1970: 1_767_600_059.996), interval: nil)
        let rmc = text.components(separatedBy: "\r\n").filter { $0.hasPrefix("$GPRMC") }
        #expect(rmc[0].hasPrefix("$GPRMC,080100.00,A"), "59.996 s rounds up to the next minute: \(rmc[0])")
        let knots = Double(rmc[0].split(separator: ",")[7])!
        #expect(abs(knots - 10 * 3600 / 1852) < 0.01)
    }

    @Test func trackWithoutElevationIsTwoD() throws {
        let track = try straightTrack(points: 2)
        let gsa = try NMEAWriter.text(for: track, interval: nil).components(separatedBy: "\r\n").first { $0.hasPrefix("$GPGSA") }!
        #expect(gsa.hasPrefix("$GPGSA,A,2,"))
    }
}
