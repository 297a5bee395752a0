import Foundation
import Testing
import ConvoyTestSupport

/// `convoy serve` as its own process on a free port, until `stop`.
struct ServeProcess {
    let process: TestProcess
    /// The server's standard error, kept beside its keys file: a failing test shows its tail (`diagnosis`).
    let log: String

    /// Starts it and waits (bounded) for the keys file it writes once it listens.
    static func start(keys: String, _ arguments: String...) async throws -> ServeProcess {
        try await start(keys: keys, arguments: arguments)
    }

    static func start(keys: String, arguments: [String]) async throws -> ServeProcess {
        let server = TestProcess()
        server.executableURL = CLI.binary
        server.arguments = ["serve", "--port", "0", "--keys-file", keys] + arguments
        let log = keys + ".serve.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        defer { try? handle.close() }
        server.standardOutput = FileHandle.nullDevice
        server.standardError = handle
        try server.run()
        let deadline = ContinuousClock.now + .seconds(60)
        while (try? Data(contentsOf: URL(fileURLWithPath: keys)))?.isEmpty ?? true, ContinuousClock.now < deadline, server.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        return ServeProcess(process: server, log: log)
    }

    /// Whether the server is still up (or how it ended) and the last lines it logged.
    var diagnosis: String {
        let state = process.isRunning ? "convoy serve is running" : "convoy serve ended (\(process.terminationReason), status \(process.terminationStatus))"
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n", omittingEmptySubsequences: false)
        return "\(state); its log ends:\n" + lines.suffix(30).joined(separator: "\n")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// `convoy probe` as a user runs it against `convoy serve`.
@Suite struct ProbeCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theGreenBoxCatalogueFindsNoLeakInConvoyServe() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--purge-every", "0")
        defer { server.stop() }
        let out = dir.appendingPathComponent("out")
        let r = try CLI.run("probe", Self.root.appendingPathComponent("probes/greenbox.yaml").path, "--keys-file", keys, "--out", out.path)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("none leaked") && r.stdout.contains("finding post_to_non_friend"), "\(r.stdout)")
        let probes = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("probes.json"))) as? [String: Any])
        let list = try #require(probes["probes"] as? [[String: Any]])
        #expect(list.count >= 39 && list.allSatisfy { ($0["tried"] as? Int ?? 0) > 0 && $0["leaked"] as? Int == 0 })
        let junit = try String(contentsOf: out.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("failures=\"0\"") && !containsJWT(junit))
        // No token anywhere in what it printed or wrote.
        let written = try String(contentsOf: out.appendingPathComponent("probes.json"), encoding: .utf8)
        #expect(!containsJWT(r.stdout) && !containsJWT(written))
        #expect(containsJWT(try String(contentsOfFile: keys, encoding: .utf8)), "the check finds a real token")
    }

    /// A keys file named relative to where `convoy probe` runs is read from there (it crashed in Foundation, working
    /// out a scenario folder for a command that has none); one that is not there is a bad input, exit 2.
    @Test func aRelativeKeysFileIsReadFromTheWorkingDirectory() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let server = try await ServeProcess.start(keys: dir.appendingPathComponent("keys.json").path, "--purge-every", "0")
        defer { server.stop() }
        let catalogue = Self.root.appendingPathComponent("probes/supabase-auth.yaml").path
        func probe(_ keys: String) throws -> CLI.Result {
            try CLI.runTool("/bin/sh", ["-c", "cd \"$0\" && exec \"$1\" probe \"$2\" --keys-file \"$3\"", dir.path, CLI.binary.path, catalogue, keys])
        }
        let r = try probe("keys.json")
        #expect(r.status == 0 && r.stdout.contains("supabase-auth against http://127.0.0.1:"), "\(r.stdout)\n\(r.stderr.suffix(2000))")
        let missing = try probe("nowhere.json")
        #expect(missing.status == 2 && missing.stderr.contains("keys file nowhere.json: not found"), "\(missing.stderr.suffix(2000))")
    }

    /// Hosted Supabase Auth's limits, as `convoy serve` has them by default: the refresh series finds the
    /// limit exactly (the 151st refused), login errors answer alike; with `--rate-limits off` the brute-force
    /// probes leak and `convoy probe` exits 99.
    @Test func supabaseAuthLimitsAreFoundExactlyAndTheirAbsenceFails() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let catalogue = Self.root.appendingPathComponent("probes/supabase-auth.yaml").path
        let keys = dir.appendingPathComponent("keys.json").path
        let limited = try await ServeProcess.start(keys: keys, "--purge-every", "0")
        let out = dir.appendingPathComponent("out")
        let r = try CLI.run("probe", catalogue, "--keys-file", keys, "--out", out.path)
        limited.stop()
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(r.stdout.contains("160 attempts (150× 400, 10× 429)") && r.stdout.contains("first refused at attempt 151"), "\(r.stdout)")
        #expect(r.stdout.contains("a and b answered alike (HTTP 400)"), "\(r.stdout)")
        let junit = try String(contentsOf: out.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("<system-out>") && junit.contains("first refused at attempt 151"))

        let openKeys = dir.appendingPathComponent("open.json").path
        let open = try await ServeProcess.start(keys: openKeys, "--purge-every", "0", "--rate-limits", "off")
        defer { open.stop() }
        let leaky = try CLI.run("probe", catalogue, "--keys-file", openKeys)
        #expect(leaky.status == 99, "\(leaky.stdout)\n\(leaky.stderr)")
        #expect(leaky.stdout.contains("login_brute_force") && leaky.stdout.contains("none refused"), "\(leaky.stdout)")
        let rows = leaky.stdout.split(separator: "\n").filter { $0.contains(" brute_force ") }
        #expect(rows.count == 2 && rows.allSatisfy { $0.hasSuffix("LEAK") }, "\(rows)")
    }

    /// A project that pairs the PRD's way (no invite codes): the cast pairs so too, and the catalogue still runs.
    @Test func theCastPairsTheWayTheAppDoes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--purge-every", "0")
        defer { server.stop() }
        let catalogue = Self.root.appendingPathComponent("probes/greenbox.yaml").path
        let r = try CLI.run("probe", catalogue, "--keys-file", keys, "--mode", "pairing=prd")
        #expect(r.status == 0 && r.stdout.contains("none leaked"), "\(r.stdout)\n\(r.stderr)")
        let bad = try CLI.run("probe", catalogue, "--keys-file", keys, "--mode", "pairing=fax")
        #expect(bad.status == 2 && bad.stderr.contains("greenbox has no pairing \"fax\" (pairing: codes, prd)"), "\(bad.stderr)")
        let unknown = try CLI.run("probe", catalogue, "--keys-file", keys, "--mode", "colour=blue")
        #expect(unknown.status == 2 && unknown.stderr.contains("greenbox's modes are payload=convoy|prd, pairing=codes|prd"), "\(unknown.stderr)")
    }

    @Test func aBadCatalogueOrMissingTargetIsBadInput() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("bad.yaml").path
        try "catalogue: x\nprobes:\n  - id: a\n    categroy: tokens\n".write(toFile: file, atomically: true, encoding: .utf8)
        let r = try CLI.run("probe", file, "--target", "http://127.0.0.1:9", "--anon-key", "k")
        #expect(r.status == 2 && r.stderr.contains("bad.yaml:4:5:"), "\(r.stderr)")
        let noTarget = try CLI.run("probe", file)
        #expect(noTarget.status == 2)
    }
}
