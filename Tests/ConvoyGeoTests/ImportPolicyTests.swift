import Foundation
import Testing
@testable import ConvoyGeo

@Suite struct ImportPolicyTests {
    func importOne(_ body: String, policy: ImportPolicy = .default) throws -> ImportedTrack {
        let doc = try GPXReader.read(data: gpx(body))
        return try GPXImport.tracks(from: doc, file: "t.gpx", policy: policy)[0]
    }

    @Test func untimedPointsAreInterpolatedByDistance() throws {
        // 0 m @ 0 s, 10 m (no time), 30 m @ 30 s: the middle point gets 10 s.
        let o = GeoPoint(lat: 46, lon: 14)
        let p = [o, o.offset(north: 10, east: 0), o.offset(north: 30, east: 0)]
        let t = try importOne("""
          <trk><trkseg>
          <trkpt lat="\(p[0].lat)" lon="\(p[0].lon)"><time>2020-01-01T00:00:00Z</time></trkpt>
          <trkpt lat="\(p[1].lat)" lon="\(p[1].lon)"/>
          <trkpt lat="\(p[2].lat)" lon="\(p[2].lon)"><time>2020-01-01T00:00:30Z</time></trkpt>
          </trkseg></trk>
        """)
        #expect(t.report.pointsWithoutTime == 1)
        #expect(t.report.retimedPoints == 1)
        #expect(abs(t.track.times[1] - 10) < 0.01)
        #expect(t.track.times[2] == 30)
    }

