import Foundation
import Testing

/// scenarios/retention.yaml's pass/fail pair: it passes where the backend purges
/// (the embedded one, 20 s retention purged every 2 s) and fails with exit 99 and
/// a kept-too-long finding against `convoy serve --purge-every 0`.
@Suite(.serialized) struct RetentionPairTests {
    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scenarios/retention.yaml").path

    static func summary(_ folder: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("summary.json"))) as? [String: Any])
    }

    @Test func passesWhereTheBackendPurges() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--out", out.path)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let retention = try #require(try Self.summary(out)["retention"] as? [String: Any])
        #expect(retention["violations"] as? Int == 0 && retention["deleted_early"] as? Int == 0)
        #expect((retention["checks"] as? Int ?? 0) > 10 && (retention["early_checked"] as? Int ?? 0) > 0, "it looked")
        // The oldest readable row never got past the limit, and rows did get old enough to be purged.
        let ages = (retention["timeline"] as? [[String: Any]] ?? []).compactMap { $0["oldest_age_s"] as? Double }
        let limit = try #require(retention["limit_s"] as? Double)
        #expect(!ages.isEmpty && ages.allSatisfy { $0 <= limit } && ages.contains { $0 > 18 }, "\(ages)")
        #expect(r.stdout.contains("## Retention") && r.stdout.contains("Held:"))
        // The harness's cost over the steady part (16 s to 28 s after the first arrival), labelled with its window.
        let resources = try #require(try Self.summary(out)["resources"] as? [String: Any])
        let steady = try #require(resources["steady"] as? [String: Any], "\(resources)")
        #expect((steady["from_s"] as? Double ?? 0) >= 16 && (steady["to_s"] as? Double ?? 99) <= 28 && (steady["received"] as? Int ?? 0) > 0, "\(steady)")
        #expect((steady["cpu_per_delivered_us"] as? Double ?? 0) > 0 && r.stdout.contains("steady part ("), "\(steady)")
    }

    @Test func failsWithAFindingWhenTheBackendNeverPurges() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--retention", "20s", "--purge-every", "0", "--rate-limits", "off")
        defer { server.stop() }

        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--keys-file", keys, "--out", out.path)
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)")
        let summary = try Self.summary(out)
        let retention = try #require(summary["retention"] as? [String: Any])
        #expect((retention["violations"] as? Int ?? 0) > 0)
        #expect((retention["max_overage_s"] as? Double ?? 0) > 5, "kept at least 5 s past the 20 s window")
        let findings = try #require(retention["findings"] as? [[String: Any]])
        #expect(!findings.isEmpty && findings.allSatisfy { $0["kind"] as? String == "kept_too_long" && ($0["age_s"] as? Double ?? 0) > 27 })
        // With the service key in the keys file, the full scan finds them too.
        #expect(findings.contains { $0["found_by"] as? String == "scan" } || (retention["scans"] as? Int ?? 0) > 0)
        let failed = (summary["thresholds"] as? [[String: Any]] ?? []).filter { $0["passed"] as? Bool == false }.compactMap { $0["threshold"] as? String }
        #expect(failed == ["retention_violations == 0"])
        #expect(r.stdout.contains("rows kept too long"), "\(r.stdout)")
    }

    /// The same scenario cut to 8 s: no row can have reached the 27 s limit, so nothing was tested. The summary
    /// says so, and `retention_violations == 0` fails as not measured (exit 99) instead of passing on a count of 0.
    @Test func aRunShorterThanTheLimitSaysNotTestableAndItsThresholdFails() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--duration", "8s", "--out", out.path)
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)")
        let summary = try Self.summary(out)
        let retention = try #require(summary["retention"] as? [String: Any])
        let oldest = try #require(retention["oldest_row_age_s"] as? Double)
        #expect(oldest > 0 && oldest < 27, "\(oldest)")
        let thresholds = summary["thresholds"] as? [[String: Any]] ?? []
        let violations = try #require(thresholds.first { $0["threshold"] as? String == "retention_violations == 0" })
        #expect(violations["passed"] as? Bool == false && (violations["value"] == nil || violations["value"] is NSNull), "\(violations)")
        #expect(thresholds.filter { $0["passed"] as? Bool == false }.count == 1, "\(thresholds)")
        #expect(r.stdout.contains("not testable in this run") && r.stdout.contains("needs ≥ 27 s"), "\(r.stdout)")
        let html = try String(contentsOf: out.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(html.contains("not testable in this run") && !html.contains(">held<"), "the report's card says so too")
    }
}
