@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// The retention checker's judgement, with times given (no backend, no clock).
@Suite struct RetentionCheckerTests {
    // Window 20 s, purge every 2 s, grace 3 s: the limit is 25 s.
    let policy = RetentionPolicy(window: 20, purgeEvery: 2, grace: 3)

    func row(_ id: Int64, age: Double, now: Double) -> RetentionChecker.Row {
        RetentionChecker.Row(id: id, createdAt: now - age, createdText: "row \(id)")
    }

    @Test func rowsPastTheLimitAreViolationsCountedOncePerRow() {
        let metrics = Metrics()
        let checker = RetentionChecker(policy: policy, metrics: metrics)
        let now = 1_000.0
        // 24.9 s is inside the limit; 25.5 s and 31 s are past it.
        let oldest = checker.judge(readable: [row(1, age: 24.9, now: now), row(2, age: 25.5, now: now), row(3, age: 31, now: now)],
                                   now: now, foundBy: "recipient")
        #expect(oldest == 31)
        // Seen again 4 s later, by the scan: no new violation, but the overage grows.
        checker.judge(readable: [row(3, age: 31, now: now)], now: now + 4, foundBy: "scan")
        let r = checker.report
        #expect(r.violations == 2 && r.checks == 1 && r.scans == 1)
        #expect(r.findings.map(\.rowID) == [2, 3] && r.findings.allSatisfy { $0.kind == "kept_too_long" })
        #expect(abs(r.findings[1].overageSeconds - 11) < 1e-9, "31 s old against a 20 s window")
        #expect(abs((r.maxOverageSeconds ?? 0) - 15) < 1e-9, "35 s old at the second look")
        #expect(metrics.counters()["retention_violations"] == 2 && metrics.counters()["retention_checks"] == 1)
        #expect(!r.holds && r.verdict.hasPrefix("2 rows kept too long"))
    }

    @Test func youngRowsThatAreGoneWereDeletedEarly() {
        let metrics = Metrics()
        let checker = RetentionChecker(policy: policy, metrics: metrics)
        let now = 500.0
        // Ages 0.5 s (too fresh to judge), 5 s and 10 s (due: under 20 − 3 − 1 = 16 s), 18 s (too close to the window).
        let received: [(id: Int64, createdAt: Double)] = [(1, now - 0.5), (2, now - 5), (3, now - 10), (4, now - 18)]
        #expect(RetentionChecker.dueForEarlyCheck(received, now: now, policy: policy).map(\.id) == [2, 3])
        checker.judgeEarly(received: received, present: [2], now: now)
        checker.judgeEarly(received: received, present: [2], now: now)
        let r = checker.report
        #expect(r.deletedEarly == 1 && r.earlyChecked == 4)
        #expect(r.findings.count == 1 && r.findings[0].kind == "deleted_early" && r.findings[0].rowID == 3)
        #expect(metrics.counters()["retention_deleted_early"] == 1)
        #expect(r.verdict.contains("deleted before the 20.0 s window"))
    }

    @Test func aPolicyThatHeldSaysSo() {
        let checker = RetentionChecker(policy: policy, metrics: Metrics())
        #expect(checker.report.verdict == "not checked")
        checker.judge(readable: [row(1, age: 10, now: 100)], now: 100, foundBy: "recipient")
        // Purged in time: 20 s later nothing is readable, and the row it saw would be 30 s old, past the 25 s limit.
        checker.judge(readable: [], now: 120, foundBy: "recipient")
        #expect(checker.report.keptTooLongTestable && checker.report.oldestRowAgeSeconds == 30)
        #expect(checker.report.holds && checker.report.verdict.hasPrefix("held: 2 checks"), "\(checker.report.verdict)")
    }

    /// A run whose oldest row never reached the limit cannot have tested it: the verdict says so with the ages,
    /// and a `retention_violations == 0` threshold fails as not measured instead of passing on a count of 0.
    @Test func aRunShorterThanTheLimitHasNotTestedIt() throws {
        let metrics = Metrics()
        let long = RetentionChecker(policy: RetentionPolicy(window: 600, purgeEvery: 60, grace: 30), metrics: metrics)
        long.judge(readable: [row(1, age: 2, now: 100)], now: 100, foundBy: "recipient")
        long.judge(readable: [row(1, age: 62, now: 160)], now: 160, foundBy: "recipient")
        long.judgeEarly(received: [(1, 98)], present: [1], now: 160)
        let r = long.report
        #expect(!r.keptTooLongTestable && r.oldestRowAgeSeconds == 62 && r.holds)
        #expect(r.verdict == "kept too long: not testable in this run (oldest row 1 min 2 s; needs ≥ 11 min 30 s); nothing deleted early (1 looked for)",
                "\(r.verdict)")
        #expect(r.unmeasured == ["retention_violations"])
        var snapshot = metrics.snapshot()
        snapshot.unmeasured = r.unmeasured
        let violations = try Threshold("retention_violations == 0").evaluate(snapshot)
        #expect(violations.value == nil && !violations.passed, "not measured fails")
        let early = try Threshold("retention_deleted_early == 0").evaluate(snapshot)
        #expect(early.value == 0 && early.passed, "young rows were looked for: measured")
        // Nothing looked for either: both unmeasured.
        let idle = RetentionChecker(policy: policy, metrics: Metrics())
        idle.judge(readable: [], now: 10, foundBy: "recipient")
        #expect(idle.report.unmeasured == ["retention_violations", "retention_deleted_early"])
        #expect(idle.report.verdict.contains("no row seen") && idle.report.verdict.contains("not checked either"), "\(idle.report.verdict)")
    }

    @Test func theScenarioKeyIsReadStrictly() throws {
        let base = "name: r\ngroups:\n  - name: g\n    count: 2\n"
        let s = try ScenarioFile.parse(base + "retention:\n  window: 20s\n  purge_every: 2s\n  check_every: 0\n", file: "r.yaml")
        #expect(s.retention.window == 20 && s.retention.purgeEvery == 2 && s.retention.limit == 27 && s.retention.checkEvery == 0)
        #expect(try ScenarioFile.parse(base, file: "r.yaml").retention == RetentionPolicy(window: 600, purgeEvery: 60))
        #expect(throws: ScenarioError.self) { try ScenarioFile.parse(base + "retention:\n  windw: 20s\n", file: "r.yaml") }
        do {
            _ = try ScenarioFile.parse(base + "retention:\n  scan: maybe\n", file: "r.yaml")
            Issue.record("accepted scan: maybe")
        } catch {
            #expect(error.description.hasPrefix("r.yaml:6:9: retention.scan: expected true or false"), "\(error)")
        }
    }
}
