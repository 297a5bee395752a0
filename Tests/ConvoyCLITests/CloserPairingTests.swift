import Foundation
import Testing

/// scenarios/closer-pairing.yaml, shortened, as a user runs it: couples pair over Closer's callables on the
/// embedded backend while a hostile phone brute-forces codes beside them. Nothing leaks, no pairing fails, the
/// accept limit refuses the attacker's guesses, and the expected time to guess a live code is in every result.
@Suite struct CloserPairingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func couplesPairWhileTheBruteForceIsRefused() async throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let r = try await CLI.detached("run", Self.root.appendingPathComponent("scenarios/closer-pairing.yaml").path,
                                       "--devices", "40", "--duration", "50s", "--out", dir.path)
        // 50 s ends before any decide-later acceptance comes due (1m30s into the steady part), and before any couple
        // reaches its 30-day mark (a minute of 2-second days), so those thresholds are not tested and the run cannot
        // pass; every other threshold is judged and holds.
        #expect(r.status == 99, "\(r.stdout.suffix(3000))\n\(r.stderr.suffix(2000))")
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("summary.json"))) as? [String: Any])
        let thresholds = try #require(summary["thresholds"] as? [[String: Any]])
        let untested = thresholds.filter { $0["not_tested"] != nil }
        let why = Dictionary(untested.map { ($0["threshold"] as? String ?? "", $0["not_tested"] as? String ?? "") }) { a, _ in a }
        #expect(Set(why.keys) == ["pairing_accepted_later_succeeded == 0", "outcome_reminders_missed == 0", "outcome_reminder.p99 < 70s"]
                && why["pairing_accepted_later_succeeded == 0"]?.contains("decide-later acceptance") == true
                && why["outcome_reminders_missed == 0"]?.contains("30-day mark") == true, "\(thresholds)")
        #expect(r.stdout.contains("Outcome reminders (the backend's scan, delivered by FCM): not tested in this run (why: no couple reached its 30-day mark"),
                "\(r.stdout.suffix(3000))")
        #expect(thresholds.count > 1 && thresholds.allSatisfy { $0["not_tested"] != nil || $0["passed"] as? Bool == true }, "\(thresholds)")
        #expect(r.stdout.contains("not tested in this run (why: no decide-later acceptance came due"), "\(r.stdout.suffix(3000))")
        let counters = try #require(summary["counters"] as? [String: Int])
        #expect((counters["pairing_accepted"] ?? 0) >= 12 && counters["pairing_failures"] == nil, "\(counters)")
        let probes = try #require(summary["probes"] as? [String: Any])
        let list = try #require(probes["probes"] as? [[String: Any]])
        #expect(list.allSatisfy { $0["leaked"] as? Int == 0 })
        let brute = try #require(list.first { $0["id"] as? String == "accept_brute_force_one_account" })
        let measured = (brute["measurements"] as? [String] ?? []).joined(separator: "\n")
        #expect(measured.contains("first refused at attempt") && measured.contains("limit: ") && measured.contains("one attacker: expected"),
                "\(measured)")
        let text = try String(contentsOf: dir.appendingPathComponent("summary.md"), encoding: .utf8)
        #expect(text.contains("`accept_brute_force_one_account` (Rate limiting on accept)") && text.contains("62^6 = 56,800,235,584"))
        // Only the sections Closer has: no location accounting, no retention; its mailbox is the daily question's answers.
        #expect(!text.contains("## Accounting") && !text.contains("## Retention"), "\(text.prefix(1500))")
        #expect(summary["shares_locations"] as? Bool == false)
        // Answers: each one revealed to the partner or still awaiting the partner's own; none refused or lost to the
        // backend (an answer released after its partner's last look, as the run ends, is `not_polled_since`).
        let mailbox = try #require(summary["mailbox"] as? [String: Any])
        let (sent, delivered, held) = (mailbox["sent"] as? Int ?? 0, mailbox["delivered"] as? Int ?? 0, mailbox["held"] as? Int ?? 0)
        let lost = mailbox["lost"] as? [String: Int] ?? [:]
        // How many are revealed by the end is the machine's: a partner's answer waits for its Argon2id (CI, loaded: 8 of 22).
        #expect(sent >= 10 && delivered >= 2 && sent == delivered + held + lost.values.reduce(0, +)
                && Set(lost.keys).isSubset(of: ["not_polled_since"]) && lost.values.reduce(0, +) <= 2
                && mailbox["acknowledge_deletes"] as? Bool == false, "\(mailbox)")
        #expect(text.contains("Mutual reveal: \(delivered) of \(sent) answers revealed") && !text.contains("ACK-then-delete"))
        // Each phone held its listeners' connection, and what changed came down it.
        let listeners = try #require(mailbox["listeners"] as? [String: Int], "\(mailbox)")
        #expect((listeners["opened"] ?? 0) >= 30 && listeners["failed"] == 0 && (listeners["pushes"] ?? 0) > 3 * (listeners["opened"] ?? 0),
                "\(listeners)")
        #expect(text.contains("Listeners: \(listeners["opened"] ?? -1) held connections opened"), "\(text.prefix(3000))")
        let html = try String(contentsOf: dir.appendingPathComponent("report.html"), encoding: .utf8)
        #expect(!html.contains("updates sent") && !html.contains(">Delivery<"), "no zero location cards")
        let junit = try String(contentsOf: dir.appendingPathComponent("junit.xml"), encoding: .utf8)
        #expect(junit.contains("brute_force (2 probes") && junit.contains("<system-out>"))
    }
}
