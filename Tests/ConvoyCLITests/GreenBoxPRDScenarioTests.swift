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

    /// PRD §4.1 with the PRD's pairing: a quarter of the phones reinstall; each takes its active friendships back to new
    /// pending requests, every friend hears its request over Realtime and accepts it again, reads the new key, and
    /// the reinstalled phone's updates open again (`migration_restore`). Refused (exit 2) before it was modelled.
    @Test func aReinstallIsAskedAgainAndEachFriendAcceptsIt() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var text = try String(contentsOfFile: Self.scenario, encoding: .utf8)
        // What a reinstall loses meanwhile (updates sealed to the old key) is the migration's to time, not a delivery
        // failure: the thresholds are the shipped migration scenario's.
        let cut = try #require(text.range(of: "\nthresholds:"))
        text = String(text[..<cut.lowerBound])
        text += "\nmigration:\n  share: 25%\n  at: 10s\n  reaccept: 2s..4s\n\nthresholds:\n  - migration_failures == 0\n  - migration_restore.p99 < 60s\n"
        let file = dir.appendingPathComponent("prd-migration.yaml")
        try text.write(to: file, atomically: true, encoding: .utf8)
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", file.path, "--devices", "20", "--duration", "40s", "--out", out.path)
        #expect(r.status == 0, "\(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let counters = try #require(summary["counters"] as? [String: Int])
        #expect((counters["migration_reinstalls"] ?? 0) > 0 && (counters["migration_reaccepted"] ?? 0) > 0 && counters["migration_failures"] == nil,
                "\(counters.filter { $0.key.hasPrefix("migration") })")
        let histograms = try #require(summary["latency_ms"] as? [String: Any])
        #expect(histograms["migration_restore"] != nil, "\(histograms.keys.sorted())")
    }

    static let postgres = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let requirePostgres = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"

    /// The PRD's pairing against `convoy serve` on PostgreSQL: the friendship changes reach the phones
    /// through the database's own Realtime feed (LISTEN/NOTIFY), RLS decides who hears of each.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func passesAgainstConvoyServeOnPostgreSQL() async throws {
        let url = try Self.freshDatabase("convoy_prd_")
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--database", url)
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
        let url = try Self.freshDatabase("convoy_schema_")
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

    /// A new, empty database on the test cluster, as a URL.
    static func freshDatabase(_ prefix: String) throws -> String {
        let base = try #require(Self.postgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test")
        let name = prefix + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let created = try CLI.runTool("/usr/bin/psql", [base, "-q", "-c", "CREATE DATABASE \(name)"])
        #expect(created.status == 0, "\(created.stderr)")
        var components = try #require(URLComponents(string: base))
        components.path = "/\(name)"
        return try #require(components.string)
    }

    /// `convoy serve --app-schema database` lays its platform, psql applies the PRD's own schema
    /// (examples/greenbox-prd-verbatim.sql: the PRD's three tables, their columns and nothing more, §3.2's policies
    /// and the ones its flows imply) and `extra`, and the server serves the tables as the database has them.
    static func servePRDDatabase(in dir: URL, extra: String? = nil, serve: [String] = []) async throws -> (ServeProcess, keys: String, url: String) {
        let url = try freshDatabase("convoy_verbatim_")
        let sql = URL(fileURLWithPath: Self.scenario).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("examples/greenbox-prd-verbatim.sql").path
        let first = try await ServeProcess.start(keys: dir.appendingPathComponent("first.json").path, "--database", url, "--app-schema", "database")
        first.stop()
        let applied = try CLI.runTool("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-f", sql])
        #expect(applied.status == 0, "\(applied.stderr)")
        if let extra { #expect(try CLI.runTool("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-c", extra]).status == 0) }
        let keys = dir.appendingPathComponent("keys.json").path
        return (try await ServeProcess.start(keys: keys, arguments: ["--database", url, "--app-schema", "database"] + serve), keys, url)
    }

    /// The shipped PRD scenario with hostile phones (issue 47, items 9 and 10): each waits for its cast to pair on the
    /// phones, then runs probes/greenbox.yaml in the load. The built-in backend's rules deny every probe (the control);
    /// a database built to the PRD's own policies lets the hostile phones in the load test insert an active friendship
    /// with anyone, which fails the run.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func hostilePhonesFindThePRDsHolesInTheLoadTest() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let scenario = try Self.copy(in: dir)
        let catalogue = URL(fileURLWithPath: Self.scenario).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("probes/greenbox.yaml").path
        let text = try String(contentsOfFile: scenario, encoding: .utf8) + "\nhostile:\n  share: 10%\n  catalogue: \(catalogue)\n  at: 2s\n"
        try text.write(toFile: scenario, atomically: true, encoding: .utf8)
        func probes(_ out: URL) throws -> (tried: Int, leaked: Set<String>, notes: [String]) {
            let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
            let list = try #require((summary["probes"] as? [String: Any])?["probes"] as? [[String: Any]])
            return (list.reduce(0) { $0 + ($1["tried"] as? Int ?? 0) }, Set(list.filter { ($0["leaked"] as? Int ?? 0) > 0 }.compactMap { $0["id"] as? String }),
                    list.flatMap { $0["notes"] as? [String] ?? [] })
        }
        let embedded = dir.appendingPathComponent("embedded")
        let control = try await CLI.detached("run", scenario, "--devices", "20", "--duration", "30s", "--out", embedded.path)
        try Self.check(embedded, control)
        let held = try probes(embedded)
        #expect(held.tried > 30 && held.leaked.isEmpty && !held.notes.contains { $0.contains("had not paired") }, "\(held)")

        let (server, keys, _) = try await Self.servePRDDatabase(in: dir)
        defer { server.stop() }
        let out = dir.appendingPathComponent("prd")
        let r = try await CLI.detached("run", scenario, "--keys-file", keys, "--devices", "20", "--duration", "30s", "--out", out.path)
        #expect(r.status == 99, "\(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
        let found = try probes(out)
        #expect(found.leaked.contains("insert_active_friendship"), "\(found.leaked.sorted())")
    }

    /// On the PRD's own schema there is no purge function of Convoy's: the server runs what PRD §3.3's Edge Function
    /// runs (`DELETE FROM encrypted_locations WHERE created_at < NOW() - INTERVAL …`), so a row past the window goes and
    /// a young one stays, and the log names no missing function (issue 47, item 11).
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func thePurgeRunsOnThePRDsOwnSchema() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (server, _, url) = try await Self.servePRDDatabase(in: dir, serve: ["--retention", "10m", "--purge-every", "1s"])
        defer { server.stop() }
        // Rows of nobody's (the foreign keys are triggers, off for this session): one an hour old, one new.
        let rows = "SET session_replication_role = replica; INSERT INTO public.encrypted_locations (sender_id, recipient_id, payload, created_at) "
            + "VALUES (gen_random_uuid(), gen_random_uuid(), 'old', now() - interval '1 hour'), (gen_random_uuid(), gen_random_uuid(), 'young', now())"
        #expect(try CLI.runTool("/usr/bin/psql", [url, "-q", "-v", "ON_ERROR_STOP=1", "-c", rows]).status == 0)
        func left() throws -> String {
            try CLI.runTool("/usr/bin/psql", [url, "-At", "-c", "SELECT string_agg(payload, ',' ORDER BY payload) FROM public.encrypted_locations"])
                .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        // Waits (bounded) for a purge round: the server purges every second.
        let deadline = ContinuousClock.now + .seconds(30)
        while try left() != "young", ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(200)) }
        #expect(try left() == "young", "\(server.diagnosis)")
        let log = (try? String(contentsOfFile: server.log, encoding: .utf8)) ?? ""
        #expect(!log.contains("does not exist"), "\(server.diagnosis)")
    }

    /// The PRD scenario against the PRD's own schema passes: no column the PRD lacks is written (a preference
    /// column made every pairing request a 400), and the users row carries the `created_at` §3.1 requires.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func passesAgainstThePRDsOwnSchema() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (server, keys, url) = try await Self.servePRDDatabase(in: dir)
        defer { server.stop() }
        let columns = try CLI.runTool("/usr/bin/psql", [url, "-At", "-c",
            "SELECT table_name || '.' || string_agg(column_name, ',' ORDER BY ordinal_position) FROM information_schema.columns "
            + "WHERE table_schema = 'public' GROUP BY table_name ORDER BY table_name"]).stdout
        #expect(columns.split(separator: "\n").map(String.init) == [
            "encrypted_locations.id,sender_id,recipient_id,payload,created_at",
            "friendships.id,user_id_1,user_id_2,status,requested_by",
            "users.id,created_at,full_name,avatar_url,public_key",
        ], "only the PRD's tables and columns")
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--keys-file", keys, "--devices", "20", "--duration", "25s", "--out", out.path)
        try Self.check(out, r)
    }

    /// A schema that refuses what the phones do says why: the first refused request and the server's answer in
    /// run.log, in summary.json's `failures` and in the printed summary (here, no policy lets a user request a friendship).
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func aRefusedPairingSaysWhichRequestAndWhatTheServerAnswered() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (server, keys, _) = try await Self.servePRDDatabase(in: dir, extra: #"DROP POLICY "friendships I request" ON public.friendships"#)
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", try Self.copy(in: dir), "--keys-file", keys, "--devices", "10", "--duration", "10s", "--out", out.path)
        #expect(r.status == 99, "pairing_failures == 0 fails: \(r.stderr.suffix(1000))")
        #expect(r.stdout.contains("## Why requests failed") && r.stdout.contains("`POST /rest/v1/friendships`"), "\(r.stdout.suffix(3000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: out.appendingPathComponent("summary.json"))) as? [String: Any])
        let failures = try #require(summary["failures"] as? [[String: Any]])
        let pairing = try #require(failures.first { $0["operation"] as? String == "pairing_request" }, "\(failures)")
        #expect(pairing["reason"] as? String == "http_403" && (pairing["count"] as? Int ?? 0) > 0, "\(pairing)")
        #expect(pairing["request"] as? String == "POST /rest/v1/friendships")
        #expect((pairing["answer"] as? String ?? "").contains("row-level security"), "\(pairing)")
        let log = try String(contentsOf: out.appendingPathComponent("run.log"), encoding: .utf8)
        #expect(log.contains("pairing_request failed") && log.contains("POST /rest/v1/friendships → HTTP 403 42501"), "\(log.suffix(2000))")
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
