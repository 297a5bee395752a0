import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import ConvoyTestSupport

/// `convoy run` as a user runs it: a scenario in, a results folder and an exit code out.
@Suite(.serialized) struct RunCommandTests {
    static func scenario(thresholds: [String], in dir: URL) throws -> String {
        let path = dir.appendingPathComponent("tiny.yaml").path
        try """
            name: tiny
            seed: 3
            target: embedded
            groups:
              - name: walkers
                count: 4
                tracks: { synthetic: walk }
                cadence: 600ms..900ms
            social:
              friends: 1..2
            timeline:
              arrival_rate: 40/s
              steady: 2s
            thresholds:\(thresholds.isEmpty ? " []" : "")
            \(thresholds.map { "  - \($0)" }.joined(separator: "\n"))
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func aPassingRunExitsZeroAndWritesItsResults() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Loss is bounded loosely: on a starved CI machine a late insert can make an update stale.
        let file = try Self.scenario(thresholds: ["delivery.loss < 20%", "decrypt_failures == 0"], in: dir)
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", file, "--out", out.path, "--drain", "2s")
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("# tiny: passed") && r.stdout.contains("Every update is accounted for"), "\(r.stdout)")
        for name in ["summary.json", "summary.md", "metrics.csv", "run.log", "histograms.json", "latency-e2e_latency.hgrm", "report.html", "junit.xml"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(name).path), "\(name)")
        }
        // `convoy report` draws the same report again from the folder, and exits with the run's verdict.
        let html = try Data(contentsOf: out.appendingPathComponent("report.html"))
        try FileManager.default.removeItem(at: out.appendingPathComponent("report.html"))
        let again = try CLI.run("report", out.path)
        #expect(again.status == 0 && again.stdout.contains("report.html"), "\(again.stderr)")
        #expect(try Data(contentsOf: out.appendingPathComponent("report.html")) == html)
        #expect(try CLI.run("report", dir.path).status == 2, "a folder without summary.json is bad input")
        #expect(try CLI.run("run", file, "--metrics-listen", "nowhere").status == 2)
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(summary["schema"] as? String == "convoy.run.summary" && summary["version"] as? Int == 1)
        #expect(summary["exit_code"] as? Int == 0 && summary["passed"] as? Bool == true && summary["complete"] as? Bool == true)
        let accounting = try #require(summary["accounting"] as? [String: Any])
        let sent = accounting["sent"] as? Int ?? 0, delivered = accounting["delivered"] as? Int ?? 0
        #expect(sent > 0 && delivered > 0 && delivered <= sent)
        let csv = try String(contentsOf: out.appendingPathComponent("metrics.csv"), encoding: .utf8).split(separator: "\n")
        #expect(csv.first?.hasPrefix("t_s,phase,devices_online") == true && csv.count >= 3, "a row a second")
        #expect(!FileManager.default.fileExists(atPath: out.appendingPathComponent("roster.json").path), "no roster unless asked")
        // No secrets in what is written by default (JWTs start with eyJ).
        for name in ["summary.json", "summary.md", "run.log", "metrics.csv", "report.html", "junit.xml"] {
            let text = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)
            #expect(!containsJWT(text), "\(name) holds no token")
        }
        #expect(!containsJWT(r.stdout) && !containsJWT(r.stderr))
    }

    /// A port already in use, for the dashboard or Prometheus, is one line naming the flag and what to do (it was NIO's
    /// own text, "bind(descriptor:ptr:bytes:): Address already in use (errno: 98)"); a bare port is loopback, as for --dashboard.
    @Test func aPortInUseIsOneLineAndABarePortIsLoopback() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(thresholds: [], in: dir)
        // A port something listens on: convoy serve's, on loopback.
        let keys = dir.appendingPathComponent("keys.json")
        let server = try await ServeProcess.start(keys: keys.path, "--rate-limits", "off")
        defer { server.stop() }
        let url = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: keys)) as? [String: Any])?["url"] as? String)
        let busy = try #require(URL(string: url)?.port.map(String.init))
        for flag in ["--dashboard", "--metrics-listen"] {
            let r = try await CLI.detached("run", file, "--out", dir.appendingPathComponent("r").path, "--duration", "2s", flag, busy)
            #expect(r.status == 1 && r.stderr.contains("\(flag) \(busy): the port is in use (give another port, or 0 for a free one)")
                    && !r.stderr.contains("errno"), "\(flag): \(r.stderr)")
        }
        let bare = try await CLI.detached("run", file, "--out", dir.appendingPathComponent("b").path, "--duration", "2s", "--metrics-listen", "0")
        #expect(bare.status == 0 && bare.stderr.contains("Prometheus metrics at http://127.0.0.1:"), "\(bare.stderr)")
    }

    @Test func prometheusScrapesTheRunWhileItRuns() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(thresholds: [], in: dir)
        let process = TestProcess()
        process.executableURL = CLI.binary
        process.arguments = ["run", file, "--out", dir.appendingPathComponent("results").path, "--drain", "1s", "--duration", "12s",
                             "--metrics-listen", "127.0.0.1:0"]
        let err = Pipe()
        process.standardError = err
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // The bound port is announced on standard error before the run starts.
        var printed = ""
        while !printed.contains("/metrics\n") {
            let chunk = err.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            printed += String(decoding: chunk, as: UTF8.self)
        }
        let url = try #require(printed.split(separator: "\n").first { $0.contains("Prometheus metrics at ") }
            .map { String($0[$0.range(of: "http://")!.lowerBound...]) }, "\(printed)")
        // Scrape until the devices are online and have sent something (bounded; the run lasts about 15 s).
        var body = ""
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline, process.isRunning {
            if let (data, response) = try? await URLSession.shared.data(from: URL(string: url)!) {
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
                #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
                body = String(decoding: data, as: UTF8.self)
                if body.contains("convoy_sent_total"), body.contains("convoy_devices_online 4") { break }
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(body.contains("# TYPE convoy_e2e_latency_seconds histogram") && body.contains("convoy_devices_online 4"), "\(body)")
        #expect(!containsJWT(body))
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func aProbeThatLeaksFailsTheRunEvenWhenEveryThresholdHolds() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // A probe that "leaks" by design: reading a stranger's public key is allowed (keys are public), so it always leaks.
        try """
            catalogue: leaky
            probes:
              - id: read_strangers_key
                category: read_others
                description: Reads the stranger's users row (allowed; here to show a leak failing the run).
                if_leaked: Anyone reads anyone's public key.
                steps:
                  - request: {as: stranger, path: /rest/v1/users, query: {select: "id", id: "eq.{{stranger.id}}"}}
                    requires: {rows: ">0"}
                  - request:
                      method: GET
                      path: /rest/v1/users
                      query: {select: "id,public_key", id: "eq.{{stranger.id}}"}
                    leak_if: {rows: ">0"}
            """.write(to: dir.appendingPathComponent("leaky.yaml"), atomically: true, encoding: .utf8)
        let file = dir.appendingPathComponent("hostile.yaml").path
        try """
            name: hostile
            seed: 5
            groups:
              - name: walkers
                count: 12
                tracks: { synthetic: walk }
                cadence: 600ms..900ms
            social:
              friends: 2..3
            timeline:
              arrival_rate: 40/s
              steady: 2s
            hostile:
              share: 20%
              catalogue: leaky.yaml
              at: 0s
            thresholds:
              - delivery.loss < 20%
            """.write(toFile: file, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", file, "--out", out.path, "--drain", "2s")
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stderr.contains("a probe leaked") && r.stdout.contains("**LEAK** `read_strangers_key`"), "\(r.stdout)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(summary["passed"] as? Bool == false && summary["exit_code"] as? Int == 99)
        #expect((summary["thresholds"] as? [[String: Any]])?.allSatisfy { $0["passed"] as? Bool == true } == true, "the thresholds alone held")
        let junit = try String(contentsOf: out.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("<failure message=\"read_strangers_key: leaked"), "\(junit)")
        // The evidence names whose token it was, never the token.
        #expect(junit.contains("Bearer &lt;attacker access token&gt;") && !containsJWT(junit))
        // A catalogue that does not exist is bad input, found before anything runs.
        try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(of: "leaky.yaml", with: "missing.yaml")
            .write(toFile: file, atomically: true, encoding: .utf8)
        let bad = try CLI.run("run", file, "--out", out.path)
        #expect(bad.status == 2 && bad.stderr.contains("hostile.yaml:15:14: hostile.catalogue:"), "\(bad.stderr)")
    }

    @Test func failedThresholdsExitNinetyNineAndTheRosterIsPrivate() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(thresholds: ["e2e_latency.p99 < 1us", "delivery.loss < 20%"], in: dir)
        let out = dir.appendingPathComponent("results")
        let r = try CLI.run("run", file, "--out", out.path, "--drain", "2s", "--keep-roster")
        #expect(r.status == 99, "\(r.stderr)")
        #expect(r.stdout.contains("# tiny: FAILED") && r.stdout.contains("**FAIL**"))
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(summary["exit_code"] as? Int == 99 && summary["passed"] as? Bool == false)
        let thresholds = try #require(summary["thresholds"] as? [[String: Any]])
        #expect(thresholds.map { $0["passed"] as? Bool } == [false, true])
        let roster = out.appendingPathComponent("roster.json").path
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: roster)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let devices = try #require((try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: roster))) as? [String: Any])?["devices"] as? [[String: Any]])
        #expect(devices.count == 4 && devices.allSatisfy { ($0["secret_key"] as? String)?.count == 44 && $0["refresh_token"] is String })
        // None of the roster's secrets is anywhere else.
        let secrets = devices.flatMap { d in ["password", "secret_key", "refresh_token"].compactMap { d[$0] as? String } }
        for name in ["summary.json", "summary.md", "run.log", "metrics.csv", "histograms.json"] {
            let text = try String(contentsOf: out.appendingPathComponent(name), encoding: .utf8)
            #expect(!secrets.contains { text.contains($0) }, "\(name) holds a secret")
        }
        #expect(!secrets.contains { r.stdout.contains($0) || r.stderr.contains($0) })
    }

    @Test func aBadScenarioIsBadInputNamingFileLineAndKey() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("bad.yaml").path
        try "name: bad\ngroups:\n  - name: g\n    count: 3\n    cadense: 10s\n".write(toFile: path, atomically: true, encoding: .utf8)
        let r = try CLI.run("run", path, "--out", dir.appendingPathComponent("r").path)
        #expect(r.status == 2)
        #expect(r.stderr.contains("bad.yaml:5:5") && r.stderr.contains("did you mean \"cadence\""), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("r").path), "nothing written for bad input")
        #expect(try CLI.run("run", path + ".missing").status == 2)
        #expect(try CLI.run("run", path, "--devices", "0").status == 2)
        #expect(try CLI.run("run", path, "--target", "http://127.0.0.1:1").status == 2, "a target needs its anon key")
        #expect(try CLI.run("run", path, "--duration", "100000000000000000000000s").status == 2)
        // A missing track file is bad input naming the line of its group's tracks, before any backend starts.
        let tracks = dir.appendingPathComponent("tracks.yaml").path
        try "name: t\ngroups:\n  - name: g\n    count: 2\n    tracks: { files: [nowhere/*.gpx] }\n".write(toFile: tracks, atomically: true, encoding: .utf8)
        let missing = try CLI.run("run", tracks, "--out", dir.appendingPathComponent("t").path)
        #expect(missing.status == 2 && missing.stderr.contains("tracks.yaml:5:13") && missing.stderr.contains("matches no file"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("t").path))
    }

    @Test func sigintStopsGracefullyAndTheSummaryIsMarkedIncomplete() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = try CLI.longScenario(in: dir)
        let out = dir.appendingPathComponent("r")
        let process = TestProcess()
        process.executableURL = CLI.binary
        process.arguments = ["run", path, "--out", out.path, "--drain", "1s"]
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        try process.run()
        // Wait (a bound, not a timing assertion) until the timeline has written a few rows.
        let csv = out.appendingPathComponent("metrics.csv").path
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline, ((try? String(contentsOfFile: csv, encoding: .utf8))?.split(separator: "\n").count ?? 0) < 3 {
            Thread.sleep(forTimeInterval: 0.1)
        }
        process.interrupt()  // SIGINT
        let printed = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        _ = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 1)
        #expect(printed.contains("interrupted: incomplete"), "\(printed)")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        #expect(summary["complete"] as? Bool == false && summary["exit_code"] as? Int == 1)
        #expect(((summary["accounting"] as? [String: Any])?["sent"] as? Int ?? 0) > 0)
    }

    @Test func moreDevicesThanOpenFilesAllowIsRefusedBeforeTheRun() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(thresholds: [], in: dir)
        let r = try CLI.run("run", file, "--devices", "1000000", "--out", dir.appendingPathComponent("r").path)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("open files") && r.stderr.contains("--pooled-connections"), "\(r.stderr)")
    }

    @Test func anUnreachableTargetIsARuntimeFailure() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = try Self.scenario(thresholds: [], in: dir)
        let r = try CLI.run("run", file, "--target", "http://127.0.0.1:1", "--anon-key", "k", "--out", dir.appendingPathComponent("r").path)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("127.0.0.1:1"), "\(r.stderr)")
    }
}
