import Foundation
import Testing

/// scenarios/quickpic-purge.yaml's pass/fail pair (issue 15's acceptance): it passes where the backend deletes
/// on ACK and purges what is never fetched (the embedded `convoy serve --app quickpic`, 20 s retention purged
/// every 2 s) and fails with exit 99 against a server that does not purge or does not delete on ACK. What the
/// server kept is then opened by a third party (PyNaCl) with the run's roster.
@Suite(.serialized) struct QuickPicPairTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let scenario = root.appendingPathComponent("scenarios/quickpic-purge.yaml").path
    static let python = root.appendingPathComponent("scripts/.venv/bin/python3").path

    static func summary(_ folder: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("summary.json"))) as? [String: Any])
    }

    static func failed(_ summary: [String: Any]) -> [String] {
        (summary["thresholds"] as? [[String: Any]] ?? []).filter { $0["passed"] as? Bool == false }.compactMap { $0["threshold"] as? String }
    }

    @Test func passesWhereTheServerDeletesOnAckAndPurges() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--out", out.path)
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let summary = try Self.summary(out)
        let mailbox = try #require(summary["mailbox"] as? [String: Any])
        let sent = mailbox["sent"] as? Int ?? 0, delivered = mailbox["delivered"] as? Int ?? 0
        let lost = (mailbox["lost"] as? [String: Int] ?? [:])
        #expect(sent > 100 && delivered > 0 && sent == delivered + lost.values.reduce(0, +), "the accounting closes: \(mailbox)")
        #expect(Set(lost.keys).isSubset(of: ["parked"]) && mailbox["after_ack"] as? Int == 0)
        let retention = try #require(summary["retention"] as? [String: Any])
        #expect(retention["violations"] as? Int == 0 && retention["deleted_early"] as? Int == 0 && (retention["checks"] as? Int ?? 0) > 10)
        #expect(r.stdout.contains("## Mailbox") && r.stdout.contains("ACK-then-delete held"))
        #expect(!r.stdout.contains("## Accounting"), "QuickPic shares no locations: no table of zeros")
    }

    @Test func failsWhenThePurgeIsOffAndAThirdPartyOpensWhatItKept() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path, database = dir.appendingPathComponent("quickpic.sqlite").path
        let server = try await ServeProcess.start(keys: keys, "--app", "quickpic", "--database", database, "--retention", "20s", "--purge-every", "0")
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--keys-file", keys, "--out", out.path, "--keep-roster")
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)\n\(server.diagnosis)")
        let summary = try Self.summary(out)
        let retention = try #require(summary["retention"] as? [String: Any])
        let findings = retention["findings"] as? [[String: Any]] ?? []
        #expect((retention["violations"] as? Int ?? 0) > 0 && findings.contains { $0["kind"] as? String == "kept_too_long" })
        #expect(!Self.failed(summary).contains("mailbox_after_ack == 0"), "ACKs still delete: \(Self.failed(summary))")
        #expect(r.stdout.contains("kept too long"))

        // A third party: the roster's secret keys verify and open every message left in the database.
        let roster = out.appendingPathComponent("roster.json").path
        #expect(try FileManager.default.attributesOfItem(atPath: roster)[.posixPermissions] as? Int == 0o600)
        #expect(FileManager.default.isExecutableFile(atPath: Self.python), "scripts/.venv is missing: run scripts/setup")
        let opened = try CLI.runTool(Self.python, [Self.root.appendingPathComponent("scripts/open_quickpic_db.py").path, roster, database])
        #expect(opened.status == 0, "\(opened.stdout)\n\(opened.stderr)")
        let counts = try JSONSerialization.jsonObject(with: Data(opened.stdout.utf8)) as? [String: Int] ?? [:]
        #expect((counts["messages"] ?? 0) > 50 && (counts["text"] ?? 0) > 0, "\(counts)")
    }

    @Test func failsWhenAnAckDeletesNothing() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let keys = dir.appendingPathComponent("keys.json").path
        let server = try await ServeProcess.start(keys: keys, "--app", "quickpic", "--retention", "20s", "--purge-every", "2s", "--keep-acked")
        defer { server.stop() }
        let out = dir.appendingPathComponent("results")
        let r = try await CLI.detached("run", Self.scenario, "--keys-file", keys, "--out", out.path)
        #expect(r.status == 99, "\(r.stdout)\n\(r.stderr)\n\(server.diagnosis)")
        let summary = try Self.summary(out)
        let mailbox = try #require(summary["mailbox"] as? [String: Any])
        #expect((mailbox["after_ack"] as? Int ?? 0) > 0, "\(mailbox)")
        #expect(Self.failed(summary).contains("mailbox_after_ack == 0"))
        #expect(r.stderr.contains("still served after their ACK"), "\(r.stderr)")
    }
}
