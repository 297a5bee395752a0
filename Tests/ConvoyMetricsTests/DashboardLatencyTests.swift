@testable import ConvoyMetrics
import Foundation
import Histogram
import Testing

/// The dashboard's latency and errors over time: every histogram over the run so far and the last 10 s (a second's p99
/// at a few receipts is its slowest one), each second's errors by kind with the last failed request of each, and a
/// merging dashboard that gets every histogram and failure from its shards.
@Suite struct DashboardLatencyTests {
    static let header = DashboardFeedTests.header

    static func second(_ t: Double, e2eMs: [Int], postMs: [Int] = [], totals: [String: Int] = [:], failures: [FailureSample] = []) -> DashboardFeed.Second {
        let m = Metrics()
        for v in e2eMs { m.record(.e2eLatency, microseconds: UInt64(v * 1000)) }
        for v in postMs { m.record(.post, microseconds: UInt64(v * 1000)) }
        return DashboardFeed.Second(elapsed: t, phase: "steady", onboarded: 10, online: 10, offRealtime: 0, retryQueued: 0, interval: m.snapshot(),
                                    totals: totals, groups: [], failures: failures)
    }

    static func histogram(_ ms: [Int]) -> Histogram<UInt64> {
        var h = MetricsSnapshot.emptyHistogram()
        for v in ms { _ = h.record(UInt64(v * 1000)) }
        return h
    }

    /// Five slow seconds, then ten fast ones: the run's p99 remembers the slow ones, the last 10 s's does not, and both
    /// are what an HdrHistogram of the same recordings says (not an average of each second's percentiles).
    @Test func latencyIsOverTheRunAndTheLastTenSecondsForEveryOperation() throws {
        let feed = DashboardFeed(Self.header, thresholds: [])
        var all: [Int] = [], recent: [Int] = []
        for t in 1...15 {
            let e2e = t <= 5 ? Array(repeating: 400, count: 20) : (1...12).map { 5 + $0 + t }
            all += e2e
            if t > 5 { recent += e2e }
            feed.publish(Self.second(Double(t), e2eMs: e2e, postMs: t % 2 == 0 ? [30, 35, 40, 45, 50, 55, 60, 65] : []))
        }
        let state = try JSONDecoder().decode(State.self, from: feed.state())
        let ops = state.latest.operations
        // The tiles' histogram first, then by how many each recorded (post recorded more seconds' worth, but fewer values).
        #expect(ops.map(\.name) == ["e2e_latency", "post"], "\(ops.map(\.name))")
        let e2e = ops[0], (whole, last) = (Self.histogram(all), Self.histogram(recent))
        #expect(e2e.run.count == all.count && e2e.recent?.count == recent.count)
        for (shown, p) in [(e2e.run.p50, 50.0), (e2e.run.p90, 90), (e2e.run.p99, 99), (e2e.run.p999, 99.9)] {
            #expect(shown == Double(whole.valueAtPercentile(p)) / 1000, "run p\(p)")
        }
        for (shown, p) in [(e2e.recent!.p50, 50.0), (e2e.recent!.p90, 90), (e2e.recent!.p99, 99), (e2e.recent!.p999, 99.9)] {
            #expect(shown == Double(last.valueAtPercentile(p)) / 1000, "recent p\(p)")
        }
        #expect(e2e.run.p99 > 390 && e2e.recent!.p99 < 40, "the slow seconds are the run's, not the last 10 s's")
        // post: every other second, so 5 of the last 10.
        #expect(ops[1].run.count == 7 * 8 && ops[1].recent?.count == 5 * 8)
        // The chart's points: the last 10 s's p50 and p99 and the run's p99, each second.
        let point = try #require(state.points.last)
        #expect(point.p99Recent == e2e.recent!.p99 && point.p99Run == e2e.run.p99 && point.p50Recent == e2e.recent!.p50)
        // Thresholds are judged on the same run-long histograms.
        let judged = DashboardFeed(Self.header, thresholds: [try Threshold("post.p99 < 50ms")])
        judged.publish(Self.second(1, e2eMs: [], postMs: [10]))
        judged.publish(Self.second(2, e2eMs: [], postMs: [90]))
        judged.publish(Self.second(3, e2eMs: [], postMs: [10, 10]))
        #expect(try JSONDecoder().decode(State.self, from: judged.state()).latest.thresholds.first?.state == "failing")
    }

    @Test func aSecondWithNothingRecordedHasNoRecentFigures() throws {
        var book = LatencyBook()
        book.add(Self.second(1, e2eMs: [10]).interval.histograms)
        for _ in 1...LatencyBook.recentSeconds { book.add([:]) }
        let op = try #require(book.operations(first: "e2e_latency").first)
        #expect(op.run.count == 1 && op.recent == nil)
        #expect(LatencyBook.percentiles(.init(buckets: [], min: 0, max: 0)) == nil)
    }

