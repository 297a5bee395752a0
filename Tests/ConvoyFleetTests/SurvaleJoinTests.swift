@testable import ConvoyFleet
import ConvoyMetrics
import Testing

/// Survale's members who were not invited: each asks to join its team's running operation when it comes
/// online, its case agent (hearing the request on the operation's channel) lets it in, and it then joins the
/// private channels that refused it before, and is a member like any other. Members who leave their operation for a
/// while ask the same way to be let in again.
@Suite(.serialized) struct SurvaleJoinTests {
    static func scenario(share: String) throws -> Scenario {
        try ScenarioFile.parse("""
            name: survale-join
            seed: 5
            app: survale
            groups:
              - name: units
                count: 12
                tracks: { synthetic: drive }
                cadence: 600ms..900ms
                message_every: 1s..2s
            social:
              groups: 4..4
              join_by_request: \(share)
              approve_after: 200ms..600ms
            timeline:
              arrival_rate: 40/s
              steady: 12s
              ramp_down: 500ms
            """, file: "survale-join.yaml")
    }

    @Test func membersWhoAskAreLetInAndThenShareLikeTheOthers() async throws {
        let scenario = try Self.scenario(share: "50%")
        let graph = SocialGraph(devices: 12, social: scenario.social, seed: scenario.seed)
        let roles = FleetRun.groupRoles(graph, social: scenario.social, seed: scenario.seed)
        let asking = roles.filter { $0?.joinsByRequest == true }.count
        #expect(asking > 0 && asking < 9, "a seeded share of the 9 members who are not case agents: \(asking)")
        #expect(roles.allSatisfy { r in r.map { !($0.owner && $0.joinsByRequest) } ?? false }, "a case agent never asks")

        let outcome = try await SurvaleRunTests.run(scenario)
        let c = outcome.metrics.counters
        #expect(c[.joinRequests] == asking && c[.joinApproved] == asking && c[.joinRequestFailures] == 0, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.metrics.statistic("join_approval", "count") == Double(asking))
        #expect(outcome.metrics.statistic("join_channel", "count") == Double(asking))
        // Let in within the case agent's 0.6 s and a couple of 2 s polls.
        #expect((outcome.metrics.statistic("join_approval", "max") ?? .infinity) < 5e6, "µs")
        // Once in, they are members: they track presence, broadcast and hear the others, and nothing is lost for it.
        #expect(c[.presenceTracks] >= 12 && c[.presenceUnconverged] == 0 && c[.devicesNeverSubscribed] == 0, "\(c.sorted { $0.key < $1.key })")
        #expect(outcome.accounting.sent > 0 && outcome.accounting.closes)
        #expect(outcome.accounting.lostTotal * 20 <= outcome.accounting.sent, "\(outcome.accounting.lost)")
        #expect(c[.realtimeJoinFailures] == 0, "nobody tried a private channel before it was let in")
    }

    @Test func membersWhoLeaveForAWhileAskAgainAndAreBackOnTheChannels() async throws {
        let scenario = try SurvaleDirectJoinTests.units("survale-leave", seed: 8, count: 12, social: [
            "groups: 4..4", "leave_rejoin: 50%", "leave_at: 1s..2s", "rejoin_after: 1s..2s", "approve_after: 200ms..400ms",
        ], steady: "10s")
        let graph = SocialGraph(devices: 12, social: scenario.social, seed: scenario.seed)
        let leaving = FleetRun.groupRoles(graph, social: scenario.social, seed: scenario.seed).filter { $0?.leavesAt != nil }.count
        #expect(leaving > 0 && leaving < 9, "a seeded share of the 9 members: \(leaving)")

        let outcome = try await SurvaleRunTests.run(scenario)
        let c = outcome.metrics.counters
        #expect(c[.groupLeaves] == leaving && c[.groupRejoins] == leaving, "\(c.sorted { $0.key < $1.key })")
        #expect(c[.joinRequests] == leaving && c[.joinApproved] == leaving)
        #expect(outcome.metrics.statistic("join_channel", "count") == Double(leaving))
        // While out it is nobody's addressee and shares nothing; back in, it is a member again: nothing is lost for it.
        #expect(outcome.accounting.sent > 0 && outcome.accounting.closes)
        #expect(outcome.accounting.lostTotal * 20 <= outcome.accounting.sent, "\(outcome.accounting.lost)")
        #expect(c[.presenceUnconverged] == 0 && c[.realtimeJoinFailures] == 0 && c[.archiveFailures] <= 12, "\(c.sorted { $0.key < $1.key })")
    }

    /// A member that asks and then loses its network cannot hear its answer, nor an owner off line give one:
    /// `join_channel` is the whole wait, `join_channel_online` the same wait less the union of the two's offline
    /// windows (here 3 s in every 8 s, each phone at its own phase).
    @Test func aMembersOwnTimeOffTheNetworkIsTakenOutOfItsOnlineJoinFigure() async throws {
        let scenario = try ScenarioFile.parse("""
            name: survale-join-tunnels
            seed: 5
            app: survale
            groups:
              - name: units
                count: 12
                tracks: { synthetic: drive }
                cadence: 600ms..900ms
                conditions: { preset: lte, offline: { every: 8s, for: 3s } }
            social:
              groups: 4..4
              join_by_request: 50%
              approve_after: 1s..2s
            timeline:
              arrival_rate: 40/s
              steady: 10s
              ramp_down: 500ms
            """, file: "survale-join-tunnels.yaml")
        let outcome = try await SurvaleRunTests.run(scenario)
        let m = outcome.metrics
        let joined = try #require(m.statistic("join_channel", "count"))
        #expect(joined > 0 && m.statistic("join_channel_online", "count") == joined)
        let (whole, online) = (try #require(m.statistic("join_channel", "mean")), try #require(m.statistic("join_channel_online", "mean")))
        #expect(online < whole, "some member was in a tunnel while it waited: \(online) µs against \(whole) µs")
        #expect((m.statistic("join_channel_online", "max") ?? .infinity) <= (m.statistic("join_channel", "max") ?? 0))
    }

    @Test func offlineWindowsCountOnceWhereTheyOverlap() {
        #expect(VirtualDevice.covered([]) == 0)
        #expect(VirtualDevice.covered([(5, 8), (1, 3)]) == 5)
        #expect(VirtualDevice.covered([(1, 4), (2, 6), (5, 7), (10, 11)]) == 7)
        #expect(VirtualDevice.covered([(1, 9), (2, 3)]) == 8)
    }

    @Test func theKeysAreReadStrictly() throws {
        #expect(try Self.scenario(share: "25%").social.joinByRequest == 0.25)
        #expect(throws: ScenarioError.self) { try Self.scenario(share: "lots") }
        let pairwise = "name: x\ngroups: [{ name: g, count: 4 }]\nsocial: { join_by_request: 10% }\n"
        #expect { try ScenarioFile.parse(pairwise, file: "x.yaml") } throws: { "\($0)".contains("x.yaml:3:28: social.join_by_request: join_by_request needs groups") }
    }
}
