import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy run --dashboard` seen in a real browser (Debian's Chromium, driven by Selenium from
/// scripts/.venv: scripts/browser/dashboard_check.py): the page shows the run live, then its end with the
/// figures summary.json holds, and links to report.html, which the dashboard serves.
@Suite struct DashboardTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let python = root.appendingPathComponent("scripts/.venv/bin/python3").path

    static func scenario(in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("dash.yaml").path
        try """
            name: dash
            seed: 11
            target: embedded
            groups:
              - name: walkers
                count: 6
                tracks: { synthetic: walk }
                cadence: 1s..2s
              - name: drivers
                count: 6
                tracks: { synthetic: drive }
                cadence: 1s..2s
            social:
              friends: 2..3
            timeline:
              arrival_rate: 20/s
              steady: 20s
              ramp_down: 2s
            thresholds:
              - e2e_latency.p99 < 30s
              - delivery.loss < 50%
              - decrypt_failures == 0
              - seal.p99 < 1us
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A program run on a thread of its own (the browser check takes the run's length).
    static func tool(_ path: String, _ arguments: [String]) async throws -> CLI.Result {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try CLI.runTool(path, arguments) }) }.start()
        }
    }

    @Test func theBrowserShowsTheRunLiveAndItsEndAsTheSummaryHasIt() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.python), "scripts/.venv is missing: run scripts/setup")
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromedriver"), "chromium-driver is missing: run scripts/setup")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let (process, watch) = try CLI.start(["run", try Self.scenario(in: dir), "--out", out.path, "--dashboard", "127.0.0.1:0", "--dashboard-linger", "10m"])
        defer { if process.isRunning { process.terminate() } }
        // The address is announced on standard error once the page is served, before the phones sign up.
        let url = try #require(await watch.address(after: "dashboard at "), "\(watch.all)")

        let check = try await Self.tool(Self.python, [Self.root.appendingPathComponent("scripts/browser/dashboard_check.py").path, url,
                                                      "--pause-pid", String(process.processIdentifier)])
        // Without --dashboard-control the page has no Stop button, and the server no stop.
        var stop = URLRequest(url: URL(string: url + "api/stop")!)
        stop.httpMethod = "POST"
        let stopped = try await URLSession.shared.data(for: stop).1 as? HTTPURLResponse
        #expect(stopped?.statusCode == 404)
        // Seen: the run's end; the run lingers for the page until interrupted, and exits with its own code.
        process.interrupt()
        process.waitUntilExit()
        let stderr = watch.all
        #expect(check.status == 0, "\(check.stdout)\n\(check.stderr)\n\(stderr)")
        #expect(process.terminationStatus == 99, "seal.p99 < 1us fails\n\(stderr)")
        let page = try #require(try JSONSerialization.jsonObject(with: Data(check.stdout.utf8)) as? [String: Any], "\(check.stdout)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])

        // A run that stops sending (stopped for a while): the page no longer says "live", and says so again after.
        let paused = try #require(page["paused"] as? [String: Any])
        #expect((paused["said"] as? String ?? "").hasPrefix("behind: no update for") && paused["state"] as? String == "behind", "\(paused)")
        #expect(page["resumed"] as? String == "live")
        // Live: phones online, both groups, charts drawn, loss left to the end.
        let live = try #require(page["live"] as? [String: Any])
        #expect((live["online"] as? Int ?? 0) > 0 && live["devices"] as? Int == 12, "\(live)")
        // Each group's row: its name, then phones, online, off Realtime, sent, received, all numbers.
        let groups = try #require(live["groups"] as? [String: [String]])
        #expect(groups.keys.sorted() == ["drivers", "walkers"] && groups.values.allSatisfy { $0.count == 6 && $0[1] == "6" }, "\(groups)")
        #expect(groups.values.allSatisfy { $0.dropFirst().allSatisfy { Int($0.replacingOccurrences(of: ",", with: "")) != nil } }, "\(groups)")
        #expect((live["chart_paths"] as? Int ?? 0) >= 2)
        #expect((live["thresholds"] as? [String: String])?["delivery.loss < 50%"] == "at_end", "\(live)")
        #expect(live["stop_shown"] as? Bool == false)
        // The harness's own process: its CPU and memory.
        let harness = try #require((live["processes"] as? [String: [String]])?["convoy run"], "\(live)")
        #expect(harness.count == 4 && Int(harness[1]) != nil && (Int(harness[2].replacingOccurrences(of: ",", with: "")) ?? 0) > 1, "\(harness)")
        // What fails so far is at the top, with its figure, and first in the table; the control: what passes is not there.
        let failing = live["failing"] as? [[String]] ?? []
        #expect(failing.map { $0.first ?? "" } == ["seal.p99 < 1us"] && failing.first?.last?.hasSuffix(" ms") == true, "\(live)")
        #expect((live["threshold_order"] as? [String])?.first == "seal.p99 < 1us", "\(live)")
        // Latency over the last 10 s and the run so far, in the tiles and for every operation (e2e first), and each
        // chart's legend in its caption, not on its lines.
        #expect(live["latency_label"] as? String == "e2e p50 / p99 (last 10 s)" && live["run_latency_label"] as? String == "e2e p90 / p99 / p99.9 (run so far)")
        let operations = try #require(live["operations"] as? [String: [String]])
        #expect((live["operation_order"] as? [String])?.first == "e2e_latency" && ["post", "seal", "open"].allSatisfy { operations[$0] != nil }, "\(operations)")
        #expect(operations.values.allSatisfy { $0.count == 9 && Int($0[1].replacingOccurrences(of: ",", with: "")) ?? 0 > 0 }, "\(operations)")
        #expect((live["legends"] as? [String])?.contains { $0.contains("p99 10 s") && $0.contains("p99 run") } == true, "\(live)")
        // The layout at 1280, 1440 and 1920 px, live and at the end: nothing overlaps, no figure wraps, no legend on a plot.
        let layout = try #require(page["layout"] as? [String: [String: [String]]])
        #expect(layout.keys.sorted() == ["end", "live"] && layout.values.allSatisfy { $0.count == 3 }, "\(layout)")
        for (when, widths) in layout { for (width, problems) in widths { #expect(problems.isEmpty, "\(when) at \(width) px: \(problems)") } }
        #expect(page["console_errors"] as? [String] == [], "the page's console: \(page["console_errors"] ?? "none read")")
        // The live map: one marker per online phone in the map's data, a scale bar; a click lists the phone's friends
        // and the last updates each received from it, with their latency.
        let map = try #require(live["map"] as? [String: Any])
        let markers = map["markers"] as? Int ?? -1
        #expect(markers > 0 && markers == map["drawn_for"] as? Int && markers == map["online_in_data"] as? Int && map["scale_bar"] as? Bool == true, "\(map)")
        let clicked = try #require(live["clicked"] as? [String: Any])
        let rows = clicked["rows"] as? [[String]] ?? []
        #expect((clicked["title"] as? String ?? "").hasPrefix("Phone ") && (2...3).contains(rows.count), "\(clicked)")
        #expect(rows.contains { $0.count == 3 && ["precise", "general:2"].contains($0[1]) && $0[2].contains(" ms") }, "\(clicked)")

        // The end: the page's figures are the summary's.
        let end = try #require(page["end"] as? [String: Any])
        let accounting = try #require(summary["accounting"] as? [String: Any])
        let lost = (accounting["lost"] as? [String: Int] ?? [:]).values.reduce(0, +)
        #expect(end["exit_code"] as? Int == summary["exit_code"] as? Int && end["exit_code"] as? Int == 99)
        #expect(end["sent"] as? Int == accounting["sent"] as? Int && (end["sent"] as? Int ?? 0) > 50, "\(end) \(accounting)")
        #expect(end["delivered"] as? Int == accounting["delivered"] as? Int && end["lost"] as? Int == lost)
        let judged = (summary["thresholds"] as? [[String: Any]] ?? []).map { ($0["threshold"] as? String ?? "", $0["passed"] as? Bool == true ? "passed" : "failed") }
        #expect(end["thresholds"] as? [String: String] == Dictionary(uniqueKeysWithValues: judged) && judged.count == 4, "\(end)")
        // What failed, at the top, in report.html's words; the run's own e2e p50 / p99 there and in the tiles.
        #expect((end["why"] as? String ?? "").contains("threshold seal.p99 < 1us"), "\(end)")
        let e2e = try #require((summary["latency_ms"] as? [String: Any])?["e2e_latency"] as? [String: Any])
        for (shown, stat) in [("p50", "p50"), ("p99", "p99"), ("tile_p50", "p50"), ("tile_p99", "p99")] {
            let value = Double(end[shown] as? String ?? "") ?? -1, truth = e2e[stat] as? Double ?? -2
            #expect(abs(value - truth) <= (truth >= 100 ? 0.5 : 0.05), "\(shown): page \(end[shown] ?? "none"), summary \(truth)")
        }
        for (shown, stat) in [("run_p90", "p90"), ("run_p99", "p99"), ("run_p999", "p99.9")] {
            let value = Double(end[shown] as? String ?? "") ?? -1, truth = e2e[stat] as? Double ?? -2
            #expect(abs(value - truth) <= (truth >= 100 ? 0.5 : 0.05), "\(shown): page \(end[shown] ?? "none"), summary \(truth)")
        }
        #expect(end["failing"] is NSNull, "at the end, why it failed says it: \(end)")
        let endMap = try #require(end["map"] as? [String: Any])
        #expect(endMap["markers"] as? Int == 12 && endMap["placed_in_data"] as? Int == 12, "every phone where it last was: \(endMap)")

        // The end's downloads are the results folder's own files.
        let downloads = try #require(page["downloads"] as? [String: [String: Any]])
        for (link, file) in [("summary-link", "summary.json"), ("csv-link", "metrics.csv")] {
            let written = try String(contentsOf: out.appendingPathComponent(file), encoding: .utf8)
            #expect(downloads[link]?["status"] as? Int == 200 && downloads[link]?["text"] as? String == written && written.count > 100, "\(link)")
        }
        // report.html, from the dashboard.
        let report = try #require(page["report"] as? [String: Any])
        #expect((report["url"] as? String)?.hasSuffix("/report.html") == true && (report["title"] as? String ?? "").contains("dash"), "\(report)")
        #expect(report["map_markers"] as? Int == 12 && report["map_scale_bar"] as? Int == 1, "report.html's map: one marker per phone: \(report)")
        #expect(!containsJWT(check.stdout) && !containsJWT(stderr))
    }

    @Test func badDashboardFlagsAreBadInput() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(in: dir)
        let bad = try CLI.run("run", file, "--dashboard", "nowhere")
        #expect(bad.status == 2 && bad.stderr.contains("--dashboard is [HOST:]PORT"), "\(bad.stderr)")
        let alone = try CLI.run("run", file, "--dashboard-linger", "5s")
        #expect(alone.status == 2 && alone.stderr.contains("--dashboard-linger goes with --dashboard"), "\(alone.stderr)")
    }
}
