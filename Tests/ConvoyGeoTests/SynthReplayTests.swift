import Foundation
import Testing
@testable import ConvoyGeo

@Suite struct SyntheticTrackTests {
    let origin = GeoPoint(lat: 46.0511, lon: 14.5051)

    @Test func sameSeedSameBytesOtherSeedOtherBytes() throws {
        let a = GPXWriter.string(try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 600, seed: 7, origin: origin)))
        let b = GPXWriter.string(try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 600, seed: 7, origin: origin)))
        let c = GPXWriter.string(try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 600, seed: 8, origin: origin)))
        #expect(a == b)
        #expect(a != c)
    }

    /// Median moving speed sits in the profile's cruise range; every profile stops sometimes.
    @Test(arguments: MobilityProfile.allCases)
    func kinematicsArePlausible(profile: MobilityProfile) throws {
        let doc = try SyntheticTrack.generate(SynthesisOptions(profile: profile, duration: 3600, seed: 11, origin: origin))
        let track = try GPXImport.tracks(from: doc)[0].track
        #expect(track.count == 3601)
        var speeds: [Double] = []
        var accelerations: [Double] = []
        for i in 1..<track.count { speeds.append(track.points[i - 1].distance(to: track.points[i])) }
        for i in 1..<speeds.count { accelerations.append(speeds[i] - speeds[i - 1]) }
        let moving = speeds.filter { $0 > 0.2 }.sorted()
        let k = profile.kinematics
        let median = moving[moving.count / 2]
        #expect(k.cruiseRange.contains(median), "\(profile): median \(median) m/s")
        #expect(speeds.max()! <= k.cruiseRange.upperBound + 0.01)
        // Distance per second follows the profile's acceleration; corners cut a
        // little off a second's distance, never more than the turning speed.
        let rising = accelerations.filter { $0 > 0 }.sorted()
        #expect(rising[rising.count * 99 / 100] <= k.acceleration + 0.05, "\(profile): p99 acceleration")
        #expect(rising.last! <= k.acceleration + k.turnSpeed, "\(profile): max acceleration \(rising.last!)")
        let stopped = speeds.count { $0 == 0 }
        #expect(stopped > 0, "\(profile) never stopped in an hour")
        #expect(Double(stopped) / Double(speeds.count) < 0.5, "\(profile) stood still most of the hour")
    }

    @Test func urbanCanyonStretchHasHighHDOPAndFewSatellites() throws {
        let doc = try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 600, seed: 1, origin: origin,
                                                               urbanCanyon: 200...300))
        let pts = doc.tracks[0].segments[0]
        #expect(pts[200...300].allSatisfy { $0.hdop! >= 4 && $0.satellites! <= 6 })
        #expect(pts[0..<200].allSatisfy { $0.hdop! <= 1.2 && $0.satellites! >= 9 })
    }

    @Test func rejectsBadOptions() {
        #expect(throws: GeoError.badParameter) {
            try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 0, seed: 1, origin: origin))
        }
        #expect(throws: GeoError.badParameter) {
            try SyntheticTrack.generate(SynthesisOptions(profile: .walk, duration: 60, seed: 1, origin: GeoPoint(lat: 89, lon: 0)))
        }
    }
}

@Suite struct ReplayerTests {
    @Test func interpolatesBetweenPoints() throws {
        var r = try Replayer(track: try straightTrack(points: 3, step: 10, metresPerStep: 100))
        let mid = r.fix(at: 5)
        #expect(abs(mid.position.distance(to: GeoPoint(lat: 46, lon: 14)) - 50) < 0.01)
        #expect(abs(mid.speed - 10) < 0.01)
        #expect(abs(mid.heading) < 0.01 || abs(mid.heading - 360) < 0.01)
    }

    @Test func loopPingPongAndHold() throws {
        let track = try straightTrack(points: 11, step: 1, metresPerStep: 10)  // 10 s, 100 m north
        let origin = GeoPoint(lat: 46, lon: 14)
        var loop = try Replayer(track: track, mode: .loop)
        #expect(abs(loop.fix(at: 13).position.distance(to: origin) - 30) < 0.01)
        var ping = try Replayer(track: track, mode: .pingPong)
        let back = ping.fix(at: 13)
        #expect(abs(back.position.distance(to: origin) - 70) < 0.01)
        #expect(abs(back.heading - 180) < 0.01, "walking back south")
        var hold = try Replayer(track: track, mode: .hold)
        let end = hold.fix(at: 500)
        #expect(abs(end.position.distance(to: origin) - 100) < 0.01)
        #expect(end.speed == 0)
    }

    @Test func offsetAndSpeedFactorDesynchroniseDevices() throws {
        let track = try straightTrack(points: 101, step: 1, metresPerStep: 1)
        let origin = GeoPoint(lat: 46, lon: 14)
        var fast = try Replayer(track: track, offset: 20, speedFactor: 2)
        let f = fast.fix(at: 10)
        #expect(abs(f.position.distance(to: origin) - 40) < 0.01)
        #expect(abs(f.speed - 2) < 0.01)
        #expect(throws: GeoError.badParameter) { try Replayer(track: track, speedFactor: 0) }
    }

    /// The cursor is an optimisation only: sequential and random queries agree.
    @Test func sequentialAndRandomAccessAgree() throws {
        let doc = try SyntheticTrack.generate(SynthesisOptions(profile: .drive, duration: 900, seed: 5,
                                                               origin: GeoPoint(lat: 40.4, lon: -3.7)))
        let track = try GPXImport.tracks(from: doc)[0].track
        var sequential = try Replayer(track: track, mode: .pingPong, offset: 33, speedFactor: 1.3)
        var rng = SeededGenerator(seed: 9)
        var t = 0.0
        while t < 3000 {
            var fresh = try Replayer(track: track, mode: .pingPong, offset: 33, speedFactor: 1.3)
            #expect(sequential.fix(at: t) == fresh.fix(at: t))
            t += rng.uniform(0.1, 20)
        }
    }
}
