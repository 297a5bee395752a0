import ConvoyTestSupport
import Foundation
import Testing

/// `convoy gpx record` against a real gpsd (gpsfake on a free port).
@Suite(.timeLimit(.minutes(3)))
struct GpxRecordCommandTests {
    @Test(.enabled(if: GPSFake.available || GPSFake.required, GPSFake.skipMessage))
    func recordsFixesIntoGPXThatInspectReads() async throws {
        #expect(GPSFake.available, "gpsfake is required (CONVOY_REQUIRE_GPSD=1)")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let track = dir.appendingPathComponent("walk.gpx").path
        let nmea = dir.appendingPathComponent("walk.nmea").path
        let out = dir.appendingPathComponent("recorded.gpx").path
        #expect(try CLI.run("gpx", "synth", "--profile", "walk", "--duration", "2m", "--out", track).status == 0)
        #expect(try CLI.run("gpx", "nmea", track, "--out", nmea).status == 0)

        let fake = try GPSFake([nmea], cycle: 0.01)
        try await fake.waitUntilListening()
        let r = try await CLI.detached("gpx", "record", "--gpsd", "127.0.0.1:\(fake.port)", "--out", out, "--fixes", "20", "--duration", "90s")
        await fake.stop()
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("recorded 20 fix(es) from 1 receiver(s)"), "\(r.stdout)")

        let inspect = try CLI.run("gpx", "inspect", out, "--json")
        #expect(inspect.status == 0, "\(inspect.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])
        let files = try #require(json["files"] as? [[String: Any]])
        let tracks = try #require(files.first?["tracks"] as? [[String: Any]])
        #expect(tracks.count == 1)
        #expect(tracks.first?["points"] as? Int == 20)
        let text = try String(contentsOfFile: out, encoding: .utf8)
        #expect(text.contains("<name>/dev/pts/") && text.contains("<fix>3d</fix>") && text.contains("<ele>"))
    }

    @Test func aBadAddressIsBadInput() throws {
        let r = try CLI.run("gpx", "record", "--gpsd", "nonsense", "--out", "/tmp/never.gpx")
        #expect(r.status == 2)
        #expect(r.stderr.contains("--gpsd") && r.stderr.contains("HOST:PORT"), "\(r.stderr)")
        let bracket = try CLI.run("gpx", "record", "--gpsd", "::1:2947", "--out", "/tmp/never.gpx")
        #expect(bracket.status == 2)
        #expect(bracket.stderr.contains("brackets"))
        let zero = try CLI.run("gpx", "record", "--gpsd", "127.0.0.1:2947", "--out", "/tmp/never.gpx", "--fixes", "0")
        #expect(zero.status == 2)
    }

    @Test func anUnreachableGPSDIsRetriedThenARuntimeFailure() async throws {
        let port = try GPSFake.freePort()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("none.gpx").path
        let r = try await CLI.detached("gpx", "record", "--gpsd", "127.0.0.1:\(port)", "--out", out, "--duration", "1s")
        #expect(r.status == 1)
        #expect(r.stderr.contains("nothing recorded") && r.stderr.contains("unreachable") && r.stderr.contains("127.0.0.1:\(port)"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
