import Foundation
import Testing

/// scenarios/greenbox-prd.yaml (the PRD's payload, the PRD's pairing on the phones
/// during the run) passes on the embedded backend and against a separate
/// `convoy serve` (SQLite and PostgreSQL), shortened with --devices and --duration.
/// The tests run a copy whose e2e bound is 5 s, not 500 ms: on a 2-core CI machine
/// running every suite at once, latency measures the machine; every other
/// threshold (delivery, decryption, matching, pairing) is the shipped one.
@Suite(.serialized) struct GreenBoxPRDScenarioTests {
    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scenarios/greenbox-prd.yaml").path

    /// The shipped scenario with its e2e latency bound loosened (see above), in `dir`.
    static func copy(in dir: URL) throws -> String {
        let text = try String(contentsOfFile: scenario, encoding: .utf8)
        #expect(text.contains("e2e_latency.p99 < 500ms"))
        let file = dir.appendingPathComponent("greenbox-prd.yaml")
        try text.replacingOccurrences(of: "e2e_latency.p99 < 500ms", with: "e2e_latency.p99 < 5s").write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    static func check(_ out: URL, _ r: CLI.Result) throws {
        let failed = r.stdout.split(separator: "\n").filter { $0.contains("**FAIL**") }
        #expect(r.status == 0, "\(failed)\n\(r.stderr.suffix(2000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let counters = try #require(summary["counters"] as? [String: Int])
        #expect((counters["pairing_requests"] ?? 0) > 10 && (counters["pairing_accepted"] ?? 0) > 0 && counters["pairing_failures"] == nil,
                "\(counters.filter { $0.key.hasPrefix("pairing") })")
        #expect((counters["pairing_decided_later"] ?? 0) > 0 && (counters["pairing_accepted_later"] ?? 0) > 0,
                "some left at decide later, and some of those accepted mid-run")
        #expect((counters["delivered"] ?? 0) > 0 && counters["received_unmatched"] == nil)
        let histograms = try #require(summary["latency_ms"] as? [String: Any])
        #expect(histograms["pairing_accept"] != nil && histograms["pairing_first_update"] != nil && histograms["pairing_accept_later"] != nil,
                "\(histograms.keys.sorted())")
    }

    @Test func passesOnTheEmbeddedBackend() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }

    static let postgres = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let requirePostgres = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"

    /// The PRD's pairing against `convoy serve` on PostgreSQL: the friendship changes reach the phones
    /// through the database's own Realtime feed (LISTEN/NOTIFY), RLS decides who hears of each.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func passesAgainstConvoyServeOnPostgreSQL() async throws {
        let base = try #require(Self.postgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test")
        let name = "convoy_prd_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let created = try CLI.runTool("/usr/bin/psql", [base, "-q", "-c", "CREATE DATABASE \(name)"])
        #expect(created.status == 0, "\(created.stderr)")
        var components = try #require(URLComponents(string: base))
        components.path = "/\(name)"
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--database", try #require(components.string))
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--keys-file", keys, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }

    /// Issue 12's acceptance, literally: a database whose Green Box tables come from `convoy schema greenbox
    /// --pairing prd` (applied with psql, as a user applies it to a Supabase project), served by `convoy serve
    /// --app-schema database`, which applies its platform only; the PRD scenario passes against it.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func passesAgainstADatabaseLoadedFromConvoySchema() async throws {
        let base = try #require(Self.postgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test")
        let name = "convoy_schema_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        #expect(try CLI.runTool("/usr/bin/psql", [base, "-q", "-c", "CREATE DATABASE \(name)"]).status == 0)
        var components = try #require(URLComponents(string: base))
        components.path = "/\(name)"
        let url = try #require(components.string)
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func tables() throws -> String {
            try CLI.runTool("/usr/bin/psql", [url, "-At", "-c",
                "SELECT coalesce(to_regclass('public.friendships')::text, '-') || ' ' || coalesce(to_regclass('public.invites')::text, '-')"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // convoy serve lays its platform (auth, Realtime's plumbing, the publication) and applies none of Green Box's SQL.
        let first = try await ServeProcess.start(keys: dir.appendingPathComponent("first.json").path, "--database", url, "--app-schema", "database")
        first.stop()
        #expect(try tables() == "- -", "no app tables yet")
        // The user's migration, as for a Supabase project.
        let sql = dir.appendingPathComponent("greenbox.sql").path
        let printed = try CLI.run("schema", "greenbox", "--pairing", "prd", "--out", sql)
        #expect(printed.status == 0, "\(printed.stderr)")
        let applied = try CLI.runTool("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f", sql])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(try tables() == "friendships -", "the PRD's schema: no invite codes")
        // Served as the database has it.
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--database", url, "--app-schema", "database")
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--keys-file", keys, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
        #expect(try tables() == "friendships -")
    }

    @Test func passesAgainstASeparateConvoyServe() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys)
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--keys-file", keys, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }
}

/// `convoy schema` as a user runs it.
@Suite struct SchemaCommandTests {
    @Test func printsTheMigrationAndRefusesWhatTheAppDoesNotHave() throws {
        let prd = try CLI.run("schema", "greenbox")
        #expect(prd.status == 0 && prd.stdout.contains("CREATE TABLE IF NOT EXISTS public.friendships") && !prd.stdout.contains("create_invite"))
        #expect(prd.stdout.contains("ALTER PUBLICATION supabase_realtime") && prd.stdout.contains("cron.schedule('purge-old-locations'"))
        let codes = try CLI.run("schema", "greenbox", "--pairing", "codes", "--purge", "none")
        #expect(codes.status == 0 && codes.stdout.contains("create_invite") && !codes.stdout.contains("cron.schedule"))
        let bad = try CLI.run("schema", "greenbox", "--pairing", "carrier-pigeon")
        #expect(bad.status == 2 && bad.stderr.contains("greenbox has no --pairing carrier-pigeon (--pairing: prd, codes)"), "\(bad.stderr)")
        let quickpic = try CLI.run("schema", "quickpic")
        #expect(quickpic.status == 2 && quickpic.stderr.contains("quickpic is not a Supabase app"), "\(quickpic.stderr)")
        let closer = try CLI.run("schema", "closer")
        #expect(closer.status == 2 && closer.stderr.contains("closer is not a Supabase app"), "\(closer.stderr)")
        let unknown = try CLI.run("schema", "nonesuch")
        #expect(unknown.status == 2 && unknown.stderr.contains("no app \"nonesuch\" (apps: greenbox, survale)"), "\(unknown.stderr)")
        let flag = try CLI.run("schema", "greenbox", "--colour", "blue")
        #expect(flag.status == 2 && flag.stderr.contains("--colour"), "\(flag.status) \(flag.stderr)")
    }
}
