import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// A declared app on the live dashboard, as a built-in one: Beacon's shipped scenario (its file, served on the embedded
/// backend) with `--dashboard`: the header names its groups and says it shares locations, the map has every phone, and
/// the end's figures are summary.json's.
@Suite struct DeclaredDashboardTests {
    @Test func beaconIsOnTheLiveDashboardAndItsEndIsTheSummarys() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let (process, watch) = try CLI.start(["run", DeclaredRetentionPairTests.scenario, "--devices", "8", "--duration", "12s",
                                                                    "--out", out.path, "--dashboard", "127.0.0.1:0", "--dashboard-linger", "10m"])
        defer { if process.isRunning { process.terminate() } }
        let url = try #require(await watch.address(after: "dashboard at "), "\(watch.all)")

        // Live: its phones sharing and received.
        var live: [String: Any] = [:]
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline {
            if let s = await DistributedDashboardTests.state(url), let latest = s["latest"] as? [String: Any],
               (latest["received"] as? Int ?? 0) > 0 { live = s; break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let header = try #require(live["header"] as? [String: Any], "no live view: \(live)\n\(watch.all)")
        #expect(header["devices"] as? Int == 8 && header["shares_locations"] as? Bool == true, "\(header)")
        #expect(Set((header["groups"] as? [String]) ?? []) == ["walkers", "cyclists"], "\(header)")

        // The end, then the map with every phone where it last was.
        var end: [String: Any] = [:]
        while ContinuousClock.now < deadline {
            if let e = await DistributedDashboardTests.state(url)?["end"] as? [String: Any] { end = e; break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let (data, _) = try await URLSession.shared.data(from: URL(string: url + "api/map")!)
        let map = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        // Asked for gzip, the same map comes gzipped (read here by Python's own gzip), smaller than the JSON.
        let gz = try await DashboardTests.tool("/usr/bin/python3", ["-c", """
            import gzip, json, sys, urllib.request
            r = urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers={"Accept-Encoding": "gzip"}))
            body = r.read()
            print(json.dumps({"encoding": r.headers.get("Content-Encoding"), "size": len(body),
                              "phones": len(json.loads(gzip.decompress(body))["phones"]), "plain": len(gzip.decompress(body))}))
            """, url + "api/map"])
        let zipped = try #require(try JSONSerialization.jsonObject(with: Data(gz.stdout.utf8)) as? [String: Any], "\(gz.stdout)\(gz.stderr)")
        #expect(zipped["encoding"] as? String == "gzip" && zipped["phones"] as? Int == 8
                && (zipped["size"] as? Int ?? .max) < (zipped["plain"] as? Int ?? 0), "\(zipped)")
        process.interrupt()
        process.waitUntilExit()
        // The compact map: [i, g, lat, lon, flags] a phone.
        let placed = (map["phones"] as? [[Any]] ?? []).filter { $0.count == 5 && $0[2] is Double }.count
        #expect(placed == 8, "\(map)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let accounting = try #require(summary["accounting"] as? [String: Any])
        #expect(end["exit_code"] as? Int == summary["exit_code"] as? Int && process.terminationStatus == Int32(summary["exit_code"] as? Int ?? -1), "\(end)")
        let shown = try #require(end["accounting"] as? [String: Any], "\(end)")
        #expect(shown["sent"] as? Int == accounting["sent"] as? Int && shown["delivered"] as? Int == accounting["delivered"] as? Int
                && (shown["sent"] as? Int ?? 0) > 0, "\(shown) \(accounting)")
        // Its action among the page's counters, as in the summary.
        let counters = summary["counters"] as? [String: Int] ?? [:]
        #expect((counters["actions.follows_refresh"] ?? 0) > 0 && (end["counters"] as? [String: Int])?["actions.follows_refresh"] == counters["actions.follows_refresh"],
                "\(counters)")
    }
}
