import Foundation
import Testing
import ConvoyTestSupport

/// `convoy run` against a `convoy serve` that fails and comes back (issue 13):
/// killed with SIGKILL and restarted on the same database without
/// `--jwt-secret`, or stalled with SIGSTOP. With `retry: retry` the phones
/// renew what they must, rejoin Realtime, post their queued updates again, and
/// nothing within retention is lost; the accounting closes with every loss
/// named. The kill and the stall are placed by the run's own clock (its
/// metrics.csv rows), not by sleeping.
@Suite(.serialized, .timeLimit(.minutes(6)))
struct ChaosTests {
    /// A `convoy serve` process on a fixed port and database, so that a restart is the same backend.
    final class Server {
        let port: Int
        let database: String
        let keysPath: String
        let options: [String]
        private(set) var process: TestProcess?

        init(dir: URL, options: [String] = []) throws {
            self.options = options
            port = try GPSFake.freePort()
            database = dir.appendingPathComponent("convoy.sqlite").path
            keysPath = dir.appendingPathComponent("keys.json").path
        }

        func start() async throws {
            try? FileManager.default.removeItem(atPath: keysPath)
            let p = TestProcess()
            p.executableURL = CLI.binary
            p.arguments = ["serve", "--port", String(port), "--database", database, "--keys-file", keysPath, "--purge-every", "0", "--rate-limits", "off"] + options
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            process = p
            // Ready when the keys file is written (after the listener is bound).
            let deadline = ContinuousClock.now + .seconds(60)
            while !FileManager.default.fileExists(atPath: keysPath), ContinuousClock.now < deadline, p.isRunning {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(FileManager.default.fileExists(atPath: keysPath), "convoy serve came up")
        }

        func signal(_ s: Int32) {
            guard let p = process, p.isRunning else { return }
            kill(p.processIdentifier, s)
            if s == SIGKILL { p.waitUntilExit() }
        }

        func stop() {
            guard let p = process, p.isRunning else { return }
            p.terminate()
            p.waitUntilExit()
        }
    }

    static func scenario(keys: String, seconds: Int, groups: String = "") -> String {
        """
        name: chaos
        seed: 7
        target: { keys_file: \(keys) }
        groups:
          - name: walkers
            count: 24
            tracks: { synthetic: walk }
            cadence: 2s..3s
        \(groups)
        social:
          friends: 2..3
        timeline:
          arrival_rate: 50/s
          steady: \(seconds)s
          ramp_down: 1s
        retention:
          check_every: 0
        retry:
          policy: retry
          backoff: 500ms..4s
          max_age: 90s
        thresholds:
          - delivery.loss == 0
        """
    }

    /// Waits until the run's metrics.csv has a row at `seconds` into the timeline or later.
    static func waitForTimeline(_ csv: String, seconds: Double, run: TestProcess) async throws {
        let deadline = ContinuousClock.now + .seconds(240)
        while ContinuousClock.now < deadline, run.isRunning {
            if let text = try? String(contentsOfFile: csv, encoding: .utf8),
               let last = text.split(separator: "\n").last?.split(separator: ",").first, let t = Double(last), t >= seconds { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        Issue.record("the run never reached \(seconds) s")
    }

    struct Finished {
        var status: Int32
        var summary: [String: Any]
        var log: String
        var csv: String

        /// The largest value of a metrics.csv column over the run.
        func most(_ column: String) -> Int {
            let rows = csv.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false) }
            guard let i = rows.first?.firstIndex(where: { $0 == column }) else { return -1 }
            return rows.dropFirst().compactMap { $0.count > i ? Int($0[i]) : nil }.max() ?? -1
        }
    }

    /// Starts `convoy run` on the scenario, calls `chaos` once the run is `at` seconds in, and waits for the end.
    static func run(dir: URL, server: Server, seconds: Int, at: Double, groups: String = "", chaos: () async throws -> Void) async throws -> Finished {
        let file = dir.appendingPathComponent("chaos.yaml")
        try Self.scenario(keys: server.keysPath, seconds: seconds, groups: groups).write(to: file, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("out")
        let run = TestProcess()
        run.executableURL = CLI.binary
        run.arguments = ["run", file.path, "--out", out.path, "--log-level", "notice"]
        run.standardOutput = FileHandle.nullDevice
        run.standardError = FileHandle.nullDevice
        try run.run()
        defer { if run.isRunning { run.terminate() } }
        try await waitForTimeline(out.appendingPathComponent("metrics.csv").path, seconds: at, run: run)
        try await chaos()
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread { run.waitUntilExit(); c.resume() }.start()
        }
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let log = (try? String(contentsOf: out.appendingPathComponent("run.log"), encoding: .utf8)) ?? ""
        let csv = (try? String(contentsOf: out.appendingPathComponent("metrics.csv"), encoding: .utf8)) ?? ""
        return Finished(status: run.terminationStatus, summary: summary, log: log, csv: csv)
    }

    /// The accounting closes, nothing is lost, and retries carried what the outage held back.
    static func expectNothingLost(_ f: Finished) {
        let a = f.summary["accounting"] as? [String: Any] ?? [:]
        let sent = a["sent"] as? Int ?? -1, delivered = a["delivered"] as? Int ?? -2
        let lost = a["lost"] as? [String: Int] ?? ["?": 1]
        #expect(sent > 0 && sent == delivered + lost.values.reduce(0, +), "the accounting closes: \(a)")
        #expect(lost.isEmpty, "nothing lost with retries on: \(lost)")
        #expect(f.status == 0, "thresholds pass (delivery.loss == 0)\n\(f.log)")
    }

