import Foundation
import Testing

/// A declared app's retention, judged by a run as a built-in app's is (RetentionPairTests): Beacon's shipped scenario
/// (its 20 s window, purged by `convoy serve` deleting `beacons` every 2 s) holds on the embedded backend, and the same
/// scenario against `convoy serve --app-file` that never purges fails with rows kept too long.
@Suite(.serialized) struct DeclaredRetentionPairTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let scenario = root.appendingPathComponent("scenarios/beacon.yaml").path
    static let app = root.appendingPathComponent("examples/apps/beacon.yaml").path
    /// Long enough for rows to pass the 27 s limit (20 s window, 3 s grace, the purge's 2 s, the check's 5 s), few phones.
    static let scaled = ["--devices", "10", "--duration", "36s"]

    static func retention(_ folder: URL) throws -> [String: Any] {
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("summary.json"))) as? [String: Any])
        return try #require(summary["retention"] as? [String: Any])
    }

    @Test func beaconsRetentionHoldsWhereTheServerDeletesAndFailsWhereItNeverDoes() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let held = dir.appendingPathComponent("held")
        let r = try await CLI.detached(["run", Self.scenario, "--out", held.path] + Self.scaled)
        #expect(r.status == 0, "\(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
        let ok = try Self.retention(held)
        #expect(ok["violations"] as? Int == 0 && ok["deleted_early"] as? Int == 0 && (ok["checks"] as? Int ?? 0) > 3, "\(ok)")
        // Rows did get old enough to be purged, and none readable past the limit.
        let ages = (ok["timeline"] as? [[String: Any]] ?? []).compactMap { $0["oldest_age_s"] as? Double }
        let limit = try #require(ok["limit_s"] as? Double)
        #expect(!ages.isEmpty && ages.allSatisfy { $0 <= limit } && ages.contains { $0 > 18 }, "\(ages)")
        // The fleet map, as for a built-in app: every phone where it last was, and what followers received of the tracked.
        let map = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: held.appendingPathComponent("map.json"))) as? [String: Any])
        let phones = map["phones"] as? [[String: Any]] ?? [], tracked = map["tracked"] as? [[String: Any]] ?? []
        #expect(phones.count == 10 && phones.allSatisfy { $0["lat"] is Double && $0["lon"] is Double }, "\(phones)")
        #expect(!tracked.isEmpty && tracked.contains { !($0["received"] as? [Any] ?? []).isEmpty }, "\(tracked.count) tracked")
        // The battery model, per group, as for a built-in app: every phone's hours, its radio and GPS spent.
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: held.appendingPathComponent("summary.json"))) as? [String: Any])
        let battery = (summary["battery"] as? [String: Any])?["groups"] as? [[String: Any]] ?? []
        #expect(Set(battery.compactMap { $0["name"] as? String }) == ["walkers", "cyclists"] && battery.reduce(0) { $0 + ($1["devices"] as? Int ?? 0) } == 10)
        #expect(battery.allSatisfy { ($0["radio_j"] as? Double ?? 0) > 0 && ($0["gps_j"] as? Double ?? 0) > 0 && ($0["percent_per_hour"] as? Double ?? 0) > 0 }, "\(battery)")
        let report = try String(contentsOf: held.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(report.contains("Fleet map") && report.contains("svg class=\"fleet-map"), "report.html draws the map")

        // The control: the same file served by convoy serve with its window at the scenario's 20 s and no purge.
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--app-file", Self.app, "--retention", "20s", "--purge-every", "0", "--rate-limits", "off")
        defer { server.stop() }
        let kept = dir.appendingPathComponent("kept")
        let bad = try await CLI.detached(["run", Self.scenario, "--keys-file", keys, "--out", kept.path] + Self.scaled)
        #expect(bad.status == 99, "\(bad.stdout.suffix(3000))\n\(bad.stderr.suffix(2000))")
        let never = try Self.retention(kept)
        let findings = never["findings"] as? [[String: Any]] ?? []
        #expect((never["violations"] as? Int ?? 0) > 0 && !findings.isEmpty && findings.allSatisfy { $0["kind"] as? String == "kept_too_long" }, "\(never)")
        #expect(bad.stdout.contains("rows kept too long"), "\(bad.stdout.suffix(3000))")
    }

    static let postgres = ProcessInfo.processInfo.environment["CONVOY_TEST_POSTGRES_URL"]
    static let requirePostgres = ProcessInfo.processInfo.environment["CONVOY_REQUIRE_POSTGRES"] == "1"

    /// A purge the file names as a function of the app's own SQL (`purge: {function: NAME}`), which `convoy serve` calls
    /// with the window on PostgreSQL: Beacon with `purge_beacons(interval)` holds its window; the control, the same
    /// server never calling it, keeps rows too long.
    @Test(.enabled(if: postgres != nil || requirePostgres, "CONVOY_TEST_POSTGRES_URL is not set: run the tests with make test"))
    func aPurgeFunctionOfTheAppsOwnSQLHoldsTheWindowOnPostgreSQL() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Beacon's folder and file, its purge a function of its own.
        let sql = dir.appendingPathComponent("sql")
        try FileManager.default.createDirectory(at: sql, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: Self.root.appendingPathComponent("examples/migrations/beacon/001_beacon.sql"),
                                         to: sql.appendingPathComponent("001_beacon.sql"))
        try Data("""
            CREATE OR REPLACE FUNCTION public.purge_beacons(keep interval) RETURNS integer
              LANGUAGE sql SECURITY DEFINER SET search_path = public AS $$
              WITH gone AS (DELETE FROM public.beacons WHERE sent_at < now() - keep RETURNING 1) SELECT count(*)::integer FROM gone
            $$;

            """.utf8).write(to: sql.appendingPathComponent("002_purge.sql"))
        let app = dir.appendingPathComponent("beacon.yaml").path
        try String(contentsOfFile: Self.app, encoding: .utf8)
            .replacingOccurrences(of: "  sql: ../migrations/beacon", with: "  sql: \(sql.path)")
            .replacingOccurrences(of: "  purge: {delete: beacons}", with: "  purge: {function: purge_beacons}")
            .write(toFile: app, atomically: true, encoding: .utf8)
        let scenario = dir.appendingPathComponent("beacon-run.yaml").path
        try String(contentsOfFile: Self.scenario, encoding: .utf8)
            .replacingOccurrences(of: "file: ../examples/apps/beacon.yaml", with: "file: \(app)")
            .write(toFile: scenario, atomically: true, encoding: .utf8)

        for (purgeEvery, status) in [("2s", Int32(0)), ("0", Int32(99))] {
            let url = try GreenBoxPRDScenarioTests.freshDatabase("convoy_purgefn_")
            let keys = dir.appendingPathComponent("keys-\(purgeEvery).json").path
            let server = try await ServeProcess.start(keys: keys, "--app-file", app, "--database", url, "--retention", "20s",
                                                      "--purge-every", purgeEvery, "--rate-limits", "off")
            defer { server.stop() }
            let out = dir.appendingPathComponent("results-\(purgeEvery)")
            let r = try await CLI.detached(["run", scenario, "--keys-file", keys, "--out", out.path] + Self.scaled)
            #expect(r.status == status, "purge every \(purgeEvery): \(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
            let retention = try Self.retention(out)
            if status == 0 {
                let ages = (retention["timeline"] as? [[String: Any]] ?? []).compactMap { $0["oldest_age_s"] as? Double }
                #expect(retention["violations"] as? Int == 0 && retention["deleted_early"] as? Int == 0 && ages.contains { $0 > 18 }, "\(retention)")
            } else {
                #expect((retention["violations"] as? Int ?? 0) > 0, "\(retention)")
            }
        }
    }
}
