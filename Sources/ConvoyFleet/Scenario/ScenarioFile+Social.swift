import Foundation
import Yams

/// The scenario's `social` block (docs/scenarios.md, "social"): the graph, decide-later and accept-later,
/// teams, and the invite lifetime.
extension Reader {
    static let socialKeys = ["friends", "communities", "decide_later", "decline", "accept_later", "groups", "abandon", "abandon_at", "auto_end", "auto_end_grace", "invite_ttl", "question_every", "outcome_day", "reminder_every", "existing_couples", "accept_later_at",
                             "join_by_request", "approve_after", "leave_rejoin", "leave_at", "rejoin_after", "replay_every", "dm_every"]

    func social() throws(ScenarioError) -> Social {
        let m = try mapping(Self.socialKeys)
        var social = Social()
        if let f = m["friends"] {
            let s = try f.string()
            let parts = s.components(separatedBy: "..").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count <= 2, let low = parts.first ?? nil, let high = parts.count == 2 ? parts[1] : low, 0 <= low, low <= high
            else { throw f.error("expected a number of friends or a range such as 2..8, found \"\(s)\"") }
            guard high <= Social.maximumFriends else { throw f.error("at most \(Social.maximumFriends) friends per device, found \"\(s)\"") }
            social.friends = low...high
        }
        if let c = m["communities"] { social.communities = try c.int(1...1_000_000) }
        if let g = m["groups"] {
            let s = try g.string()
            let parts = s.components(separatedBy: "..").map { Int($0.trimmingCharacters(in: .whitespaces)) }
            guard parts.count <= 2, let low = parts.first ?? nil, let high = parts.count == 2 ? parts[1] : low, 2 <= low, low <= high, high <= 1000
            else { throw g.error("expected a group size of 2 to 1000 or a range such as 4..8, found \"\(s)\"") }
            social.groups = low...high
            (social.groupsLine, social.groupsColumn) = (g.node.mark?.line ?? 0, g.node.mark?.column ?? 0)
        }
        if let a = m["abandon"] {
            guard social.groups != nil else { throw a.error("abandon needs groups (it is a number of groups)") }
            social.abandoned = try a.int(0...1_000_000)
        }
        if let a = m["abandon_at"] { social.abandonAt = try a.duration() }
        if let a = m["auto_end"] { social.autoEnd = try a.duration(minimum: 0.001) }
        if let a = m["auto_end_grace"] { social.autoEndGrace = try a.duration() }
        if let t = m["invite_ttl"] { social.inviteTTL = try t.duration(minimum: 1) }
        if let t = m["question_every"] { social.questionEvery = try t.duration(minimum: 1) }
        if let t = m["outcome_day"] { social.outcomeDay = try t.duration(minimum: 0.001) }
        if let t = m["reminder_every"] { social.reminderEvery = try t.duration(minimum: 1) }
        if let n = m["existing_couples"] { social.existingCouples = try n.int(0...2_000_000) }
        if let j = m["join_by_request"] {
            guard social.groups != nil else { throw j.error("join_by_request needs groups (members who ask to join their team's group)") }
            social.joinByRequest = try j.fraction()
        }
        for key in ["leave_rejoin", "leave_at", "rejoin_after"] where m[key] != nil && social.groups == nil {
            throw m[key]!.error("\(key) needs groups (members who leave their team's group and ask to join again)")
        }
        if let l = m["leave_rejoin"] { social.leaveRejoin = try l.fraction() }
        if let l = m["leave_at"] { social.leaveAt = try l.range(fromZero: true) }
        if let r = m["rejoin_after"] { social.rejoinAfter = try r.range() }
        if let d = m["dm_every"] {
            guard social.groups != nil else { throw d.error("dm_every needs groups (direct messages between members of a group)") }
            let every = try d.range()
            guard every.lowerBound >= 0.5 else { throw d.error("at least 500ms") }
            social.directEvery = every
        }
        if let r = m["replay_every"] {
            guard social.groups != nil else { throw r.error("replay_every needs groups (an owner reading back its group's archive)") }
            let every = try r.duration()
            guard every >= 1 else { throw r.error("at least 1s") }
            social.replayEvery = every
        }
        if let a = m["approve_after"] {
            guard social.groups != nil else { throw a.error("approve_after needs groups (an owner deciding join requests)") }
            social.approveAfter = try a.range(fromZero: true)
        }
        if let d = m["decide_later"] { social.decideLater = try d.fraction() }
        if let d = m["decline"] {
            guard social.groups == nil else { throw d.error("decline is for pairwise friend requests; groups are teams") }
            social.decline = try d.fraction()
        }
        if let a = m["accept_later"] {
            social.acceptLater = try a.fraction()
            (social.acceptLaterLine, social.acceptLaterColumn) = (a.node.mark?.line ?? 0, a.node.mark?.column ?? 0)
        }
        if let a = m["accept_later_at"] {
            guard m["accept_later"] != nil else { throw a.error("accept_later_at says when the accept_later acceptances come: give accept_later") }
            social.acceptLaterAt = try a.range(fromZero: true)
        }
        return social
    }
}
