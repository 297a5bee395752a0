import Foundation
import Testing
import ConvoyTestSupport

/// Issue 6's acceptance: two shards as two processes against one `convoy serve`,
/// merged, count what a single process counts with the same seed; and what
/// `convoy merge` refuses.
@Suite(.serialized) struct ShardMergeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// 24 devices in two groups and two communities, friends across shards, two hostile devices.
    static func scenario(in dir: URL) throws -> String {
        let file = dir.appendingPathComponent("sharded.yaml")
        try Data("""
            name: sharded
            seed: 7
            groups:
              - name: walkers
                count: 14
                tracks: { synthetic: walk }
                cadence: 1500ms..2500ms
              - name: drivers
                count: 10
                tracks: { synthetic: drive }
                cadence: 1500ms..2500ms
                background_share: 20%
            social:
              friends: 2..4
              communities: 2
              decide_later: 10%
            timeline:
              arrival_rate: 24/s
              steady: 8s
              ramp_down: 1s
            hostile:
              share: 8%
              catalogue: \(root.appendingPathComponent("probes/greenbox.yaml").path)
              at: 2s
            thresholds:
              - delivery.loss < 5%
            """.utf8).write(to: file)
        return file.path
    }

    static func summary(_ folder: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("summary.json"))) as? [String: Any])
    }

    static func counters(_ s: [String: Any]) -> [String: Int] { s["counters"] as? [String: Int] ?? [:] }
    static func accounting(_ s: [String: Any]) -> [String: Any] { s["accounting"] as? [String: Any] ?? [:] }

    /// Starts `convoy` with output to files; `wait()` returns its exit status and output.
    struct Running {
        let process: TestProcess
        let log: URL

        init(_ arguments: [String], log: URL) throws {
            process = TestProcess()
            process.executableURL = CLI.binary
            process.arguments = arguments
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            process.standardOutput = handle
            process.standardError = handle
            self.log = log
            try process.run()
        }

        /// Waits on a thread of its own (not one of the async tests' few).
        func wait() async -> (status: Int32, output: String) {
            await withCheckedContinuation { continuation in
                Thread {
                    process.waitUntilExit()
                    continuation.resume(returning: (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? ""))
                }.start()
            }
        }
    }

    @Test func twoShardsMergedCountWhatOneProcessCounts() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--rate-limits", "off")
        defer { server.stop() }
        let scenario = try Self.scenario(in: dir)
        // The folders given to merge in reverse: it puts them in shard order.
        let (a, b, parts, mergeOutput) = try await Self.singleAndMerged(scenario, keys: keys, in: dir, mergeOrder: [2, 1])
        let (single, merged) = (dir.appendingPathComponent("single"), dir.appendingPathComponent("merged"))
        // Each shard ran its half and left friends elsewhere to the merge.
        for (i, p) in parts.enumerated() {
            let shard = try #require(p["shard"] as? [String: Any])
            #expect(shard["shard"] as? Int == i + 1 && shard["shards"] as? Int == 2 && shard["fleet_devices"] as? Int == 24)
            #expect(p["devices"] as? Int == 12)
            #expect((shard["sent_to_other_shards"] as? Int ?? 0) > 0, "friends on the other shard")
        }
        // What the seed decides is the same: devices, sharing ticks, sealed rows (expected + to friends offline).
        #expect(b["devices"] as? Int == 24 && a["devices"] as? Int == 24)
        #expect(Self.counters(b)["updates"] == Self.counters(a)["updates"])
        let rows = { (s: [String: Any]) in (Self.accounting(s)["sent"] as? Int ?? -1) + (Self.accounting(s)["sent_offline"] as? Int ?? -1) }
        #expect(rows(b) == rows(a) && rows(a) > 100, "single \(Self.accounting(a)), merged \(Self.accounting(b))")
        // The merged accounting closes, and counts what a single process counted.
        let sent = try #require(Self.accounting(b)["sent"] as? Int), delivered = try #require(Self.accounting(b)["delivered"] as? Int)
        let lost = (Self.accounting(b)["lost"] as? [String: Int] ?? [:]).values.reduce(0, +)
        #expect(sent == delivered + lost)
        #expect(sent > (parts.map { Self.accounting($0)["sent"] as? Int ?? 0 }.reduce(0, +)), "cross-shard updates reconciled")
        #expect(Self.counters(b)["delivered"] == delivered && Self.counters(b)["sent"] == sent)
        // Which of those rows were expected (the friend online) and which went to a friend offline depends on when
        // each subscription completed, in one process as in two: a loaded machine moved 36 of 274 rows from one to
        // the other (single 234 + 40 offline, merged 270 + 4). Their sum is the seed's, checked above.
        // Histograms merged losslessly: the merged e2e count is the shards' sum.
        let e2e = { (s: [String: Any]) in ((s["latency_ms"] as? [String: Any])?["e2e_latency"] as? [String: Any])?["count"] as? Int ?? -1 }
        #expect(e2e(b) == e2e(parts[0]) + e2e(parts[1]))
        // Battery and probes summed; the same report files.
        let battery = try #require((b["battery"] as? [String: Any])?["groups"] as? [[String: Any]])
        #expect(battery.map { $0["devices"] as? Int ?? 0 }.reduce(0, +) == 24)
        let probes = try #require(b["probes"] as? [String: Any])
        #expect(probes["hostile_devices"] as? Int == (a["probes"] as? [String: Any])?["hostile_devices"] as? Int)
        for file in ["summary.md", "histograms.json", "report.html", "junit.xml", "metrics.csv"] {
            #expect(FileManager.default.fileExists(atPath: merged.appendingPathComponent(file).path), "\(file)")
        }
        #expect(mergeOutput.contains("Merged from 2 shards"))

        // What merge refuses: a shard missing, a shard twice, a folder that is not a shard, --out among the inputs.
        let shard1 = dir.appendingPathComponent("shard1").path
        let refusals: [([String], String)] = [
            ([shard1], "shard 2 of 2 missing"),
            ([shard1, shard1, dir.appendingPathComponent("shard2").path], "shard 1 again"),
            ([single.path, shard1], "not a shard's results"),
        ]
        for (folders, says) in refusals {
            let r = try CLI.run(["merge"] + folders + ["--out", dir.appendingPathComponent("bad").path])
            #expect(r.status == 2 && r.stderr.contains(says), "\(folders): \(r.stderr)")
        }
        // A shard of another fleet (here: another seed) with the same run id.
        let other = dir.appendingPathComponent("other")
        try FileManager.default.copyItem(at: dir.appendingPathComponent("shard2"), to: other)
        let file = other.appendingPathComponent("summary.json")
        let text = try String(contentsOf: file, encoding: .utf8).replacingOccurrences(of: "\"seed\" : 7", with: "\"seed\" : 8")
        try Data(text.utf8).write(to: file)
        let mixed = try CLI.run("merge", shard1, other.path, "--out", dir.appendingPathComponent("bad").path)
        #expect(mixed.status == 2 && mixed.stderr.contains("another fleet"), "\(mixed.stderr)")
        let r = try CLI.run("merge", shard1, "--out", shard1)
        #expect(r.status == 2 && r.stderr.contains("--out"), "\(r.stderr)")
    }

    /// Green Box paired the PRD's way on the phones during the run (`pairing: prd`), over two shards against one backend:
    /// each shard signs in its devices' friends on the other shard for their user ids, each phone asks and answers on its
    /// own shard, a reinstalled phone asks its friends again wherever they run, and the merge counts what one process
    /// counts. Refused (exit 2) before.
    @Test func twoShardsPairingOnThePhonesMergeAsOneProcess() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--rate-limits", "off")
        defer { server.stop() }
        let text = try String(contentsOfFile: try Self.scenario(in: dir), encoding: .utf8)
            .replacingOccurrences(of: "seed: 7\n", with: "seed: 7\napp: { name: greenbox, pairing: prd }\n")
            .replacingOccurrences(of: "  decide_later: 10%\n", with: "  decide_later: 15%\n  accept_later: 100%\n  accept_later_at: 10s..12s\n")
            // 12 s after the migration at 13 s for every reinstalled phone to hear a friend again (CI, loaded: 22 of 24 in 7 s).
            .replacingOccurrences(of: "  steady: 8s\n", with: "  steady: 25s\n")
            .replacingOccurrences(of: "  - delivery.loss < 5%", with: "  - pairing_failures == 0\n  - migration_failures == 0\n")
            .replacingOccurrences(of: "thresholds:\n", with: "migration:\n  share: 25%\n  at: 13s\n  reaccept: 2s..4s\nthresholds:\n")
        let scenario = dir.appendingPathComponent("prd-sharded.yaml").path
        try text.write(toFile: scenario, atomically: true, encoding: .utf8)
        let (a, b, parts, _) = try await Self.singleAndMerged(scenario, keys: keys, in: dir)
        let pairing = { (s: [String: Any]) in Self.counters(s).filter { $0.key.hasPrefix("pairing") } }
        // The seed decides who asks whom, who leaves a request at "decide later" and who accepts it later: the same in one
        // process as over two, and every request answered as planned (none failed: the friend's user id was right).
        for name in ["pairing_requests", "pairing_accepted", "pairing_decided_later", "pairing_accepted_later", "pairing_accepted_later_succeeded",
                     "migration_reinstalls", "migration_reaccepted"] {
            #expect(Self.counters(b)[name] == Self.counters(a)[name] && (Self.counters(a)[name] ?? 0) > 0,
                    "\(name): single \(pairing(a)), merged \(pairing(b))")
        }
        #expect(Self.counters(b)["pairing_failures"] == nil, "\(pairing(b))")
        // Each shard asked, answered and shared with friends on the other: requests made on one were accepted on the other.
        let accept = { (s: [String: Any]) in ((s["latency_ms"] as? [String: Any])?["pairing_accept"] as? [String: Any])?["count"] as? Int ?? -1 }
        for p in parts {
            #expect(accept(p) > 0 && ((p["shard"] as? [String: Any])?["sent_to_other_shards"] as? Int ?? 0) > 0, "\(pairing(p))")
        }
        #expect(accept(b) == accept(parts[0]) + accept(parts[1]) && accept(b) == accept(a), "single \(accept(a)), merged \(accept(b))")
        // The merged accounting closes, with what crossed shards reconciled.
        let sent = try #require(Self.accounting(b)["sent"] as? Int), delivered = try #require(Self.accounting(b)["delivered"] as? Int)
        let lost = (Self.accounting(b)["lost"] as? [String: Int] ?? [:]).values.reduce(0, +)
        // What friends sealed to a reinstalled phone's old key until they accepted again is lost as decrypt_failed, each
        // counted as the migration's; little else is lost.
        let reasons = Self.accounting(b)["lost"] as? [String: Int] ?? [:]
        #expect(sent == delivered + lost && sent > 100 && Double(lost - (reasons["decrypt_failed"] ?? 0)) < 0.05 * Double(sent), "\(Self.accounting(b))")
        #expect(sent > (parts.map { Self.accounting($0)["sent"] as? Int ?? 0 }.reduce(0, +)), "cross-shard updates reconciled")
        #expect(Self.counters(b)["decrypt_failures"] == Self.counters(b)["migration_undecryptable"] && Self.counters(b)["received_unmatched"] == nil)
        let restore = { (s: [String: Any]) in ((s["latency_ms"] as? [String: Any])?["migration_restore"] as? [String: Any])?["count"] as? Int ?? -1 }
        #expect(restore(b) == restore(a) && restore(a) > 0, "single \(restore(a)), merged \(restore(b))")
        // The hostile phones waited for their casts to pair, on either shard, and probed: none left untested for want of it.
        let probes = try #require(b["probes"] as? [String: Any])
        #expect(probes["hostile_devices"] as? Int == (a["probes"] as? [String: Any])?["hostile_devices"] as? Int)
        let outcomes = try #require(probes["probes"] as? [[String: Any]])
        #expect(!outcomes.isEmpty && outcomes.allSatisfy { ($0["leaked"] as? Int ?? 0) == 0 }, "\(outcomes)")
        #expect(outcomes.map { $0["denied"] as? Int ?? 0 }.reduce(0, +) > 0, "\(outcomes)")
        let notes = outcomes.flatMap { $0["notes"] as? [String] ?? [] }
        #expect(!notes.contains { $0.contains("had not paired") }, "\(notes)")
    }

    /// `scenario` run in one process (into `dir/single`), then as two shards started together (`dir/shardI`) and merged
    /// (`dir/merged`, the folders given in `mergeOrder`), all against the backend of `keys`: the single run's summary, the
    /// merged one, each shard's, and what merge printed. Each run is expected to pass.
    static func singleAndMerged(_ scenario: String, keys: String, in dir: URL, mergeOrder: [Int] = [1, 2]) async throws
        -> (single: [String: Any], merged: [String: Any], parts: [[String: Any]], mergeOutput: String) {
        let single = dir.appendingPathComponent("single")
        let one = try await CLI.detached("run", scenario, "--keys-file", keys, "--out", single.path, "--drain", "3s")
        #expect(one.status == 0, "\(one.stdout.suffix(3000))\n\(one.stderr.suffix(2000))")
        // Both shards start together, a while ahead so that both are set up (sign-ups, signing in friends across shards).
        let startAt = String(Int(Date().timeIntervalSince1970) + 25)
        let shards = try (1...2).map { i in
            try Running(["run", scenario, "--keys-file", keys, "--shard", "\(i)/2", "--start-at", startAt, "--drain", "3s",
                         "--out", dir.appendingPathComponent("shard\(i)").path], log: dir.appendingPathComponent("shard\(i).log"))
        }
        for (i, s) in shards.enumerated() {
            let r = await s.wait()
            #expect(r.status == 0, "shard \(i + 1): \(r.output.suffix(3000))")
        }
        let merged = dir.appendingPathComponent("merged")
        let m = try await CLI.detached(["merge"] + mergeOrder.map { dir.appendingPathComponent("shard\($0)").path } + ["--out", merged.path])
        #expect(m.status == 0, "\(m.stdout)\n\(m.stderr)")
        return (try Self.summary(single), try Self.summary(merged), try (1...2).map { try Self.summary(dir.appendingPathComponent("shard\($0)")) }, m.stdout)
    }

    /// A declared app (Beacon: examples/apps/beacon.yaml, served from its file) over two shards against one backend, merged:
    /// the same rows and the same accounting as one process, its action summed, what crossed shards reconciled.
    @Test func aDeclaredAppShardsAndMergesAsOneProcess() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let app = Self.root.appendingPathComponent("examples/apps/beacon.yaml").path
        let server = try await ServeProcess.start(keys: keys, "--app-file", app, "--rate-limits", "off")
        defer { server.stop() }
        // The shipped scenario, shorter, without its compressed-time retention (the server keeps its file's two minutes).
        var text = try String(contentsOf: Self.root.appendingPathComponent("scenarios/beacon.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "file: ../examples/apps/beacon.yaml", with: "file: \(app)")
            .replacingOccurrences(of: "  steady: 45s\n", with: "  steady: 10s\n")
            .replacingOccurrences(of: "  - retention_violations == 0\n", with: "")
            .replacingOccurrences(of: "  - e2e_latency.p99 < 500ms\n", with: "")
        let retention = try #require(text.range(of: "retention:\n"))
        let thresholds = try #require(text.range(of: "thresholds:\n"))
        text.removeSubrange(retention.lowerBound..<thresholds.lowerBound)
        let scenario = dir.appendingPathComponent("beacon-sharded.yaml").path
        try text.write(toFile: scenario, atomically: true, encoding: .utf8)
        let (a, b, parts, _) = try await Self.singleAndMerged(scenario, keys: keys, in: dir)

        for p in parts {
            #expect(p["devices"] as? Int == 15 && ((p["shard"] as? [String: Any])?["sent_to_other_shards"] as? Int ?? 0) > 0)
            #expect((Self.counters(p)["actions.follows_refresh"] ?? 0) > 0)
        }
        // The seed decides the ticks and the rows sealed; the merged accounting closes with nothing lost, and its action is
        // the shards' sum, timed as many times as it was made.
        #expect(Self.counters(b)["updates"] == Self.counters(a)["updates"])
        let rows = { (s: [String: Any]) in (Self.accounting(s)["sent"] as? Int ?? -1) + (Self.accounting(s)["sent_offline"] as? Int ?? -1) }
        #expect(rows(b) == rows(a) && rows(a) > 50, "single \(Self.accounting(a)), merged \(Self.accounting(b))")
        let sent = try #require(Self.accounting(b)["sent"] as? Int)
        #expect(Self.accounting(b)["delivered"] as? Int == sent && (Self.accounting(b)["lost"] as? [String: Int] ?? [:]).isEmpty, "\(Self.accounting(b))")
        #expect(sent > parts.map { Self.accounting($0)["sent"] as? Int ?? 0 }.reduce(0, +), "cross-shard beacons reconciled")
        let made = parts.map { Self.counters($0)["actions.follows_refresh"] ?? 0 }.reduce(0, +)
        let timed = ((b["latency_ms"] as? [String: Any])?["follows_refresh"] as? [String: Any])?["count"] as? Int
        #expect(Self.counters(b)["actions.follows_refresh"] == made && timed == made && Self.counters(b)["action_failures.follows_refresh"] == nil)
    }

    @Test func shardFlagsAreCheckedBeforeAnythingStarts() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenario = try Self.scenario(in: dir)
        let cases: [([String], String)] = [
            (["--shard", "3/2"], "--shard is I/N"),
            (["--shard", "1/2", "--target", "http://127.0.0.1:9", "--anon-key", "k"], "needs --start-at"),
            (["--shard", "1/2", "--start-at", "2026-13-01T00:00:00Z", "--target", "http://127.0.0.1:9", "--anon-key", "k"], "--start-at is"),
            (["--shard", "1/2", "--start-at", String(Int(Date().timeIntervalSince1970) + 60)], "need one backend"),
            (["--shard", "1/2", "--start-at", "2099-01-01T00:00:00Z", "--target", "http://127.0.0.1:9", "--anon-key", "k"], "more than a day away"),
            (["--run-id", "a b"], "--run-id is"),
        ]
        for (flags, says) in cases {
            let r = try CLI.run(["run", scenario, "--out", dir.appendingPathComponent("r").path] + flags)
            #expect(r.status == 2 && r.stderr.contains(says), "\(flags): \(r.stderr)")
        }
    }
}
