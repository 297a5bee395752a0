import ConvoyMetrics
import Foundation
import Testing

/// How a group app's auto-end is judged: in time between the auto-end time and
/// its grace after the last member left; sooner, later, or while someone was
/// on the group, a finding that fails the run.
@Suite struct GroupsReportTests {
    @Test func eachEndIsJudgedFromTheLastMemberLeaving() {
        var r = GroupsReport(groups: 7, abandoned: 5, autoEndSeconds: 600, graceSeconds: 7)
        let left = 1_000.0
        r.add(group: 0, abandoned: true, ended: true, byBackend: true, endedAt: left + 603, lastLeft: left)
        #expect(r.holds && r.autoEnded == 1 && r.autoEndAfterSeconds == [603])
        r.add(group: 1, abandoned: true, ended: true, byBackend: true, endedAt: left + 580, lastLeft: left)
        #expect(!r.holds && r.endedEarly == 1 && r.findings.last?.kind == "ended_early")
        r.add(group: 2, abandoned: true, ended: true, byBackend: true, endedAt: left + 620, lastLeft: left)
        r.add(group: 3, abandoned: true, ended: false, byBackend: false, endedAt: nil, lastLeft: left)
        #expect(r.autoEndLate == 2)
        r.add(group: 4, abandoned: true, ended: false, byBackend: false, endedAt: nil, lastLeft: nil)
        #expect(r.unjudged == 1 && r.autoEndLate == 2, "no member ever on it: nothing to time from")
        r.add(group: 5, abandoned: false, ended: true, byBackend: true, endedAt: left, lastLeft: nil)
        r.add(group: 6, abandoned: false, ended: true, byBackend: false, endedAt: left, lastLeft: nil)
        #expect(r.endedWhileConnected == 1 && r.endedByOwner == 1)
        #expect(r.verdict.contains("1 ended sooner") && r.verdict.contains("2 abandoned groups not ended by 607 s")
                    && r.verdict.contains("1 ended by the backend while a member was on it"), "\(r.verdict)")
        let back = try? JSONDecoder().decode(GroupsReport.self, from: JSONEncoder().encode(r))
        #expect(back == r)
    }
}
