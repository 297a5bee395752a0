import ConvoyMetrics
import Foundation
import Testing

/// How a group app's auto-end is judged: in time between the auto-end time and
/// its grace after the last member left; sooner, later, or while someone was
/// on the group, a finding that fails the run.
@Suite struct GroupsReportTests {
    /// The replay check: a short read back fails the groups' verdict; nothing read back is "not tested", never a pass.
    @Test func aShortReplayFailsAndNoneReadBackIsNotTested() {
        var r = GroupsReport(groups: 2, abandoned: 0, autoEndSeconds: 600, graceSeconds: 7)
        var replay = ReplayReport()
        r.replay = replay
        #expect(r.holds && replay.verdict.hasPrefix("replay not tested"))
        (replay.groups, replay.complete, replay.positionsExpected, replay.positionsReturned, replay.messagesExpected, replay.messagesReturned)
            = (2, 2, 40, 40, 5, 5)
        r.replay = replay
        #expect(r.holds && replay.verdict.hasPrefix("replay complete: 2 of 2 groups"))
        (replay.complete, replay.short, replay.positionsReturned) = (1, 1, 31)
        r.replay = replay
        #expect(!r.holds && r.verdict.contains("replay short for 1 of 2 groups (31 of 40 positions"), "\(r.verdict)")
    }

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
