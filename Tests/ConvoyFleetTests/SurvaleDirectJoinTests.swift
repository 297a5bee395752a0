@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// Direct messages do not change what else a Survale run does. A pair's channel lets the two in only while both are
/// members of the running operation; a case agent that knocked on its channel with a member still asking to be let in
/// was refused, read the refusal as its operation's end, and so approved nobody, ended nothing, and showed offline to
/// every member writing to it. The same scenario, with and without `dm_every`, must let in, end and account alike.
@Suite(.serialized) struct SurvaleDirectJoinTests {
    /// One group of Survale units, `social` (its lines, indented as under `social:`) and a short timeline.
    static func units(_ name: String, seed: Int, count: Int, messages: Bool = true, social: [String], steady: String) throws -> Scenario {
        let social = social.map { "  " + $0 }.joined(separator: "\n")
        return try ScenarioFile.parse("""
            name: \(name)
            seed: \(seed)
            app: survale
            groups:
              - name: units
                count: \(count)
                tracks: { synthetic: drive }
                cadence: 600ms..900ms
            \(messages ? "    message_every: 1s..2s" : "")
            social:
            \(social)
            timeline:
              arrival_rate: 40/s
              steady: \(steady)
              ramp_down: 500ms
            """, file: "\(name).yaml")
    }

    static func scenario(directMessages: Bool) throws -> Scenario {
        try units("survale-direct-join", seed: 5, count: 12, social: [
            "groups: 4..4", "join_by_request: 40%", "approve_after: 200ms..600ms", "leave_rejoin: 30%", "leave_at: 3s..4s",
            "rejoin_after: 1s..2s",
        ] + (directMessages ? ["dm_every: 500ms..1s"] : []), steady: "14s")
    }

    struct Figures: Equatable, CustomStringConvertible {
        var joinRequests = 0, joinApproved = 0, joinChannel = 0, leaves = 0, rejoins = 0, groups = 0, endedByOwner = 0, notEnded = 0
        var description: String {
            "asked \(joinRequests), approved \(joinApproved), on the channel \(joinChannel), left \(leaves), back \(rejoins), "
                + "\(endedByOwner) of \(groups) ended by their case agent, \(notEnded) not ended"
        }
    }

    static func figures(_ outcome: FleetRun.Outcome) throws -> Figures {
        let c = outcome.metrics.counters
        let groups = try #require(outcome.groups)
        return Figures(joinRequests: c[.joinRequests], joinApproved: c[.joinApproved],
                       joinChannel: Int(outcome.metrics.statistic("join_channel", "count") ?? 0), leaves: c[.groupLeaves], rejoins: c[.groupRejoins],
                       groups: groups.groups, endedByOwner: groups.endedByOwner, notEnded: groups.notEnded)
    }

