@testable import ConvoyFleet
import ConvoyMetrics
import Foundation
import Testing

/// Hostile devices in a Survale load: members of one operation probe another operation of the
/// same run (its private channels, rows, media and lifecycle) while the teams share; nothing leaks.
@Suite(.serialized) struct SurvaleHostileRunTests {
    static let catalogue = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("probes/survale.yaml").path

    @Test func hostileMembersProbeAnotherOperationDuringTheLoadAndNothingLeaks() async throws {
        let scenario = try ScenarioFile.parse("""
            name: survale-hostile
            seed: 5
            app: survale
            groups:
              - name: units
                count: 12
                tracks: { synthetic: drive }
                cadence: 700ms..900ms
                message_every: 2s..3s
            social:
              groups: 4..4
            hostile:
              share: 8%
              catalogue: \(Self.catalogue)
              at: 0s
            timeline:
              arrival_rate: 40/s
              steady: 40s
              ramp_down: 500ms
            """, file: "survale-hostile.yaml")
        let outcome = try await SurvaleRunTests.run(scenario)
        let probes = try #require(outcome.probes)
        let catalogue = try ProbeCatalogueFile.load(Self.catalogue)
        // 8 % of 12: one hostile member of one operation probing another, the stranger in the third.
        #expect(probes.hostileDevices == 1 && (outcome.metrics.counters["probe_hostile_unmatched"] ?? 0) == 0)
        #expect(probes.probes.map(\.id) == catalogue.probes.map(\.id))
        #expect(probes.leaks == 0, "\(probes.probes.filter { $0.leaked > 0 }.map { ($0.id, $0.evidence.first?.note ?? "") })")
        #expect(probes.probes.allSatisfy { $0.tried >= 1 && $0.errors == 0 },
                "\(probes.probes.filter { $0.tried < 1 || $0.errors > 0 }.map { ($0.id, $0.tried, $0.errors) })")
        #expect(probes.probes.first { $0.id == "impersonate_teammate_in_broadcast" }?.findings == 1)
        let c = outcome.metrics.counters
        #expect(c["probe_leaks"] == 0 && (c["probe_tries"] ?? 0) >= catalogue.probes.count)
        // The run itself: updates accounted for, what the probes sent to real phones counted apart.
        #expect(outcome.accounting.sent > 0 && outcome.accounting.closes)
        #expect((c["probe_rows_received"] ?? 0) > 0, "\(c.sorted { $0.key < $1.key })")
    }

    @Test func castsComeFromTheTeams() {
        let groups = [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
        let (casts, unmatched) = FleetRun.groupHostileCasts(Hostile(share: 0.25, catalogue: "x"), groups: groups, seed: 9)
        #expect(casts.count == 3 && unmatched.isEmpty)
        for c in casts {
            let mine = groups.first { $0.contains(c.attacker) }!
            #expect(mine[0] == c.friend && c.attacker != c.friend, "the attacker is a member, its case agent the friend")
            #expect(!mine.contains(c.victim) && groups.contains { $0[0] == c.victim }, "the victim owns another team")
            #expect(!mine.contains(c.stranger) && !(groups.first { $0.contains(c.victim) }!.contains(c.stranger)))
        }
        let alone = FleetRun.groupHostileCasts(Hostile(share: 0.25, catalogue: "x"), groups: [[0, 1, 2]], seed: 9)
        #expect(alone.casts.isEmpty && alone.unmatched.count == 1, "one team: no other operation to probe")
        let two = FleetRun.groupHostileCasts(Hostile(share: 0.5, catalogue: "x"), groups: [[0, 1, 2], [3, 4, 5]], seed: 1)
        #expect(two.casts.isEmpty && two.unmatched.count == 3, "two teams: no stranger outside both operations")
    }
}