    /// Log lines' times (run.log starts each line with its ISO 8601 UTC time).
    static func time(ofLineContaining text: String, in log: String) -> Date? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains(text) }), let stamp = line.split(separator: " ").first else { return nil }
        return try? Date(String(stamp), strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    @Test func sigkillAndARestartOnTheSameDatabaseLoseNothing() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Server(dir: dir)
        try await server.start()
        defer { server.stop() }
        var restarted = Date.distantFuture
        let f = try await Self.run(dir: dir, server: server, seconds: 40, at: 15) {
            server.signal(SIGKILL)
            try await Task.sleep(for: .seconds(5))  // the outage itself, not a wait for a result
            try await server.start()
            restarted = Date()
        }
        Self.expectNothingLost(f)
        let a = f.summary["accounting"] as? [String: Any] ?? [:]
        #expect((a["delivered_after_retry"] as? Int ?? 0) > 0, "the outage held inserts back, and retries posted them")
        #expect(f.log.contains("phones lost the connection"), "\(f.log)")
        #expect(f.most("realtime_down") >= 20 && f.most("retry_queued") > 0, "metrics.csv shows the outage second by second")
        // Every phone back on Realtime within 15 s of the restart (realtime-js's backoff: 1, 2, 5, then 10 s).
        let back = Self.time(ofLineContaining: "every phone is back", in: f.log)
        #expect(back != nil, "run.log says when every phone was back\n\(f.log)")
        if let back { #expect(back.timeIntervalSince(restarted) < 15, "back \(back.timeIntervalSince(restarted)) s after the restart") }
    }

    /// The backend comes back without the phones' refresh tokens (a restore from before they were issued,
    /// say) and with short-lived tokens, which expire during the outage: the phones' tokens are refused,
    /// their refreshes too, and they sign in again with their passwords.
    @Test func phonesWhoseRefreshIsRefusedSignInAgain() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Server(dir: dir, options: ["--token-ttl", "8s"])
        try await server.start()
        defer { server.stop() }
        let f = try await Self.run(dir: dir, server: server, seconds: 30, at: 10) {
            server.signal(SIGKILL)
            let forget = try CLI.runTool("/usr/bin/env", ["python3", "-c",
                "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('DELETE FROM auth_refresh_tokens'); c.commit()", server.database])
            #expect(forget.status == 0, "\(forget.stderr)")
            try await Task.sleep(for: .seconds(8))  // the outage: every access token expires meanwhile
            try await server.start()
        }
        Self.expectNothingLost(f)
        let counters = f.summary["counters"] as? [String: Int] ?? [:]
        #expect((counters["sign_ins_again"] ?? 0) >= 24, "every phone signed in again: \(counters)")
        #expect(f.log.contains("signed in again (the refresh was refused)"), "\(f.log)")
    }

    /// A group in a subway: no network for 6 s every 20 s, each phone at its own phase, a reset now and
    /// then. Its phones lose Realtime and their inserts fail in the tunnels; after each, what they queued
    /// is posted and what they missed is caught up; the battery model sees the reconnects.
    @Test func aSubwayGroupsTunnelsLoseNothingWithRetries() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Server(dir: dir)
        try await server.start()
        defer { server.stop() }
        let subway = """
              - name: riders
                count: 12
                tracks: { synthetic: walk }
                cadence: 2s..3s
                conditions: { preset: subway, offline: { every: 20s, for: 6s }, resets: 30s }
            """
        let f = try await Self.run(dir: dir, server: server, seconds: 45, at: 0, groups: subway) {}
        Self.expectNothingLost(f)
        let counters = f.summary["counters"] as? [String: Int] ?? [:]
        #expect((counters["reconnects"] ?? 0) >= 12 && (counters["retry_posted"] ?? 0) > 0, "\(counters)")
        let network = f.summary["network"] as? [[String: Any]] ?? []
        #expect(network.count == 1 && network.first?["group"] as? String == "riders" && (network.first?["cuts"] as? Int ?? 0) >= 12,
                "the results say what the group ran under and what it went through: \(network)")
        // The battery model: the riders' radios paid for their reconnects (more transfers than the walkers' per device).
        let battery = (f.summary["battery"] as? [String: Any])?["groups"] as? [[String: Any]] ?? []
        #expect(battery.count == 2, "\(battery)")
    }

    @Test func aServerStalledWithSIGSTOPLosesNothing() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try Server(dir: dir)
        try await server.start()
        defer {
            server.signal(SIGCONT)
            server.stop()
        }
        let f = try await Self.run(dir: dir, server: server, seconds: 30, at: 10) {
            server.signal(SIGSTOP)
            try await Task.sleep(for: .seconds(8))  // the stall itself
            server.signal(SIGCONT)
        }
        Self.expectNothingLost(f)
        let latency = (f.summary["latency_ms"] as? [String: Any])?["e2e_latency"] as? [String: Any]
        #expect((latency?["max"] as? Double ?? 0) > 1000, "the stall shows in end-to-end latency: \(latency ?? [:])")
    }
}
