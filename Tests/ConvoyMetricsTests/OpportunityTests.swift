import ConvoyMetrics
import Foundation
import Testing

/// No verdict without a test (issue 47, item 3): a threshold on a count of failures that the run gave no chance to
/// happen is "not tested in this run (why: …)" and fails, in the summary, report.html and the dashboard; with the
/// chance given, the same threshold is judged on its count.
@Suite struct OpportunityTests {
    static func summary(_ counters: [String: Int], sent: Int = 0, _ thresholds: [String]) throws -> RunSummary {
        let metrics = Metrics()
        for (name, n) in counters { metrics.count(CounterName.declared(name), by: n) }
        var a = Accounting()
        (a.sent, a.delivered) = (sent, sent)
        return RunSummary(scenario: "s", scenarioFile: "s.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                          target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 2, accounting: a, metrics: metrics.snapshot(),
                          thresholds: try thresholds.map { try Threshold($0) }, exitCode: { $0 ? 0 : 99 })
    }

    @Test(arguments: [
        // (threshold, counters without a chance, the reason's words, counters with one)
        ("decrypt_failures == 0", [:], "nothing was received", ["received": 12]),
        ("received_unmatched == 0", ["sent": 3], "nothing was received", ["received": 3]),
        ("token_refresh_failures == 0", ["http_requests": 40], "token refresh", ["token_refreshes": 2]),
        ("pairing_accepted_later_succeeded == 0", ["pairing_requests": 8], "decide-later", ["pairing_accepted_later": 1]),
        ("action_failures.ride_claim == 0", ["actions.ride_post": 5], "ride_claim never came due", ["actions.ride_claim": 4]),
        ("lost.retry_expired == 0", [:], "no location update was sent", ["sent": 10]),
        ("presence_unconverged == 0", ["sent": 10], "tracked its presence", ["presence_tracks": 6]),
        ("migration_failures == 0", ["sent": 10], "reinstalled", ["migration_reinstalls": 2]),
        ("mailbox_rejected == 0", ["mailbox_sent": 4], "received to verify", ["mailbox_received": 4]),
        ("direct_lost == 0", ["sent": 10], "no direct message", ["direct_sent": 3]),
    ] as [(String, [String: Int], String, [String: Int])])
    func aFailureCountWithNoChanceIsNotTestedAndFails(_ threshold: String, _ without: [String: Int], _ why: String, _ with: [String: Int]) throws {
        let untested = try Self.summary(without, [threshold])
        let t = try #require(untested.thresholds.first)
        #expect(t.value == nil && !t.passed && t.untested?.contains(why) == true, "\(t)")
        #expect(untested.exitCode == 99)
        #expect(untested.markdown().contains("not tested in this run (why: \(t.untested!))"))
        let html = HTMLReport.render(ReportInput(summary: untested, series: [], histograms: MetricsSnapshot()))
        #expect(html.contains("not tested in this run (why: "))
        let end = DashboardEnd(untested, report: "report.html", results: "/r")
        #expect(end.thresholds.first?.state == "not_tested" && end.thresholds.first?.why == t.untested)
        let json = String(decoding: try JSONEncoder().encode(untested), as: UTF8.self)
        #expect(json.contains("\"not_tested\""))

        // The control: given its chance, the same threshold is judged on its count of 0, and passes.
        let tested = try Self.summary(without.merging(with) { $1 }, [threshold])
        let judged = try #require(tested.thresholds.first)
        #expect(judged.value == 0 && judged.passed && judged.untested == nil, "\(judged)")
        #expect(DashboardEnd(tested, report: "report.html", results: "/r").thresholds.first?.state == "passed")
    }

    @Test func aFailureThatHappenedIsItsOwnChance() throws {
        // Every pairing refused: no request went through, yet 16 failed, and that is a tested failure, not "not tested".
        let refused = try Self.summary(["pairing_failures": 16], ["pairing_failures == 0"])
        let t = try #require(refused.thresholds.first)
        #expect(t.value == 16 && !t.passed && t.untested == nil)
        // The pairing section shows them, in the summary and the report, though no request went through.
        #expect(refused.markdown().contains("## Friends made during the run\n\n0 requests: 0 accepted, 0 left at decide later; 16 failed."),
                "\(refused.markdown())")
        let html = HTMLReport.render(ReportInput(summary: refused, series: [], histograms: MetricsSnapshot()))
        #expect(html.contains("requests made") && html.contains(">16<"))
        // The control: a run that tried no pairing has no section.
        let none = try Self.summary(["sent": 4], sent: 4, [])
        #expect(!none.markdown().contains("## Friends made during the run"))
        #expect(!HTMLReport.render(ReportInput(summary: none, series: [], histograms: MetricsSnapshot())).contains("requests made"))
    }

    @Test func aRunThatSentNothingDoesNotSayEveryUpdateIsAccountedFor() throws {
        let none = try Self.summary([:], ["delivery.loss < 5%"])
        #expect(none.markdown().contains("No update was sent: the accounting is not tested in this run."))
        #expect(!none.markdown().contains("Every update is accounted for"))
        #expect(none.thresholds.first?.untested == "its denominator, sent, counted nothing")
        #expect(!JUnitReport.render(none).contains("accounting closes (sent"))
        // The control: a run that sent says it closes.
        let sent = try Self.summary(["sent": 4], sent: 4, ["delivery.loss < 5%"])
        #expect(sent.markdown().contains("Every update is accounted for") && JUnitReport.render(sent).contains("accounting closes (sent"))
    }

    /// QuickPic's loss is defined once: the report's headline, the summary and `mailbox.loss` count the same messages
    /// (those the backend lost), and a message the run's end left unpolled is shown by its reason, not as a loss.
    @Test(arguments: [("not_polled_since", 0.0), ("not_fetched", 7.0 / 60)])
    func theMailboxHeadlineAndItsRatioAreOneLoss(_ reason: String, _ ratio: Double) throws {
        var s = try Self.summary(["mailbox_sent": 60, "mailbox_delivered": 53, "mailbox_lost": 7, "mailbox_lost.\(reason)": 7], ["mailbox.loss < 0.1%"])
        var m = MailboxReport()
        (m.sent, m.delivered, m.lost) = (60, 53, [reason: 7])
        s.mailbox = m
        let t = try #require(s.thresholds.first)
        #expect(t.value == ratio && t.passed == (ratio == 0), "\(t)")
        let percent = String(format: "%.2f", ratio * 100)
        let html = HTMLReport.render(ReportInput(summary: s, series: [], histograms: MetricsSnapshot()))
        #expect(html.contains("lost (mailbox.loss)") && html.contains("\(ratio == 0 ? 0 : 7) (\(percent) %)"), "\(html)")
        let text = s.markdown()
        #expect(text.contains("53 delivered, \(ratio == 0 ? 0 : 7) lost (\(percent) %, mailbox.loss)"), "\(text)")
        #expect(text.contains("not delivered: 7 not_polled_since") == (reason == "not_polled_since"))
    }
}