    @Test func theSameRunWithAndWithoutDirectMessagesLetsInEndsAndAccountsAlike() async throws {
        let plain = try Self.scenario(directMessages: false), direct = try Self.scenario(directMessages: true)
        #expect(plain.social.directEvery == nil && direct.social.directEvery == 0.5...1)
        let graph = SocialGraph(devices: 12, social: plain.social, seed: plain.seed)
        let roles = FleetRun.groupRoles(graph, social: plain.social, seed: plain.seed)
        let (asking, leaving) = (roles.filter { $0?.joinsByRequest == true }.count, roles.filter { $0?.leavesAt != nil }.count)
        #expect(asking > 0 && leaving > 0, "the scenario has members who ask and members who leave and ask again")
        let planned = Figures(joinRequests: asking + leaving, joinApproved: asking + leaving, joinChannel: asking + leaving, leaves: leaving,
                              rejoins: leaving, groups: 3, endedByOwner: 3, notEnded: 0)

        for (scenario, dm) in [(plain, false), (direct, true)] {
            let outcome = try await SurvaleRunTests.run(scenario)
            let c = outcome.metrics.counters
            let figures = try Self.figures(outcome)
            #expect(figures == planned, "dm \(dm): \(figures), planned \(planned)")
            #expect(c[.realtimeJoinFailures] == 0 && c[.groupNotJoined] == 0, "dm \(dm): nobody was refused its group's channel")
            #expect(outcome.accounting.sent > 0 && outcome.accounting.closes)
            #expect(outcome.accounting.lostTotal * 20 <= outcome.accounting.sent, "dm \(dm): \(outcome.accounting.lost)")
            #expect(c[.presenceUnconverged] == 0 && c[.devicesNeverSubscribed] == 0, "dm \(dm): \(c.sorted { $0.key < $1.key })")
            let report = try #require(outcome.groups)
            guard dm else {
                #expect(report.direct == nil && c[.directSent] == 0)
                continue
            }
            // Each pair's channel opened once both were seen on the operation; what was written to a partner online arrived.
            let messages = try #require(report.direct)
            #expect(messages.expected > 40 && messages.closes && messages.unexpected == 0, "\(messages)")
            // A DM written just after the sender opened the pair's channel and before its partner did reaches nobody (nothing
            // relays it): lost for that (`partner_not_on_pair_channel`; a loaded machine showed 8 of 147). The rest arrive
            // but for a dropped connection now and then.
            let apart = messages.lost["partner_not_on_pair_channel"] ?? 0
            #expect(Set(messages.lost.keys).isSubset(of: ["partner_not_on_pair_channel", "recipient_disconnected", "not_received"]))
            #expect((messages.lostTotal - apart) * 20 <= messages.expected && apart * 5 <= messages.expected, "\(messages)")
            #expect(c[.directChannelsJoined] > 0 && c[.directFailures] == 0, "\(c.sorted { $0.key < $1.key })")
            // Only members out of their operation for a while (or not let in yet) are offline to a sender.
            #expect(c[.directToOffline] + c[.directNotOpen] < messages.expected, "\(c.sorted { $0.key < $1.key })")
        }
    }

    /// A member whose time to leave comes while it is still asking to be let in leaves once it is on the channel: every
    /// member here asks, and is due to leave a moment after the ramp-up, long before its first poll reads the answer
    /// (`joinPollInterval`). Before, such a leave was dropped (it had no connection yet), and one that came between
    /// the member connecting and its channel's reply left a join that was never timed: CI saw 8 of 9 on the channel.
    @Test func aLeaveDueBeforeTheMemberIsOnItsChannelIsMadeOnceItIsThere() async throws {
        let scenario = try Self.units("survale-early-leave", seed: 11, count: 8, messages: false, social: [
            "groups: 4..4", "join_by_request: 100%", "approve_after: 200ms..400ms", "leave_rejoin: 100%", "leave_at: 100ms..300ms",
            "rejoin_after: 500ms..1s",
        ], steady: "10s")
        let graph = SocialGraph(devices: 8, social: scenario.social, seed: scenario.seed)
        let roles = FleetRun.groupRoles(graph, social: scenario.social, seed: scenario.seed)
        let members = roles.filter { $0?.owner == false }.count
        #expect(members == 6 && roles.allSatisfy { $0?.owner != false || ($0?.joinsByRequest == true && $0?.leavesAt != nil) })
        // Each member asks, is on the channel, leaves, asks again and is back: two asks each, each timed once.
        let planned = Figures(joinRequests: 2 * members, joinApproved: 2 * members, joinChannel: 2 * members, leaves: members,
                              rejoins: members, groups: 2, endedByOwner: 2, notEnded: 0)
        let outcome = try await SurvaleRunTests.run(scenario)
        let c = outcome.metrics.counters
        #expect(try Self.figures(outcome) == planned)
        #expect(c[.realtimeJoinFailures] == 0 && c[.groupNotJoined] == 0 && c[.devicesNeverSubscribed] == 0, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.accounting.sent > 0 && outcome.accounting.closes)
    }
}
