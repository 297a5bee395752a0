@testable import ConvoyFleet
import ConvoyMetrics
import Foundation
import Testing

/// A run too small for its random offline windows says what it cannot test (issue 47, item 1): survale-ops' dropouts at
/// 60 phones for 90 s draw about 7 windows, so their offline share is a draw, and the summary and report say so beside the
/// share their Realtime connection was down. The control: at full size (40 dropouts, 5 minutes) they draw enough.
@Suite struct OfflineDrawTests {
    static func network(devices: Int, duration: Double) throws -> RunSummary.NetworkGroup {
        var scenario = try ScenarioFile.load(ScenarioFileTests.root.appendingPathComponent("scenarios/survale-ops.yaml").path)
        // What --devices does to its two groups (5:1).
        for i in scenario.groups.indices { scenario.groups[i].count = scenario.groups[i].name == "dropouts" ? devices / 6 : devices - devices / 6 }
        let groups = try #require(FleetRun.network(scenario, figures: scenario.groups.map { _ in (tunnels: 1, cuts: 1, offlineShare: 0.19) },
                                                   offRealtime: scenario.groups.map { _ in 0.267 }, duration: duration))
        return try #require(groups.first { $0.group == "dropouts" })
    }

    @Test func aSmallRunSaysItsOfflineShareIsADraw() throws {
        let small = try Self.network(devices: 60, duration: 93)
        // 10 dropouts × 93 s ÷ (2 min + 15 s) between the starts of two windows.
        #expect(abs((small.offlineWindowsExpected ?? 0) - 10 * 93 / 135.0) < 0.01 && abs((small.offlineMeanShare ?? 0) - 15 / 135.0) < 1e-9)
        let note = try #require(small.drawNote)
        #expect(note.contains("about 6.9 offline windows") && note.contains("offline 19.0 %") && note.contains("mean of 11.1 %") && note.contains("5× the phones"),
                "\(note)")
        var summary = try OpportunityTestsSummary.make()
        summary.network = [small]
        #expect(summary.markdown().contains("| 19.0 % | 26.7 % |") && summary.markdown().contains("**Not tested at this size:** dropouts drew"))
        #expect(HTMLReport.render(ReportInput(summary: summary, series: [], histograms: MetricsSnapshot())).contains("Not tested at this size:"))
        // The control: the scenario at its own size draws enough windows to hold the share near its mean.
        let full = try Self.network(devices: 240, duration: 310)
        #expect((full.offlineWindowsExpected ?? 0) > RunSummary.NetworkGroup.fewWindows && full.drawNote == nil)
    }
}

/// A minimal passing summary to hang sections on.
enum OpportunityTestsSummary {
    static func make() throws -> RunSummary {
        RunSummary(scenario: "s", scenarioFile: "s.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 1,
                   target: .init(kind: "embedded", url: "http://127.0.0.1:1"), devices: 2, accounting: Accounting(), metrics: Metrics().snapshot(),
                   thresholds: [], exitCode: { $0 ? 0 : 99 })
    }
}
