import ConvoyMetrics
import Foundation
import Testing

/// `convoy dashboard`: shards' seconds travel without loss and merge as `convoy merge` merges; their ends and maps as one.
@Suite struct DashboardMergeTests {
    static func second(_ shard: Int, latencies: [Int], online: Int, phase: String = "steady", sent: Int = 10) -> DashboardFeed.Second {
        let m = Metrics()
        for v in latencies { m.record(.e2eLatency, microseconds: UInt64(v)) }
        m.count(.sent, by: sent)
        return DashboardFeed.Second(elapsed: Double(10 + shard), phase: phase, onboarded: 6, online: online, offRealtime: shard, retryQueued: 1,
                                    interval: m.snapshot(), totals: ["sent": sent * 5],
                                    groups: [.init(name: "walkers", devices: 3, online: online, offRealtime: 0, sent: sent, received: sent - 1)])
    }

    @Test func aSecondTravelsSmallAndLosesNothing() throws {
        let s = Self.second(1, latencies: (1...500).map { $0 * 37 }, online: 5)
        let json = try JSONEncoder().encode(s)
        #expect(json.count < 12_000, "sparse: \(json.count) bytes")
        let back = try JSONDecoder().decode(DashboardFeed.Second.self, from: json)
        for stat in ["p50", "p90", "p99", "max", "min", "count"] {
            #expect(back.interval.statistic(.e2eLatency, stat) == s.interval.statistic(.e2eLatency, stat), "\(stat)")
        }
        #expect(back.interval.counters == s.interval.counters && back.totals == s.totals && back.groups == s.groups && back.online == 5)
    }

    @Test func shardsMergeTheirHistogramsNotTheirPercentiles() {
        let a = Self.second(1, latencies: Array(repeating: 1_000, count: 99), online: 5, phase: "steady")
        let b = Self.second(2, latencies: [900_000], online: 4, phase: "ramp-up")
        let merged = DashboardMerge.second(latest: [a, b], new: [a, b])
        // 100 samples, one of them slow: the merged p99 is a fast one, the max the slow one (an average of percentiles would say neither).
        #expect(merged.interval.statistic(.e2eLatency, "count") == 100 && merged.interval.statistic(.e2eLatency, "max")! >= 899_000)
        #expect(merged.online == 9 && merged.offRealtime == 3 && merged.phase == "ramp-up" && merged.elapsed == 12)
        #expect(merged.totals["sent"] == 100 && merged.interval.counters["sent"] == 20)
        #expect(merged.groups == [.init(name: "walkers", devices: 6, online: 9, offRealtime: 0, sent: 20, received: 18)])
    }

    /// A shard counts as sent what it sealed to friends on its own shard, and apart what went to friends on others: the
    /// merged live view counts both as sent (the view read "sent 202 / received 458" with half the fleet's sends missing).
    @Test func whatCrossedShardsIsSentLive() {
        var a = Self.second(1, latencies: [1_000], online: 5), b = Self.second(2, latencies: [1_000], online: 4)
        a.totals["sent_other_shards"] = 30
        b.interval.counters["sent_other_shards"] = 7
        let merged = DashboardMerge.second(latest: [a, b], new: [a, b])
        #expect(merged.totals["sent"] == 130 && merged.interval.counters["sent"] == 27, "\(merged.totals) \(merged.interval.counters)")
        // The control: without sends across shards, sent is the shards' own.
        let alone = DashboardMerge.second(latest: [Self.second(1, latencies: [], online: 1)], new: [])
        #expect(alone.totals["sent"] == 50)
    }

    @Test func theEndIsTheWorstShardsAndTheAccountingsSummed() {
        func end(_ code: Int32, sent: Int, lost: [String: Int], passed: Bool) -> DashboardEnd {
            var accounting = Accounting()
            accounting.sent = sent
            accounting.delivered = sent - lost.values.reduce(0, +)
            accounting.lost = lost
            let summary = RunSummary(scenario: "s", scenarioFile: "s.yaml", seed: 1, complete: true, startedAt: Date(), endedAt: Date(), durationSeconds: 30,
                                     target: .init(kind: "keys_file", url: "http://x"), devices: 6, accounting: accounting,
                                     metrics: MetricsSnapshot(), thresholds: [try! Threshold(passed ? "sent >= 0" : "sent < 0")]) { _ in code }
            return DashboardEnd(summary, report: "report.html", results: "/r")
        }
        let merged = DashboardMerge.end([end(0, sent: 100, lost: ["not_received": 2], passed: true), end(99, sent: 50, lost: ["stale": 1], passed: false)],
                                        shards: ["http://a:1", "http://b:2/"])
        #expect(merged.exitCode == 99 && merged.accounting?.sent == 150 && merged.accounting?.lost == ["not_received": 2, "stale": 1])
        #expect(merged.shards?.map(\.report) == ["http://a:1/report.html", "http://b:2/report.html"] && merged.shards?.map(\.exitCode) == [0, 99])
        #expect(DashboardMerge.end([end(99, sent: 1, lost: [:], passed: true), DashboardMerge.unreachable("http://c/")], shards: ["a", "c"]).exitCode == 1)
    }

    @Test func eachPhoneComesFromTheShardThatRunsItAndReceiptsFromEveryShard() throws {
        func map(_ mine: Range<Int>, receipts: [FleetMapData.Receipt]) -> FleetMapData {
            FleetMapData(groups: ["g"], phones: (0..<4).map { i in
                .init(i: i, g: 0, lat: mine.contains(i) ? 46 + Double(i) : nil, lon: mine.contains(i) ? 14 : nil, online: mine.contains(i), state: .gps)
            }, tracked: [.init(i: 0, g: 0, track: mine.contains(0) ? [.init(t: 1, lat: 46, lon: 14, state: .gps)] : [], received: receipts)],
                         sampling: "s")
        }
        let r = { (t: Double, by: Int) in FleetMapData.Receipt(t: t, by: by, lat: 46, lon: 14, acc: 5, latencyMs: 3, mode: "precise") }
        let merged = try #require(DashboardMerge.map([map(0..<2, receipts: [r(2, 1)]), map(2..<4, receipts: [r(1, 3)])]))
        #expect(merged.phones.map(\.lat) == [46, 47, 48, 49] && merged.phones.allSatisfy(\.online))
        #expect(merged.tracked.count == 1 && merged.tracked[0].track.count == 1 && merged.tracked[0].received.map(\.t) == [1, 2])
    }
}
