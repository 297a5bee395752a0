import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy dashboard SHARD_URL…`: two shards, each with its own dashboard, seen as one: the phones and groups of
/// both, and at the end each shard's verdict and the run's figures as `convoy merge` makes them of the shards' folders.
@Suite struct DistributedDashboardTests {
    static func state(_ url: String) async -> [String: Any]? {
        guard let (data, _) = try? await URLSession.shared.data(from: URL(string: url + "api/state")!) else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    @Test func twoShardsAreOneLiveViewAndTheirEndsAreTheSummaries() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--rate-limits", "off")
        defer { server.stop() }
        let scenario = try DashboardTests.scenario(in: dir)
        let startAt = String(Int(Date().timeIntervalSince1970) + 20)
        var processes: [TestProcess] = []
        defer { for p in processes where p.isRunning { p.terminate() } }
        var urls: [String] = []
        for i in 1...2 {
            let (p, watch) = try CLI.start(["run", scenario, "--keys-file", keys, "--shard", "\(i)/2", "--start-at", startAt, "--drain", "3s",
                                             "--out", dir.appendingPathComponent("shard\(i)").path, "--dashboard", "127.0.0.1:0", "--dashboard-linger", "10m"])
            processes.append(p)
            urls.append(try #require(await watch.address(after: "dashboard at "), "shard \(i): \(watch.all)"))
        }
        let (merger, mergerWatch) = try CLI.start(["dashboard"] + urls + ["--listen", "127.0.0.1:0", "--linger", "10m"])
        processes.append(merger)
        let url = try #require(await mergerWatch.address(after: "shards at "), "\(mergerWatch.all)")

        // Live: both shards' phones online in one view, both groups.
        var live: [String: Any] = [:]
        let deadline = ContinuousClock.now + .seconds(180)
        while ContinuousClock.now < deadline {
            if let s = await Self.state(url), let latest = s["latest"] as? [String: Any], (latest["online"] as? Int ?? 0) >= 10 { live = s; break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let header = try #require(live["header"] as? [String: Any], "no live view: \(live)\n\(mergerWatch.all)")
        #expect(header["devices"] as? Int == 12 && (header["shards"] as? [String])?.count == 2)
        let latest = try #require(live["latest"] as? [String: Any])
        #expect(Set((latest["groups"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }) == ["walkers", "drivers"])
        #expect((latest["groups"] as? [[String: Any]] ?? []).reduce(0) { $0 + ($1["devices"] as? Int ?? 0) } == 12)
        // Each shard's own process, named by its dashboard: its CPU and memory; the operations table is the fleet's.
        let harness = (latest["processes"] as? [[String: Any]] ?? [])
        #expect(harness.compactMap { $0["name"] as? String } == urls && harness.allSatisfy { ($0["rss_mib"] as? Double ?? 0) > 1 && ($0["cpu"] as? Double ?? -1) >= 0 },
                "\(harness)")
        #expect((latest["operations"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }.starts(with: ["e2e_latency"]), "\(latest)")

        // The map: every shard's phones, each once it has shared a position.
        var placed = 0
        while ContinuousClock.now < deadline, placed < 12 {
            if let (data, _) = try? await URLSession.shared.data(from: URL(string: url + "api/map")!),
               let map = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
                placed = (map["phones"] as? [[Any]] ?? []).filter { $0.count == 5 && $0[2] is Double }.count
            }
            if placed < 12 { try await Task.sleep(for: .milliseconds(500)) }
        }
        #expect(placed == 12, "both shards' phones on one map")

        // The end: each shard's exit code, and the run as `convoy merge` makes it of the shards' folders: the updates that
        // crossed shards counted (a shard's own summary settles only its pairs), thresholds judged on the merged figures.
        var (end, lastLive): ([String: Any], [String: Any]) = ([:], [:])
        while ContinuousClock.now < deadline + .seconds(120) {
            if let s = await Self.state(url), let e = s["end"] as? [String: Any] {
                (end, lastLive) = (e, s["latest"] as? [String: Any] ?? [:])
                break
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        let summaries = try (1...2).map { i in
            try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("shard\(i)/summary.json"))) as? [String: Any])
        }
        let shards = try #require(end["shards"] as? [[String: Any]], "no end: \(end)\n\(mergerWatch.all)")
        #expect(shards.map { $0["exit_code"] as? Int } == summaries.map { $0["exit_code"] as? Int })
        let merged = dir.appendingPathComponent("merged")
        let m = try await CLI.detached("merge", dir.appendingPathComponent("shard1").path, dir.appendingPathComponent("shard2").path, "--out", merged.path)
        #expect(m.status == 99, "\(m.stdout)\n\(m.stderr)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: merged.appendingPathComponent("summary.json"))) as? [String: Any])
        let truth = try #require(summary["accounting"] as? [String: Any])
        let sum = { (key: String) in summaries.reduce(0) { $0 + (($1["accounting"] as? [String: Any])?[key] as? Int ?? 0) } }
        let accounting = try #require(end["accounting"] as? [String: Any], "\(end)")
        for key in ["sent", "delivered", "sent_offline"] {
            #expect(accounting[key] as? Int == truth[key] as? Int, "\(key): the view \(accounting), convoy merge \(truth)")
        }
        #expect(accounting["lost"] as? [String: Int] ?? [:] == truth["lost"] as? [String: Int] ?? [:], "\(accounting) \(truth)")
        #expect((truth["sent"] as? Int ?? 0) > sum("sent") && sum("sent") > 20, "cross-shard updates counted: \(truth) vs the shards' own \(sum("sent"))")
        // Live, the last second's sent is the fleet's as convoy merge counts it: what crossed shards included (a shard
        // cannot tell live whether a friend on another shard was online, so those to friends offline there count too).
        let liveSent = lastLive["sent"] as? Int ?? -1
        let (mergedSent, mergedOffline) = (truth["sent"] as? Int ?? 0, truth["sent_offline"] as? Int ?? 0)
        #expect(mergedSent <= liveSent && liveSent <= mergedSent + mergedOffline, "live sent \(liveSent), convoy merge \(truth)")
        // Each threshold with its merged value and verdict, as the merged summary has them.
        let judged = Dictionary(uniqueKeysWithValues: (summary["thresholds"] as? [[String: Any]] ?? []).map { ($0["threshold"] as? String ?? "", $0["passed"] as? Bool) })
        let shown = try #require(end["thresholds"] as? [[String: Any]])
        #expect(shown.count == 4 && shown.allSatisfy { !($0["value"] is NSNull) && $0["value"] != nil }, "\(shown)")
        for t in shown {
            #expect((t["state"] as? String == "passed") == (judged[t["threshold"] as? String ?? ""] ?? nil), "\(t) vs \(judged)")
        }
        #expect(end["exit_code"] as? Int == 99, "seal.p99 < 1us fails")
        // The report linked is the merged run's, served by the merged view.
        #expect(end["report"] as? String == "report.html")
        let (report, response) = try await URLSession.shared.data(from: URL(string: url + "report.html")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200 && String(decoding: report, as: UTF8.self).contains("12 devices against"),
                "\(String(decoding: report.prefix(300), as: UTF8.self))")
    }
}
