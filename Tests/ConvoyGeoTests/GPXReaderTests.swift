import Foundation
import Testing
@testable import ConvoyGeo

@Suite struct GPXReaderTests {
    @Test func readsGPX11WithAllFields() throws {
        let doc = try GPXReader.read(data: gpx("""
          <metadata><time>2024-01-01T00:00:00Z</time></metadata>
          <wpt lat="1" lon="2"><name>Home &amp; away</name></wpt>
          <rte><name>r</name><rtept lat="1.0" lon="2.0"/><rtept lat="1.001" lon="2.0"/></rte>
          <trk><name>morning</name><trkseg>
            <trkpt lat="45.5" lon="-73.5"><ele>12.5</ele><time>2024-05-01T10:00:00Z</time>
              <fix>3d</fix><sat>9</sat><hdop>0.9</hdop><vdop>1.2</vdop><pdop>1.5</pdop>
              <extensions><gpxtpx:TrackPointExtension xmlns:gpxtpx="x"><gpxtpx:hr>120</gpxtpx:hr><time>bogus</time></gpxtpx:TrackPointExtension></extensions>
            </trkpt>
            <trkpt lat="45.5001" lon="-73.5"><time>2024-05-01T10:00:01.250Z</time></trkpt>
            <trkpt lat="45.5002" lon="-73.5"><time>2024-05-01T12:00:02+02:00</time></trkpt>
          </trkseg></trk>
        """))
        #expect(doc.version == .v1_1)
        #expect(doc.waypoints.map(\.name) == ["Home & away"])
        #expect(doc.routes.first?.points.count == 2)
        let pts = try #require(doc.tracks.first?.segments.first)
        #expect(doc.tracks.first?.name == "morning")
        #expect(pts.count == 3)
        #expect(pts[0].elevation == 12.5)
        #expect(pts[0].satellites == 9 && pts[0].hdop == 0.9 && pts[0].vdop == 1.2 && pts[0].pdop == 1.5)
        #expect(pts[0].fix == .threeD)
        let t0 = try #require(pts[0].time)
        #expect(pts[1].time!.timeIntervalSince(t0) == 1.25)
        #expect(pts[2].time!.timeIntervalSince(t0) == 2, "+02:00 offset applied")
    }

    @Test func readsGPX10AndZonelessTimes() throws {
        let doc = try GPXReader.read(data: gpx("""
          <trk><trkseg><trkpt lat="1" lon="1"><time>2010-08-05T14:23:59</time><course>10</course><speed>1</speed></trkpt></trkseg></trk>
        """, version: "1.0"))
        #expect(doc.version == .v1_0)
        #expect(doc.tracks[0].segments[0][0].time == Date(timeIntervalSince1970: 1_281_018_239))
        #expect(doc.warnings.contains { $0.contains("no time zone") })
    }

    @Test func badCoordinateNamesFileLineColumnAndKey() {
        let data = gpx("""
          <trk><trkseg>
            <trkpt lat="1" lon="1"/>
            <trkpt lat="north" lon="1"/>
          </trkseg></trk>
        """)
        do {
            _ = try GPXReader.read(data: data, file: "walk.gpx")
            Issue.record("accepted lat=\"north\"")
        } catch {
            #expect(error == .badValue)
            #expect(error.key == "trkpt@lat")
            #expect(error.line == 5)
            #expect(error.description.hasPrefix("walk.gpx:5:"))
        }
    }

