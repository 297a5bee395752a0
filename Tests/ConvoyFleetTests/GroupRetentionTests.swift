@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// The retention check of a group app (Survale: everything of an operation goes a set time after it ends),
/// judged with times given: no backend, no clock.
@Suite struct GroupRetentionTests {
    // Window 10 s, purge every 2 s, grace 3 s: the limit is 15 s after the end; a member's own items are
    // looked for until 10 − 3 − 1 = 6 s after it.
    let policy = RetentionPolicy(window: 10, purgeEvery: 2, grace: 3)
    let end = 1_000.0

    func ended(_ readable: [GroupItem: Int], own: [GroupItem: Int] = [:]) -> GroupRemains {
        GroupRemains(endedAt: end, endedText: "end", readable: readable, own: own)
    }

    @Test func aGroupNotEndedIsNotJudged() {
        let checker = RetentionChecker(policy: policy, metrics: Metrics(), afterGroupEnd: true)
        #expect(checker.judge(group: "op", remains: GroupRemains(readable: [.messages: 9]), contributed: [.messages: 3], now: end + 100,
                              foundBy: "member") == nil)
        #expect(checker.report.checks == 0 && checker.report.holds && checker.report.verdict == "not checked")
    }

    @Test func whatIsReadablePastTheLimitIsAViolationOncePerKind() {
        let metrics = Metrics()
        let checker = RetentionChecker(policy: policy, metrics: metrics, afterGroupEnd: true)
        // 14 s after the end: inside the limit.
        #expect(checker.judge(group: "op", remains: ended([.messages: 4, .archive: 30, .media: 0]), contributed: [:], now: end + 14,
                              foundBy: "member") == 14)
        #expect(checker.report.violations == 0)
        // 16 s: messages and archive are kept too long (media had none); the scan finds the same again later.
        checker.judge(group: "op", remains: ended([.messages: 4, .archive: 30, .media: 0]), contributed: [:], now: end + 16, foundBy: "member")
        checker.judge(group: "op", remains: ended([.messages: 4]), contributed: [:], now: end + 20, foundBy: "scan")
        let r = checker.report
        #expect(r.violations == 2 && r.checks == 2 && r.scans == 1)
        #expect(r.findings.compactMap(\.item) == ["group op: archive", "group op: messages"])
        #expect(r.findings.allSatisfy { $0.kind == "kept_too_long" && $0.createdAt == "end" && abs($0.overageSeconds - 6) < 1e-9 })
        #expect(abs((r.maxOverageSeconds ?? 0) - 10) < 1e-9, "20 s after the end at the scan")
        #expect(metrics.counters()["retention_violations"] == 2)
        #expect(r.verdict.hasPrefix("2 kinds of a group's data kept too long") && r.verdict.contains("window after the group ended"))
    }

    @Test func aMembersOwnItemsMustAllBeThereUntilTheWindowLessGrace() {
        let checker = RetentionChecker(policy: policy, metrics: Metrics(), afterGroupEnd: true)
        // 3 s after the end the member posted 5 messages and archived 40 positions: 5 and 38 of its own are left.
        checker.judge(group: "op", remains: ended([.messages: 12, .archive: 120], own: [.messages: 5, .archive: 38]),
                      contributed: [.messages: 5, .archive: 40], now: end + 3, foundBy: "member")
        var r = checker.report
        #expect(r.deletedEarly == 1 && r.earlyChecked == 2)
        #expect(r.findings.map(\.kind) == ["deleted_early"] && r.findings[0].item == "group op: archive" && r.findings[0].foundBy == "member")
        // Media: the app cannot tell whose; any readable counts as there, none is gone.
        checker.judge(group: "op", remains: ended([.media: 1]), contributed: [.media: 2], now: end + 4, foundBy: "member")
        checker.judge(group: "op2", remains: GroupRemains(endedAt: end, readable: [.media: 0]), contributed: [.media: 2], now: end + 4,
                      foundBy: "member")
        r = checker.report
        #expect(r.deletedEarly == 2 && r.findings.last?.item == "group op2: media")
        // 8 s after the end (past 10 − 3 − 1): gone is what the purge may do by now.
        checker.judge(group: "op3", remains: GroupRemains(endedAt: end, readable: [:]), contributed: [.messages: 2], now: end + 8, foundBy: "member")
        #expect(checker.report.deletedEarly == 2)
    }

    @Test func theEndIsRememberedOnceTheGroupsRowIsPurged() {
        let checker = RetentionChecker(policy: policy, metrics: Metrics(), afterGroupEnd: true)
        checker.judge(group: "op", remains: GroupRemains(endedAt: end, endedText: "end", byBackend: true, readable: [.messages: 1]),
                      contributed: [:], now: end + 1, foundBy: "scan")
        // Later the row is gone (no end to read) but a purge that forgot the archive left it: the scan still judges it.
        checker.judge(group: "op", remains: GroupRemains(readable: [.archive: 7]), contributed: [:], now: end + 30, foundBy: "scan")
        #expect(checker.report.violations == 1 && checker.report.findings.first?.item == "group op: archive")
        #expect(checker.groupEndsSeen == ["op": GroupEnd(ended: true, byBackend: true, endedAt: end)])
        // Gone before the window less grace: the member's own messages went early.
        checker.judge(group: "op", remains: GroupRemains(), contributed: [.messages: 3], now: end + 2, foundBy: "member")
        #expect(checker.report.deletedEarly == 1)
    }

    @Test func itemIDsAreStableAndApart() {
        #expect(RetentionChecker.itemID("a", .messages) == RetentionChecker.itemID("a", .messages))
        let ids = Set(["a", "b"].flatMap { g in GroupItem.allCases.map { RetentionChecker.itemID(g, $0) } })
        #expect(ids.count == 6 && ids.allSatisfy { $0 >= 0 })
    }

    @Test func aGroupAppChecksRetentionOnlyWhenTheScenarioGivesIt() throws {
        let base = "name: s\napp: survale\ngroups: [{ name: g, count: 8 }]\nsocial: { groups: 4..8 }\n"
        #expect(try ScenarioFile.parse(base, file: "s.yaml").retention.checkEvery == 0, "the app's 7 days: nothing to see in a run")
        let s = try ScenarioFile.parse(base + "retention: { window: 10s, purge_every: 2s, check_every: 2s }\n", file: "s.yaml")
        #expect(s.retention.window == 10 && s.retention.checkEvery == 2)
        #expect(try ScenarioFile.parse("name: g\ngroups: [{ name: g, count: 2 }]\n", file: "g.yaml").retention.checkEvery == 10)
    }
}
