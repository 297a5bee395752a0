import ConvoyFleet
import Testing

@Suite struct SocialGraphTests {
    @Test func theSameSeedMakesTheSameGraph() {
        let social = Social(friends: 2...6, communities: 4, decideLater: 0.1)
        let a = SocialGraph(devices: 1000, social: social, seed: 7)
        #expect(a == SocialGraph(devices: 1000, social: social, seed: 7))
        #expect(a != SocialGraph(devices: 1000, social: social, seed: 8))
    }

    @Test func friendshipsAreWellFormedAndStayInTheirCommunity() {
        let social = Social(friends: 2...6, communities: 4, decideLater: 0)
        let g = SocialGraph(devices: 1000, social: social, seed: 1)
        var seen = Set<[Int]>()
        for p in g.pairs {
            #expect(p.inviter != p.invitee)
            #expect(g.community[p.inviter] == g.community[p.invitee])
            #expect(seen.insert([min(p.inviter, p.invitee), max(p.inviter, p.invitee)]).inserted, "no pair twice")
        }
        let degrees = (0..<1000).map { g.friendships(of: $0).count }
        #expect(degrees.allSatisfy { $0 <= 6 }, "never more friends than wanted")
        // With 250 per community almost everyone gets what they drew.
        #expect(degrees.filter { $0 >= 2 }.count >= 990, "\(degrees.filter { $0 < 2 }.count) devices below the minimum")
        #expect(g.pairs.allSatisfy { !$0.pending })
    }

    @Test func teamsCoverEveryDeviceOnceWithEveryTwoMembersFriends() {
        var social = Social()
        social.groups = 4...8
        for n in [1, 3, 4, 9, 37, 200] {
            let g = SocialGraph(devices: n, social: social, seed: 5)
            #expect(g.groups.flatMap { $0 }.sorted() == Array(0..<n), "\(n) devices: each in one team")
            // Every team within the range, but the last may take a remainder below the smallest size into it (or be all there is).
            #expect(g.groups.dropLast().allSatisfy { (4...8).contains($0.count) })
            if n >= 4 { #expect(g.groups.last.map { $0.count >= 4 && $0.count <= 11 } == true) }
            for team in g.groups {
                for d in team {
                    let mates = Set(g.friendships(of: d).map { $0.inviter == d ? $0.invitee : $0.inviter })
                    #expect(mates == Set(team).subtracting([d]))
                }
                #expect(g.friendships(of: team[0]).allSatisfy { $0.inviter == team[0] }, "the owner invites everyone")
            }
            #expect(g == SocialGraph(devices: n, social: social, seed: 5))
        }
    }

    @Test func decideLaterLeavesAboutThatShareOfInvitesPending() {
        let g = SocialGraph(devices: 10_000, social: Social(friends: 3...3, communities: 10, decideLater: 0.2), seed: 3)
        let share = Double(g.pairs.filter(\.pending).count) / Double(g.pairs.count)
        #expect(abs(share - 0.2) < 0.02, "\(share)")
    }

    @Test func tinyFleetsDoWhatTheyCan() {
        #expect(SocialGraph(devices: 1, social: Social(friends: 2...5), seed: 1).pairs.isEmpty)
        let two = SocialGraph(devices: 2, social: Social(friends: 1...1), seed: 1)
        #expect(two.pairs.count == 1 && Set([two.pairs[0].inviter, two.pairs[0].invitee]) == [0, 1])
        #expect(SocialGraph(devices: 0, social: Social(), seed: 1).pairs.isEmpty)
    }
}
