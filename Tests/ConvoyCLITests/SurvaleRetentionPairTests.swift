import Foundation
import Testing

/// scenarios/survale-retention.yaml's pass/fail pair: everything of an operation goes 10 s after it ends. It
/// passes where the backend purges (the embedded one, every 2 s) and fails with exit 99 and kept-too-long
/// findings against `convoy serve --app survale --purge-every 0`.
@Suite(.serialized) struct SurvaleRetentionPairTests {
    static let scenario = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scenarios/survale-retention.yaml").path

    @Test func passesWhereTheBackendPurges() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--out", out.path)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let summary = try RetentionPairTests.summary(out)
        let retention = try #require(summary["retention"] as? [String: Any])
        #expect(retention["after_group_end"] as? Bool == true)
        #expect(retention["violations"] as? Int == 0 && retention["deleted_early"] as? Int == 0)
        #expect((retention["early_checked"] as? Int ?? 0) > 0 && (retention["scans"] as? Int ?? 0) > 0, "it looked")
        // Something of the abandoned operations was readable after their end, and never past the limit.
        let ages = (retention["timeline"] as? [[String: Any]] ?? []).compactMap { $0["oldest_age_s"] as? Double }
        let limit = try #require(retention["limit_s"] as? Double)
        #expect(!ages.isEmpty && ages.allSatisfy { $0 <= limit } && ages.contains { $0 > 5 }, "\(ages)")
        // The groups report still knows how the purged operations ended.
        let groups = try #require(summary["groups"] as? [String: Any])
        #expect(groups["auto_ended"] as? Int == 3, "\(groups)")
        #expect(r.stdout.contains("nothing of a group readable past"))
    }

    @Test func failsWithFindingsWhenTheBackendNeverPurges() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--app", "survale", "--retention", "10s", "--purge-every", "0", "--auto-end", "4s", "--rate-limits", "off")
        defer { server.stop() }

        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--keys-file", keys, "--out", out.path)
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)")
        let summary = try RetentionPairTests.summary(out)
        let retention = try #require(summary["retention"] as? [String: Any])
        let findings = try #require(retention["findings"] as? [[String: Any]])
        // The chat, the archive and the photos of each abandoned operation, found by a member or by the scan.
        let items = Set(findings.compactMap { $0["item"] as? String })
        #expect(["messages", "archive", "media"].allSatisfy { kind in items.contains { $0.hasSuffix(": \(kind)") } }, "\(items)")
        #expect(findings.allSatisfy { $0["kind"] as? String == "kept_too_long" && ($0["age_s"] as? Double ?? 0) > 15 })
        let failed = (summary["thresholds"] as? [[String: Any]] ?? []).filter { $0["passed"] as? Bool == false }.compactMap { $0["threshold"] as? String }
        #expect(failed == ["retention_violations == 0"])
        #expect(r.stdout.contains("kept too long"), "\(r.stdout)")
    }
}
