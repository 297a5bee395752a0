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
