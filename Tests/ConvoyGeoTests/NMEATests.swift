import Foundation
import Testing
@testable import ConvoyGeo

@Suite struct NMEATests {
    @Test func checksumsAreRight() throws {
        // A sentence from gpsd's test data, checksum *1F.
        let s = try NMEASentence(line: "$GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,1.4,E,A*1F")
        #expect(s.talker == "GP" && s.type == "RMC")
        #expect(NMEASentence.line("GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,1.4,E,A").hasSuffix("*1F"))
    }

    @Test func writerOutputIsReadBackWithinNMEAPrecision() throws {
        let doc = try SyntheticTrack.generate(SynthesisOptions(profile: .cycle, duration: 300, seed: 3,
                                                               origin: GeoPoint(lat: -33.86, lon: 151.2)))
        let track = try GPXImport.tracks(from: doc)[0].track
        let text = try NMEAWriter.text(for: track, interval: nil)
        let log = NMEAReader.read(text: text)
        #expect(log.stats.badChecksum == 0 && log.stats.malformed == 0)
        #expect(log.stats.otherTypes == track.count, "one GSA per epoch")
        #expect(log.fixes.count == track.count)
        for (fix, (t, p)) in zip(log.fixes, zip(track.times, track.points)) {
            // 5 decimals of minutes: 1e-5 / 60 degrees ≈ 1.9 cm; half of it by rounding.
            #expect(abs(fix.position.lat - p.lat) <= 0.5e-5 / 60 + 1e-12)
            #expect(abs(fix.position.lon - p.lon) <= 0.5e-5 / 60 + 1e-12)
            #expect(abs(fix.time.timeIntervalSince(track.start!) - t) < 0.006)
        }
        #expect(text.hasSuffix("\r\n"))
    }

    @Test func coordinateCarriesRoundedMinutes() {
        // 0.99999999° rounds to 60.00000 minutes: must carry into the degrees.
        #expect(NMEAWriter.coordinate(1.999_999_999, degreeDigits: 2, positive: "N", negative: "S") == ("0200.00000", "N"))
        #expect(NMEAWriter.coordinate(-122.5, degreeDigits: 3, positive: "E", negative: "W") == ("12230.00000", "W"))
    }

    @Test func badSentencesAreCountedAndSkipped() {
        let text = """
        # a comment
        $GPRMC,094737,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,1.4,E,A*1F
        $GPRMC,094738,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,1.4,E,A*00
        $GPRMC,094739,A,5251.0093,N,00518.8170,E,5.6,230.5,200818,1.4,E,A
        \(NMEASentence.line("GPGGA,0947,garbage"))
        \(NMEASentence.line("GPGGA,094740,5251.0093,N,00518.8170,E,1,09,0.9,-4,M,46.8,M,,"))
        $GPRMC,0947
        """
        let log = NMEAReader.read(text: text)
        #expect(log.stats.badChecksum == 1)
        #expect(log.stats.missingChecksum == 2)
        #expect(log.stats.malformed == 1)
        #expect(log.stats.ignoredLines == 1)
        #expect(log.fixes.count == 2)
        // The GGA-only epoch takes its date from the RMC before it.
        #expect(log.fixes[1].time == log.fixes[0].time.addingTimeInterval(3))
        #expect(log.fixes[1].satellites == 9)
    }

    @Test func noFixEpochsAreCountedNotReplayed() throws {
        let text = [
            NMEASentence.line("GPRMC,095255.810,V,2712.6404,S,15303.1201,E,0.00,0.00,080407,,,A"),
            NMEASentence.line("GPGGA,095257.809,2712.6404,S,15303.1201,E,0,00,00.0,4.0,M,42.2,M,,"),
        ].joined(separator: "\n")
        let log = NMEAReader.read(text: text)
        #expect(log.fixes.isEmpty)
        #expect(log.stats.noFix == 2)
        #expect(throws: GeoError.noTrack) { try log.track(name: "empty.log") }
    }

    @Test(.enabled(if: SharedData.available, SharedData.skipMessage))
    func readsTheRealReceiverCaptures() throws {
        let haicom = try NMEAReader.read(contentsOf: SharedData.path("nmea/haicom-305N.log"))
        #expect(haicom.stats.rejected == 0)
        #expect(haicom.stats.used == 147)
        #expect(haicom.stats.noFix > 0)
        #expect(haicom.fixes.allSatisfy { abs($0.position.lat + 27.21) < 0.01 && abs($0.position.lon - 153.05) < 0.01 })

        let zeus = try NMEAReader.read(contentsOf: SharedData.path("nmea/bundg_zeus_9.log"))
        #expect(zeus.stats.used == 284)
        #expect(zeus.stats.otherTypes > 4000, "depth, wind, heading … sentences are skipped")
        let track = try zeus.track(name: "zeus").track
        #expect(track.count == zeus.fixes.count)
        #expect(track.start == Date(timeIntervalSince1970: 1_534_758_456))  // 2018-08-20T09:47:36Z
    }
}
