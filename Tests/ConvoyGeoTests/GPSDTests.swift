import Foundation
import Testing
@testable import ConvoyGeo

/// The gpsd source's pure parts: TPV mapping, accuracy, addresses, recording.
@Suite struct GPSDMappingTests {
    static func report(mode: Int = 3, eph: Double = 10, altMSL: Double = 300, hdop: Double = .nan) -> GPSDReport {
        GPSDReport(mode: mode, device: "/dev/ttyUSB0", time: 1_767_600_000.5, latitude: 46.05, longitude: 14.5,
                   altMSL: altMSL, eph: eph, speed: 1.5, track: 90, hdop: hdop)
    }

    @Test func ephIsA95PercentRadiusAndBecomesThe68PercentOne() throws {
        let fix = try #require(Self.report(eph: 24.477).fix)
        #expect(abs(fix.accuracy68 - 15.096) < 1e-9)
        #expect(fix.mode == .threeD)
        #expect(fix.altitude == 300)
        #expect(fix.eph == 24.477)
        #expect(fix.time == 1_767_600_000.5 && fix.device == "/dev/ttyUSB0" && fix.speed == 1.5 && fix.track == 90)
    }

    @Test func twoDFixesAreDegradedAndHaveNoAltitude() throws {
        let two = try #require(Self.report(mode: 2, eph: 10).fix)
        #expect(two.mode == .twoD && two.altitude == nil)
        #expect(abs(two.accuracy68 - 10 * GPSDReport.eph95To68 * GPSDReport.twoDFactor) < 1e-9)
        // NMEA receivers' 2-D epochs often come back from gpsd as mode 3 without altitude.
        let claimed = try #require(Self.report(mode: 3, eph: 10, altMSL: .nan).fix)
        #expect(claimed.mode == .twoD && claimed.altitude == nil)
        #expect(claimed.accuracy68 == two.accuracy68)
    }

    @Test func missingFieldsAreNaNAndFallBack() throws {
        let fromHDOP = try #require(Self.report(eph: .nan, hdop: 2).fix)
        #expect(abs(fromHDOP.accuracy68 - 38 * GPSDReport.eph95To68) < 1e-9)
        #expect(fromHDOP.eph == nil && fromHDOP.hdop == 2)
        let unknown = try #require(Self.report(eph: .nan).fix)
        #expect(unknown.accuracy68 == GPSDReport.unknownAccuracy68)
        var bare = Self.report()
        bare.speed = .nan
        bare.track = .nan
        let fix = try #require(bare.fix)
        #expect(fix.speed == nil && fix.track == nil)
    }

    @Test(arguments: [0, 1]) func noFixModesGiveNoPosition(mode: Int) {
        #expect(Self.report(mode: mode).fix == nil)
    }

    @Test func reportsWithoutPositionOrTimeAreNoFix() {
        var r = Self.report()
        r.latitude = .nan
        #expect(r.fix == nil)
        r = Self.report()
        r.time = nil
        #expect(r.fix == nil)
        r = Self.report()
        r.longitude = 181
        #expect(r.fix == nil)
    }

    @Test(arguments: [
        ("127.0.0.1:2947", "127.0.0.1", 2947), ("gps.local:1", "gps.local", 1),
        ("[::1]:2947", "::1", 2947), ("[fe80::1%eth0]:65535", "fe80::1%eth0", 65535),
    ])
    func addressesParse(text: String, host: String, port: Int) throws {
        let a = try GPSDAddress(parsing: text)
        #expect(a.host == host && a.port == port)
        #expect(a.description == text)
    }

    @Test(arguments: ["nonsense", "host:", ":2947", "host:0", "host:65536", "host:29x7", "::1:2947", "[::1]", "[::1:2947", "a b:1", ""])
    func badAddressesAreClearErrors(text: String) {
        #expect(throws: GPSDError.badAddress) { try GPSDAddress(parsing: text) }
        do {
            _ = try GPSDAddress(parsing: text)
        } catch {
            #expect(error.description.hasPrefix("--gpsd: ") && error.description.contains("HOST:PORT"))
            #expect(!error.isRuntimeFailure)
        }
    }

    @Test func recordingSplitsSegmentsAtGapsAndReconnectsAndCounts() throws {
        let address = GPSDAddress(host: "127.0.0.1", port: 2947)
        func fix(_ t: Double, device: String = "/dev/a", mode: GPSDFix.Mode = .threeD) -> GPSDSource.Event {
            .fix(GPSDFix(device: device, time: 1_767_600_000 + t, position: GeoPoint(lat: 46, lon: 14 + t * 1e-5),
                         altitude: mode == .threeD ? 300 : nil, accuracy68: 5, mode: mode, hdop: 0.9, satellites: 9))
        }
        var r = GPSDRecording()
        for e: GPSDSource.Event in [
            .unreachable(reason: "refused", retryIn: 0.25), .connected(address), fix(0), fix(1), .noFix(device: "/dev/a"),
            fix(2, device: "/dev/b", mode: .twoD), fix(30), .disconnected(reason: "gone"), .connected(address), fix(31), fix(32),
        ] { r.record(e) }
        #expect(r.fixes == 6 && r.noFix == 1 && r.reconnects == 1 && r.failedAttempts == 1 && r.everConnected)
        let doc = r.document()
        #expect(doc.tracks.map(\.name) == ["/dev/a", "/dev/b"])
        #expect(doc.tracks[0].segments.map(\.count) == [2, 1, 2])
        let two = try #require(doc.tracks[1].segments.first?.first)
        #expect(two.fix == .twoD && two.elevation == nil && two.hdop == 0.9 && two.satellites == 9)
        // What it writes reads back through the GPX import a replay uses.
        let back = try GPXReader.read(data: Data(GPXWriter.string(doc).utf8), file: "recorded.gpx")
        let tracks = try GPXImport.tracks(from: back, file: "recorded.gpx")
        #expect(tracks.map(\.track.count) == [5, 1])
        #expect(back.tracks[0].segments[0][0].elevation == 300 && back.tracks[0].segments[0][0].fix == .threeD)
    }
}
