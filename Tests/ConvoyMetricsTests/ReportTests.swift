@testable import ConvoyMetrics
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing

/// report.html, junit.xml, `ReportInput` and the Prometheus exporter, on made-up runs.
@Suite struct ReportTests {
    /// A run that failed one threshold, leaked in one probe category and kept rows too long.
    static func failedRun(name: String = "nightly <city>") throws -> ReportInput {
        let metrics = Metrics()
        for ms in [5, 7, 9, 30, 700] { metrics.record(.e2eLatency, microseconds: UInt64(ms * 1000)) }
        metrics.count(.sent, by: 10)
        let snapshot = metrics.snapshot()
        var accounting = Accounting()
        accounting.sent = 10
        accounting.delivered = 9
        accounting.lost = ["not_received": 1]
        var s = RunSummary(scenario: name, scenarioFile: "s.yaml", seed: 1, complete: true, startedAt: Date(timeIntervalSince1970: 1_800_000_000),
                           endedAt: Date(timeIntervalSince1970: 1_800_000_060), durationSeconds: 60, target: .init(kind: "embedded", url: "http://127.0.0.1:1"),
                           devices: 4, accounting: accounting, metrics: snapshot,
                           thresholds: [try Threshold("e2e_latency.p99 < 500ms"), try Threshold("delivery.loss < 20%")],
                           exitCode: { $0 ? 0 : 99 })
        var retention = RetentionReport(windowSeconds: 20, purgeEverySeconds: 2, graceSeconds: 3)
        retention.checks = 5
        retention.violations = 2
        retention.maxOverageSeconds = 9
        retention.findings = [.init(kind: "kept_too_long", rowID: 42, createdAt: "2027-01-15T08:00:00Z", ageSeconds: 29, overageSeconds: 9, foundBy: "scan")]
        retention.timeline = [.init(t: 2, oldestAgeSeconds: 10), .init(t: 4, oldestAgeSeconds: 29)]
        s.retention = retention
        s.probes = ProbeSummary(catalogue: "probes/greenbox.yaml", hostileDevices: 1, probes: [
            .init(id: "read-others-rest", category: "read_others", description: "read someone else's rows", tried: 3, denied: 2, leaked: 1,
                  findings: 0, errors: 0, evidence: [.init(kind: "leak", request: "GET /rest/v1/encrypted_locations?recipient_id=eq.v (Bearer <attacker token>)",
                                                           status: 200, response: "[{\"id\":7}]", note: "the victim's row came back")]),
            .init(id: "alg-none", category: "tokens", description: "an alg:none token", tried: 3, denied: 3, leaked: 0, findings: 0, errors: 0, evidence: []),
        ])
        s.battery = BatteryReport(capacityMah: 3000, volts: 3.85, groups: [
            .init(name: "walkers", network: "lte", devices: 2, deviceHours: 2, radioJoules: 2_000, gpsJoules: 1_000, cpuJoules: 100,
                  radioTailJoules: 1_500, capacityMah: 3000, volts: 3.85),
        ])
        let series: [[String: String]] = (0..<5).map { t in ["t_s": "\(t)", "e2e_p50_ms": "5", "e2e_p99_ms": t == 2 ? "" : "9", "sent_per_s": "2", "http_errors": t == 3 ? "1" : "0"] }
        return ReportInput(summary: s, series: series, histograms: snapshot)
    }