    @Test func missingLongitudeAndBadChildValues() {
        #expect(throws: GeoError.missingValue) { try GPXReader.read(data: gpx(#"<wpt lat="1"/>"#)) }
        #expect(throws: GeoError.badValue) { try GPXReader.read(data: gpx(#"<wpt lat="1" lon="2"><ele>high</ele></wpt>"#)) }
        #expect(throws: GeoError.badValue) { try GPXReader.read(data: gpx(#"<wpt lat="1" lon="200"/>"#)) }
        #expect(throws: GeoError.badValue) {
            try GPXReader.read(data: gpx(#"<trk><trkseg><trkpt lat="1" lon="2"><time>yesterday</time></trkpt></trkseg></trk>"#))
        }
    }

    @Test func malformedXMLNamesThePosition() {
        do {
            _ = try GPXReader.read(data: Data("<gpx version=\"1.1\">\n<trk>\n<trkseg></trk>".utf8), file: "broken.gpx")
            Issue.record("accepted broken XML")
        } catch {
            #expect(error == .malformedXML)
            #expect(error.file == "broken.gpx")
            #expect(error.line == 3)
        }
        #expect(throws: GeoError.malformedXML) { try GPXReader.read(data: Data("<kml/>".utf8)) }
        #expect(throws: GeoError.malformedXML) { try GPXReader.read(data: Data()) }
    }

    @Test func missingFileIsUnreadable() {
        #expect(throws: GeoError.unreadable) { try GPXReader.read(contentsOf: "/nonexistent/track.gpx") }
    }

    @Test func writerRoundTripsBothVersions() throws {
        let t0 = Date(timeIntervalSince1970: 1_700_000_000)
        let points = (0..<5).map { i in
            GPXPoint(position: GeoPoint(lat: 45.123_456_7 + Double(i) * 1e-4, lon: -0.000_000_04 - Double(i) * 1e-4),
                     elevation: 100.25, time: t0.addingTimeInterval(Double(i) + 0.5), hdop: 1.1, vdop: 1.6, pdop: 2.0,
                     satellites: 8, fix: .dgps)
        }
        for version in [GPXDocument.Version.v1_0, .v1_1] {
            let doc = GPXDocument(version: version, creator: "a \"quoted\" <creator>",
                                  tracks: [GPXTrack(name: "t & t", segments: [points, []])],
                                  routes: [GPXRoute(name: "r", points: points)], waypoints: [points[0]])
            let text = GPXWriter.string(doc)
            let back = try GPXReader.read(data: Data(text.utf8))
            #expect(back.version == version)
            #expect(back.creator == doc.creator)
            #expect(back.tracks[0].name == "t & t")
            #expect(back.tracks[0].segments.count == 2)
            for (a, b) in zip(points, back.tracks[0].segments[0]) {
                #expect(abs(a.position.lat - b.position.lat) < 1e-7)
                #expect(abs(a.position.lon - b.position.lon) < 1e-7)
                #expect(a.time == b.time)
                #expect(b.satellites == 8 && b.fix == .dgps && b.hdop == 1.1)
            }
            #expect(!text.contains("-0.0000000\""), "no negative zero")
        }
    }

    @Test(.enabled(if: SharedData.available, SharedData.skipMessage))
    func readsTheRealGPX10Track() throws {
        let file = try TrackFile.load(SharedData.path("gpx/cerknicko-jezero.gpx"))
        #expect(file.format == .gpx)
        #expect(file.document?.version == .v1_0)
        #expect(file.document?.waypoints.count == 7)
        #expect(file.tracks.count == 7)
        #expect(file.tracks.reduce(0) { $0 + $1.track.count } == 296)
        // Every track keeps its real times: nothing re-timed.
        #expect(file.tracks.allSatisfy { $0.report.retimedPoints == 0 })
        #expect(file.tracks[0].report.sourceStart == Date(timeIntervalSince1970: 1_281_018_239))
    }
}

/// What issue 13 found in the readers: files over libxml2's 10 MB chunk
/// limit, Foundation error numbers instead of words, waypoint-only files.
@Suite struct TrackReaderLimitTests {
    static func temporaryFile(_ name: String, _ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-\(UUID())-\(name)").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Over 10,000,000 bytes (libxml2 refused one chunk that size): read from the file in chunks.
    @Test func aGPXOverTenMegabytesReads() throws {
        var text = #"<?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1"><trk><trkseg>"#
        text.reserveCapacity(11_000_000)
        let start = 1_700_000_000
        let formatter = ISO8601DateFormatter()
        for i in 0..<100_000 {
            let t = formatter.string(from: Date(timeIntervalSince1970: Double(start + i)))
            text += "<trkpt lat=\"\(46 + Double(i) * 1e-6)\" lon=\"14.5\"><ele>300</ele><time>\(t)</time><desc>padding padding</desc></trkpt>\n"
        }
        text += "</trkseg></trk></gpx>\n"
        #expect(text.utf8.count > 10_000_000)
        let path = try Self.temporaryFile("big.gpx", text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try TrackFile.load(path)
        #expect(file.tracks.count == 1 && file.tracks[0].track.count == 100_000)
    }

    @Test func xmlErrorsAreWordsNotErrorNumbers() throws {
        for (text, words) in [
            (#"<gpx version="1.1"><trk><trkseg><trkpt lat="1" lon="2">"#, "ends in the middle"),
            (#"<gpx version="1.1"><trk></gpx>"#, "not closed"),
            (#"<gpx version="1.1" creator="a & b"></gpx>"#, "&amp;"),
        ] {
            do {
                _ = try GPXReader.read(data: Data(text.utf8), file: "bad.gpx")
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.description.contains(words) && !error.description.contains("NSXMLParserErrorDomain"), "\(error)")
            }
        }
    }

    /// `inspect` describes a file of waypoints only; replaying it is refused with that reason.
    @Test func waypointsOnlyAreDescribedAndRefusedAsATrack() throws {
        let path = try Self.temporaryFile("wpt.gpx", #"""
            <?xml version="1.0"?><gpx version="1.1" creator="t" xmlns="http://www.topografix.com/GPX/1/1">
            <wpt lat="46.05" lon="14.5"><name>A</name></wpt><wpt lat="46.06" lon="14.51"><name>B</name></wpt></gpx>
            """#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try TrackFile.load(path)
        #expect(file.tracks.isEmpty && file.document?.waypoints.count == 2)
        do {
            _ = try file.replayable()
            Issue.record("waypoints replayed as a track")
        } catch {
            #expect(error == .noTrack && error.description.contains("2 waypoint(s) but no track or route points"))
        }
    }
}
