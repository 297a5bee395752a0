import ConvoyTestSupport
import Foundation
import Testing

/// `convoy live` against a real gpsd (gpsfake replaying a walk Convoy wrote as NMEA).
@Suite(.serialized, .timeLimit(.minutes(4)))
struct LiveCommandTests {
    @Test(.enabled(if: GPSFake.available || GPSFake.required, GPSFake.skipMessage))
    func aReceiverFeedsTheLiveDeviceAmongVirtualOnes() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let track = dir.appendingPathComponent("walk.gpx").path, nmea = dir.appendingPathComponent("walk.nmea").path
        #expect(try CLI.run("gpx", "synth", "--profile", "walk", "--duration", "30m", "--out", track).status == 0)
        #expect(try CLI.run("gpx", "nmea", track, "--out", nmea).status == 0)
        // An epoch every 0.2 s: fresh fixes throughout the run.
        let fake = try GPSFake([nmea], cycle: 0.2)
        try await fake.waitUntilListening()
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("live", "--gpsd", "127.0.0.1:\(fake.port)", "--duration", "8s", "--out", out.path, "--drain", "2s")
        await fake.stop()
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let counters = try #require(summary["counters"] as? [String: Int])
        // The live device shared the receiver's fixes (5 s cadence, 8 s steady: at least one), gpsd delivered many.
        #expect((counters["live_shared"] ?? 0) >= 1, "\(counters)")
        #expect((counters["live_fixes_received"] ?? 0) >= 10, "\(counters)")
        #expect(summary["devices"] as? Int == 4)
        let accounting = try #require(summary["accounting"] as? [String: Any])
        #expect((accounting["delivered"] as? Int ?? 0) > 0 && (accounting["lost"] as? [String: Int] ?? [:]).isEmpty, "\(accounting)")
        #expect(r.stderr.contains("connected"), "\(r.stderr)")
    }

    @Test func aScenarioWithoutTheLiveGroupIsBadInput() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let r = try CLI.run("live", "--gpsd", "127.0.0.1:1", "--scenario", root.appendingPathComponent("scenarios/smoke.yaml").path,
                            "--out", dir.appendingPathComponent("r").path)
        #expect(r.status == 2 && r.stderr.contains("no group \"live\""), "\(r.stderr)")
        let bad = try CLI.run("live", "--gpsd", "nonsense")
        #expect(bad.status == 2 && bad.stderr.contains("--gpsd"), "\(bad.stderr)")
    }
}