    @Test func junitHasACaseForEachThresholdProbeCategoryAndCorrectnessRule() throws {
        let input = try Self.failedRun()
        let xml = JUnitReport.render(input.summary)
        let doc = try XMLDocument(xmlString: xml)
        let root = try #require(doc.rootElement())
        let cases = try root.nodes(forXPath: "//testcase").compactMap { $0 as? XMLElement }
        let names = cases.compactMap { $0.attribute(forName: "name")?.stringValue }
        // 2 thresholds; accounting + 2 retention rules; 2 probe categories.
        #expect(cases.count == 7, "\(names)")
        #expect(names.contains("e2e_latency.p99 < 500ms"), "the < is escaped and comes back")
        let failed = cases.filter { !$0.elements(forName: "failure").isEmpty }.compactMap { $0.attribute(forName: "name")?.stringValue }
        #expect(failed.count == 3 && failed.contains("e2e_latency.p99 < 500ms") && failed.contains { $0.hasPrefix("read_others") }
                && failed.contains { $0.hasPrefix("retention: nothing kept") }, "\(failed)")
        #expect(root.attribute(forName: "failures")?.stringValue == "3" && root.attribute(forName: "tests")?.stringValue == "7")
        let leak = try #require(cases.first { $0.attribute(forName: "name")?.stringValue?.hasPrefix("read_others") == true }?.elements(forName: "failure").first)
        #expect(leak.stringValue?.contains("GET /rest/v1/encrypted_locations?recipient_id=eq.v") == true, "the leak's request is the evidence")
    }

    @Test func theHTMLReportIsSelfContainedEscapedAndSaysWhyItFailed() throws {
        let html = HTMLReport.render(try Self.failedRun(name: "nightly <script>alert(1)</script>"))
        #expect(html.hasPrefix("<!doctype html>") && html.contains("FAILED"))
        #expect(!html.contains("<script") && html.contains("&lt;script&gt;"), "the name is escaped")
        // Nothing is fetched: no scripts, links, images, imports or remote URLs besides the SVG namespace and the target's own URL.
        for fetch in ["src=", "href=", "@import", "url(", "<link", "<img"] { #expect(!html.contains(fetch), "\(fetch)") }
        let urls = html.components(separatedBy: "http://").dropFirst().map { "http://" + $0.prefix(30) }
        #expect(urls.allSatisfy { $0.hasPrefix("http://www.w3.org/2000/svg") || $0.hasPrefix("http://127.0.0.1:1") }, "\(urls)")
        // Why it failed, at the top: the threshold, the leak, the retention finding.
        let why = try #require(html.range(of: "Why it failed")).upperBound
        let top = html[why...].prefix(1200)
        #expect(top.contains("e2e_latency.p99 &lt; 500ms") && top.contains("read-others-rest") && top.contains("2 rows kept too long"), "\(top)")
        // A chart per section, the leak's evidence open, the battery table.
        #expect(html.components(separatedBy: "<svg").count - 1 >= 5)
        #expect(html.contains("<details open><summary>leak: <code>read-others-rest</code>"))
        #expect(html.contains("walkers") && html.contains("% of 3000 mAh per hour"))
    }

    @Test func aLeakOrARetentionFindingFailsARunWhoseThresholdsHeld() throws {
        var s = try Self.failedRun().summary
        s.thresholds = s.thresholds.map { var t = $0; t.passed = true; return t }
        s.passed = true
        s.exitCode = 0
        s.applyCorrectness(failed: 99)
        #expect(!s.passed && s.exitCode == 99)
        #expect(s.correctnessFailures.count == 2 && s.correctnessFailures[1].hasPrefix("retention: 2 rows kept too long"))
        s.probes = nil
        s.retention?.violations = 0
        s.retention?.findings = []
        (s.passed, s.exitCode) = (true, 0)
        s.applyCorrectness(failed: 99)
        #expect(s.passed && s.exitCode == 0 && s.correctnessFailures.isEmpty)
    }

    @Test func olderSummariesWithoutNewerAccountingFieldsStillRead() throws {
        let json = #"{"sent": 3, "delivered": 2, "lost": {"stale": 1}, "duplicates": 0, "sent_offline": 1}"#
        let a = try JSONDecoder().decode(Accounting.self, from: Data(json.utf8))
        #expect(a.sent == 3 && a.deliveredByBackfill == 0 && a.closes)
    }

    /// Counts in report.html read as the dashboard's do: 1,234,567, whatever the machine's locale.
    @Test func countsHaveThousandsSeparators() throws {
        #expect([0, 7, 999, 1_000, 12_345, 1_234_567, -4_200].map(Markup.count) == ["0", "7", "999", "1,000", "12,345", "1,234,567", "-4,200"])
        let metrics = Metrics()
        metrics.record(.e2eLatency, microseconds: 4_000)
        var a = Accounting()
        (a.sent, a.delivered, a.lost) = (1_234_567, 1_230_000, ["not_received": 4_567])
        let s = RunSummary(scenario: "big", scenarioFile: "big.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                           target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 10_000, accounting: a, metrics: metrics.snapshot(),
                           thresholds: [], exitCode: { $0 ? 0 : 99 })
        let html = HTMLReport.render(ReportInput(summary: s, series: [], histograms: metrics.snapshot()))
        #expect(html.contains("10,000 devices") && html.contains(">1,234,567<") && html.contains(">1,230,000<") && html.contains("4,567"), "\(html)")
        #expect(!html.contains("1234567") && !html.contains(">10000 devices"))
    }

    @Test func aPassingRunHasNoWhyAndAnEmptyErrorsChartSaysSo() throws {
        let metrics = Metrics()
        metrics.record(.e2eLatency, microseconds: 4_000)
        var a = Accounting()
        a.sent = 1
        a.delivered = 1
        let s = RunSummary(scenario: "ok", scenarioFile: "ok.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                           target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 1, accounting: a, metrics: metrics.snapshot(),
                           thresholds: [try Threshold("e2e_latency.p99 < 500ms")], exitCode: { $0 ? 0 : 99 })
        let html = HTMLReport.render(ReportInput(summary: s, series: [["t_s": "0", "http_errors": "0"]], histograms: metrics.snapshot()))
        #expect(html.contains("PASSED") && !html.contains("Why it failed") && html.contains("No HTTP errors"))
        let xml = JUnitReport.render(s)
        #expect(xml.contains("failures=\"0\"") && !xml.contains("<failure"))
    }

    @Test func aMailboxRunShowsItsMessagesAndAnAckViolationFailsItsCase() throws {
        let metrics = Metrics()
        metrics.record(.mailboxLatency, microseconds: 4_000_000)
        metrics.record(.mailboxPollWait, microseconds: 3_900_000)
        metrics.record(.mailboxTransfer, microseconds: 100_000)
        var s = RunSummary(scenario: "qp", scenarioFile: "qp.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                           target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 2, accounting: Accounting(), metrics: metrics.snapshot(),
                           thresholds: [], exitCode: { $0 ? 0 : 99 })
        var m = MailboxReport()
        (m.sent, m.delivered, m.lost, m.afterAck, m.polls) = (10, 9, ["parked": 1], 3, 40)
        s.mailbox = m
        let html = HTMLReport.render(ReportInput(summary: s, series: [], histograms: metrics.snapshot()))
        #expect(html.contains("<h2>Mailbox</h2>") && html.contains("messages sent") && html.contains("not delivered: parked"))
        #expect(html.contains("mailbox_poll_wait") && html.contains("3 message(s) still served after their ACK"))
        let xml = JUnitReport.render(s)
        #expect(xml.contains("ACK-then-delete: nothing served again after its ACK") && xml.contains("<failure"))
        #expect(xml.contains("mailbox accounting closes"))
        m.afterAck = 0
        s.mailbox = m
        #expect(!JUnitReport.render(s).contains("<failure"), "held: no failure")
    }

    /// Pairing on the phones gets a section (what was asked, accepted, refused as gone, and how long it took);
    /// a run without any has none.
    @Test func pairingDuringTheRunHasASection() throws {
        let metrics = Metrics()
        metrics.count(.pairingRequests, by: 300)
        metrics.count(.pairingAccepted, by: 269)
        metrics.count(.pairingRequestsGone, by: 15)
        metrics.record(.pairingAccept, microseconds: 19_000_000)
        var s = RunSummary(scenario: "closer", scenarioFile: "c.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                           target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 600, accounting: Accounting(), metrics: metrics.snapshot(),
                           thresholds: [], exitCode: { $0 ? 0 : 99 })
        let html = HTMLReport.render(ReportInput(summary: s, series: [], histograms: metrics.snapshot()))
        #expect(html.contains("<h2>Pairing during the run</h2>") && html.contains("refused as gone (expired)</td><td class=\"n\">15"), "\(html.count)")
        #expect(html.contains("<td>pairing_accept</td><td class=\"n\">1</td>"))
        s.counters = [:]
        #expect(!HTMLReport.render(ReportInput(summary: s, series: [], histograms: metrics.snapshot())).contains("Pairing during the run"))
    }

    @Test func aResultsFolderIsReadBackAndBadOnesAreNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-report-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let folder = try ResultsFolder(path: dir, columns: ["t_s", "e2e_p99_ms"])
        folder.append(row: ["0", "12.5"])
        let input = try Self.failedRun()
        try folder.finish(summary: input.summary, metrics: input.histograms!)
        try folder.writeReports()
        for name in ["report.html", "junit.xml"] { #expect(FileManager.default.fileExists(atPath: dir + "/" + name)) }
        let back = try ReportInput.load(folder: dir)
        #expect(back.summary == input.summary && back.series.first?["e2e_p99_ms"] == "12.5")
        #expect(back.histograms?.statistic("e2e_latency", "count") == 5)

        let empty = FileManager.default.temporaryDirectory.appendingPathComponent("convoy-empty-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: empty) }
        #expect { try ReportInput.load(folder: empty) } throws: { "\($0)".contains("\(empty)/summary.json: not found") }
        try Data("{\"schema\":\"convoy.run.summary\"}".utf8).write(to: URL(fileURLWithPath: empty + "/summary.json"))
        #expect { try ReportInput.load(folder: empty) } throws: { "\($0)".contains("summary.json: not a convoy.run.summary v1: missing") }
    }

    @Test func prometheusSeesEveryRecordingWithSanitisedNames() {
        let exporter = PrometheusExporter()
        let metrics = Metrics(observer: exporter)
        metrics.record(.e2eLatency, microseconds: 4_000)
        metrics.record(.e2eLatency, microseconds: 40_000)
        metrics.count("lost.not_received", by: 3)
        exporter.set("devices_online", to: 12)
        let text = exporter.exposition()
        #expect(text.contains("convoy_e2e_latency_seconds_count 2"))
        #expect(text.contains("convoy_e2e_latency_seconds_bucket{le=\"0.005\"} 1") && text.contains("convoy_e2e_latency_seconds_bucket{le=\"0.05\"} 2"), "\(text)")
        #expect(text.contains("convoy_lost_not_received_total 3"))
        #expect(text.contains("convoy_devices_online 12"))
        // What Metrics itself keeps is unchanged by the observer.
        #expect(metrics.counters()["lost.not_received"] == 3)
    }

    @Test func aPerDeviceSpreadIsNearestRank() throws {
        let s = try #require(BatteryReport.Group.Spread((1...10).map(Double.init).reversed() + [.nan]))
        #expect(s.min == 1 && s.p50 == 5 && s.p90 == 9 && s.max == 10, "NaN is left out")
        #expect(BatteryReport.Group.Spread([]) == nil)
    }

    @Test func chartTicksAreRound() {
        #expect(SVGChart.niceTicks(0, 47) == [0, 10, 20, 30, 40, 50])
        #expect(SVGChart.niceTicks(0, 0.9) == [0, 0.2, 0.4, 0.6000000000000001, 0.8, 1])
        #expect(SVGChart.line([], xLabel: "x", yLabel: "y").contains("nothing was recorded"))
    }
}