    /// The table's percentiles, read in one pass over sorted buckets (two seconds' merged), are HdrHistogram's own.
    @Test func bucketPercentilesAreHdrHistogramsOwn() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let a = (0..<Int.random(in: 1...300, using: &rng)).map { _ in Int.random(in: 1...3_000, using: &rng) }
            let b = (0..<Int.random(in: 0...300, using: &rng)).map { _ in Int.random(in: 1...60_000, using: &rng) }
            let merged = LatencyBook.Second(Self.histogram(a)).adding(LatencyBook.Second(Self.histogram(b)))
            let whole = Self.histogram(a + b)
            let shown = LatencyBook.percentiles(merged)
            let truth = [50.0, 90, 99, 99.9].map { Double(whole.valueAtPercentile($0)) / 1000 }
            #expect(shown.map { [$0.p50, $0.p90, $0.p99, $0.p999] } == truth && shown?.count == a.count + b.count)
            // Any percentile, the ends included, as the thresholds ask for them.
            let ps = [0, 0.1, 1, 25, 50, 75, 95, 99.99, 100, 120].filter { _ in Bool.random(using: &rng) }
            #expect(LatencyBook.values(merged, at: ps) == ps.map { whole.valueAtPercentile($0) }, "\(ps)")
        }
    }

    /// A second that recorded nothing, merged in either order, leaves the other's min and max as they were (its 0s are
    /// no recording's): p0 stays the fastest recorded. Found by the random cases above, once in about 20 runs.
    @Test func anEmptySecondDoesNotPullTheMinimumToZero() {
        let recorded = LatencyBook.Second(Self.histogram([28, 40]))
        let empty = LatencyBook.Second(Self.histogram([]))
        let truth = Self.histogram([28, 40]).valueAtPercentile(0)
        for merged in [recorded.adding(empty), empty.adding(recorded)] {
            #expect(merged.min > 0 && LatencyBook.values(merged, at: [0, 100]) == [truth, Self.histogram([28, 40]).valueAtPercentile(100)])
        }
        #expect(LatencyBook.values(empty.adding(empty), at: [0]) == nil)
    }

    /// Each second the thresholds are judged on the run's buckets: the same figures the whole HdrHistogram gives.
    @Test func theThresholdsStatisticIsTheWholeHistogramsOwn() {
        var rng = SystemRandomNumberGenerator()
        var book = LatencyBook()
        var all: [Int] = []
        for _ in 0..<20 {
            let ms = (0..<Int.random(in: 0...40, using: &rng)).map { _ in Int.random(in: 1...900, using: &rng) }
            all += ms
            book.add(Self.second(1, e2eMs: ms).interval.histograms)
        }
        let whole = MetricsSnapshot(histograms: ["e2e_latency": Self.histogram(all)])
        for stat in ["p50", "p99", "p99.9", "p100", "p0", "min", "max", "mean", "count", "median"] {
            #expect(book.statistic("e2e_latency", stat) == whole.statistic("e2e_latency", stat), "\(stat)")
        }
        #expect(book.statistic("signup", "p99") == nil)
    }

    /// Errors each second by kind (the rise of each kind's total), when each kind last rose, and its last failed request.
    @Test func errorsAreChartedEachSecondWithEachKindsLastRequest() throws {
        let feed = DashboardFeed(Self.header, thresholds: [])
        func sample(_ op: String, _ reason: String, _ n: Int, _ answer: String) -> FailureSample {
            FailureSample(operation: op, reason: reason, count: n, request: "POST /rest/v1/locations", answer: answer)
        }
        feed.publish(Self.second(1, e2eMs: [], totals: ["http_errors.503": 2, "http_errors": 2],
                                 failures: [sample("share", "http_503", 2, "503 first")]))
        feed.publish(Self.second(2, e2eMs: [], totals: ["http_errors.503": 2, "http_errors": 2],
                                 failures: [sample("share", "http_503", 2, "503 first")]))
        feed.publish(Self.second(3, e2eMs: [], totals: ["http_errors.503": 5, "http_errors": 6, "http_errors.429": 1, "transport_errors.timeout": 1],
                                 failures: [sample("share", "http_503", 4, "503 older"), sample("share", "http_429", 1, "429 slow down"),
                                            sample("pairing_request", "http_503", 1, "503 newest"), sample("share", "timeout", 1, "timed out")]))
        let state = try JSONDecoder().decode(State.self, from: feed.state())
        #expect(state.points.map(\.errorsNow) == [["http_errors.503": 2], [:], ["http_errors.503": 3, "http_errors.429": 1, "transport_errors.timeout": 1]])
        let notes = state.latest.errorNotes
        #expect(notes["http_errors.503"] == .init(t: 3, last: "pairing_request: POST /rest/v1/locations → 503 newest"), "\(notes)")
        #expect(notes["http_errors.429"]?.last == "share: POST /rest/v1/locations → 429 slow down" && notes["transport_errors.timeout"]?.t == 3)
        #expect(ErrorTimeline.kind("not_joined") == nil && ErrorTimeline.kind("http_abc") == "transport_errors.http_abc")
    }

    /// A shard's seconds carry every histogram and its failures; the merging dashboard's table is the fleet's.
    @Test func aMergingDashboardGetsEveryHistogramAndFailure() throws {
        let shard = DashboardFeed(Self.header, thresholds: [])
        shard.publish(Self.second(1, e2eMs: [10], postMs: [20, 30], failures: [.init(operation: "share", reason: "http_503", count: 2, request: nil, answer: "a")]))
        shard.publish(Self.second(2, e2eMs: [11], postMs: [25]))
        let seconds = try JSONDecoder().decode([DashboardFeed.Second].self, from: shard.seconds(after: 1))
        #expect(seconds.map(\.seq) == [2] && seconds[0].interval.statistic(.post, "count") == 1)
        let both = try JSONDecoder().decode([DashboardFeed.Second].self, from: shard.seconds(after: 0))
        #expect(both.count == 2 && both[0].failures.first?.count == 2 && both[0].interval.statistic(.post, "count") == 2)
        let other = Self.second(1, e2eMs: [12], postMs: [40], failures: [.init(operation: "share", reason: "http_503", count: 3, request: nil, answer: "b")])
        let merged = DashboardMerge.second(latest: [both[0], other], new: both + [other])
        #expect(merged.interval.statistic(.post, "count") == 4 && merged.failures == [.init(operation: "share", reason: "http_503", count: 5, request: nil, answer: "b")])
    }

    struct State: Decodable {
        var points: [DashboardFeed.Point]
        var latest: DashboardFrame
    }
}