    @Test func trackWithoutTimesIsTimedAtTheFallbackSpeed() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let body = (0..<4).map { i -> String in
            let p = o.offset(north: Double(i) * 14, east: 0)
            return #"<trkpt lat="\#(p.lat)" lon="\#(p.lon)"/>"#
        }.joined()
        let t = try importOne("<trk><trkseg>\(body)</trkseg></trk>", policy: ImportPolicy(fallbackSpeed: 1.4))
        #expect(t.report.retimedByDistance)
        #expect(t.report.sourceStart == nil)
        #expect(abs(t.track.duration - 30) < 0.05, "42 m at 1.4 m/s")
    }

    /// A logger's placeholder on every point (often 1970-01-01) is no time at all:
    /// the track is timed at the fallback speed, not squeezed into one instant.
    @Test func oneTimeOnEveryPointIsAPlaceholder() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let body = (0..<20).map { i -> String in
            let p = o.offset(north: Double(i) * 14, east: 0)
            return "<trkpt lat=\"\(p.lat)\" lon=\"\(p.lon)\"><time>1970-01-01T00:00:00Z</time></trkpt>"
        }.joined()
        let t = try importOne("<trk><trkseg>\(body)</trkseg></trk>")
        #expect(t.report.notes.contains { $0.contains("placeholder: read as untimed") }, "\(t.report.notes)")
        #expect(t.report.pointsWithoutTime == 20 && t.report.sourceStart == nil)
        // 19 steps of 14 m at 1.4 m/s: 190 s, every step 10 s.
        #expect(abs(t.track.times[19] - 190) < 0.5 && abs(t.track.times[1] - 10) < 0.05, "\(t.track.times)")
    }

    /// Placeholders a fraction of a second apart (one written with fewer fractional digits, as a real
    /// file had): 184 points 20 m apart "within 0.4 ms" would be a teleport at thousands of m/s, so the
    /// times are placeholders and the track is timed at the fallback speed.
    @Test func timesSpanningLessThanThePathAtTheCeilingArePlaceholders() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let body = (0..<184).map { i -> String in
            let p = o.offset(north: Double(i) * 20, east: 0)
            let time = i == 90 ? "1901-12-13T20:45:52.0004Z" : "1901-12-13T20:45:52.000Z"
            return "<trkpt lat=\"\(p.lat)\" lon=\"\(p.lon)\"><time>\(time)</time></trkpt>"
        }.joined()
        let t = try importOne("<trk><trkseg>\(body)</trkseg></trk>", policy: ImportPolicy(fallbackSpeed: 1.4))
        #expect(t.report.notes.contains { $0.contains("placeholders, read as untimed") && $0.contains("faster than 100 m/s") },
                "\(t.report.notes)")
        #expect(t.report.retimedByDistance && t.report.sourceStart == nil)
        #expect(t.report.pointsWithoutTime == 184)
        // 183 steps of 20 m at 1.4 m/s.
        #expect(abs(t.track.duration - 183 * 20 / 1.4) < 1, "\(t.track.duration)")
        #expect(TrackInspection(t).speed.max < 1.5)
        #expect(TrackInspection(t).speed.stepsOverCeiling == 0)
    }

    /// A real track with one jump keeps its times; inspection counts the step over the ceiling.
    @Test func aTimedTrackWithOneJumpKeepsItsTimesAndIsWarnedAbout() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let body = (0..<30).map { i -> String in
            let p = o.offset(north: Double(i) * 10 + (i >= 15 ? 3_000 : 0), east: 0)
            return "<trkpt lat=\"\(p.lat)\" lon=\"\(p.lon)\"><time>2020-01-01T00:\(String(format: "%02d", i)):00Z</time></trkpt>"
        }.joined()
        let t = try importOne("<trk><trkseg>\(body)</trkseg></trk>")
        #expect(!t.report.retimedByDistance && t.report.retimedPoints == 0, "\(t.report.notes)")
        #expect(t.track.duration == 29 * 60)
        let inspected = TrackInspection(t, ceiling: 40)
        #expect(inspected.speed.stepsOverCeiling == 1, "3,010 m in 60 s is over 40 m/s")
        #expect(TrackInspection(t).speed.stepsOverCeiling == 0, "and under the default 100 m/s")
    }

    @Test func outOfOrderTimesAreSetAsideNotTheTrack() throws {
        let o = GeoPoint(lat: 46, lon: 14)
        let times = ["00:00:00", "00:00:10", "00:00:05", "00:00:20", "00:00:30"]
        let body = times.enumerated().map { i, t -> String in
            let p = o.offset(north: Double(i) * 10, east: 0)
            return #"<trkpt lat="\#(p.lat)" lon="\#(p.lon)"><time>2020-01-01T\#(t)Z</time></trkpt>"#
        }.joined()
        let t = try importOne("<trk><trkseg>\(body)</trkseg></trk>")
        #expect(t.track.count == 5)
        #expect(t.report.outOfOrderTimes == 1)
        #expect(abs(t.track.times[2] - 15) < 0.01, "re-timed between 10 s and 20 s")
    }

    @Test func duplicatesAndEmptySegmentsAreDroppedAndCounted() throws {
        let t = try importOne("""
          <trk><trkseg></trkseg><trkseg>
          <trkpt lat="1" lon="1"><time>2020-01-01T00:00:00Z</time></trkpt>
          <trkpt lat="1" lon="1"><time>2020-01-01T00:00:00Z</time></trkpt>
          <trkpt lat="1.0001" lon="1"><time>2020-01-01T00:00:05Z</time></trkpt>
          </trkseg><trkseg>
          <trkpt lat="1.0002" lon="1"><time>2020-01-01T00:01:05Z</time></trkpt>
          </trkseg></trk>
        """)
        #expect(t.report.emptySegmentsDropped == 1)
        #expect(t.report.duplicatePointsRemoved == 1)
        #expect(t.track.count == 3)
        #expect(t.report.segmentGaps == [60])
    }

    @Test func distantPastIsRebasedToRelativeTime() throws {
        let t = try importOne("""
          <trk><trkseg>
          <trkpt lat="1" lon="1"><time>1999-12-31T23:59:50Z</time></trkpt>
          <trkpt lat="1.0001" lon="1"><time>2000-01-01T00:00:00Z</time></trkpt>
          </trkseg></trk>
        """)
        #expect(t.track.times == [0, 10])
        #expect(t.track.start == Date(timeIntervalSince1970: 946_684_790))
    }

    @Test func routesBecomeTracksAndWaypointsAloneAreAnError() throws {
        let doc = try GPXReader.read(data: gpx(#"<rte><rtept lat="1" lon="1"/><rtept lat="1.001" lon="1"/></rte>"#))
        let tracks = try GPXImport.tracks(from: doc)
        #expect(tracks.map(\.kind) == ["route"])
        #expect(tracks[0].track.duration > 0)

        let onlyWaypoints = try GPXReader.read(data: gpx(#"<wpt lat="1" lon="1"/>"#))
        do {
            _ = try GPXImport.tracks(from: onlyWaypoints, file: "w.gpx")
            Issue.record("a waypoint-only file gave a track")
        } catch {
            #expect(error == .noTrack)
            #expect(error.description.contains("w.gpx"))
            #expect(error.description.contains("1 waypoint"))
        }
    }

    @Test func singlePointTrackIsKeptStationary() throws {
        let t = try importOne(#"<trk><trkseg><trkpt lat="1" lon="1"/></trkseg></trk>"#)
        #expect(t.track.count == 1)
        var r = try Replayer(track: t.track)
        #expect(r.fix(at: 100).position == GeoPoint(lat: 1, lon: 1))
    }
}
