import Histogram

/// Every histogram a run records, as the dashboard shows it: over the run so far (whole HdrHistograms, merged each
/// second, which thresholds are judged on too) and over the last `recentSeconds` (each second's non-empty buckets
/// only, so ten seconds of twenty operations cost kilobytes, not the 190 kB a whole histogram holds). One second's
/// p99 at 15 receipts is just the slowest one; the last ten seconds' is a p99.
struct LatencyBook {
    /// Seconds the recent figures are of.
    static let recentSeconds = 10

    /// One second's recordings of a histogram: (bucket value, count), values rising, as `recordedValues()` gives them.
    typealias Buckets = [(value: UInt64, count: UInt64)]

    /// A second's recordings, and the least and greatest value recorded (HdrHistogram clamps a percentile to them).
    struct Second: Sendable {
        var buckets: Buckets
        var min: UInt64
        var max: UInt64

        init(_ h: Histogram<UInt64>) {
            (buckets, min, max) = (h.recordedValues().map { ($0.value, $0.count) }, h.min, h.maxRecorded)
        }
    }

    private(set) var run = MetricsSnapshot()
    private var recent: [[String: Second]] = []

    /// Adds one second's recordings (`buckets`: their non-empty buckets, when already read).
    mutating func add(_ interval: [String: Histogram<UInt64>], buckets: [String: Second]? = nil) {
        run.merge(MetricsSnapshot(histograms: interval))
        recent.append((buckets ?? interval.mapValues(Second.init)).filter { !$0.value.buckets.isEmpty })
        if recent.count > Self.recentSeconds { recent.removeFirst(recent.count - Self.recentSeconds) }
    }

    /// Each histogram recorded so far, `first` (the one the page's tiles are of) first, then by how many it recorded.
    func operations(first: String) -> [DashboardFrame.Operation] {
        let names = run.histograms.filter { $0.value.totalCount > 0 }.map(\.key)
        return names.sorted { a, b in
            let (ca, cb) = (run.histograms[a]!.totalCount, run.histograms[b]!.totalCount)
            return (a == first ? 1 : 0, ca, b) > (b == first ? 1 : 0, cb, a)
        }.map { name in
            DashboardFrame.Operation(name: name, run: Self.percentiles(run.histograms[name]!), recent: recentPercentiles(name))
        }
    }

    /// The last `recentSeconds`' figures of `name` (nil: it recorded nothing in them).
    func recentPercentiles(_ name: String) -> DashboardFrame.Percentiles? {
        var merged: [UInt64: UInt64] = [:]
        var (least, most) = (UInt64.max, UInt64.min)
        for second in recent {
            guard let s = second[name] else { continue }
            for b in s.buckets { merged[b.value, default: 0] += b.count }
            (least, most) = (Swift.min(least, s.min), Swift.max(most, s.max))
        }
        return Self.percentiles(merged.map { ($0.key, $0.value) }.sorted { $0.0 < $1.0 }, within: least...Swift.max(least, most))
    }

    static func percentiles(_ h: Histogram<UInt64>) -> DashboardFrame.Percentiles {
        func ms(_ p: Double) -> Double { Double(h.valueAtPercentile(p)) / 1000 }
        return .init(count: Int(h.totalCount), p50: ms(50), p90: ms(90), p99: ms(99), p999: ms(99.9))
    }

    /// Percentiles of buckets as HdrHistogram reckons them (`valueAtPercentile`: the first bucket whose running count
    /// reaches the percentile's share of the total, rounded up, its highest equivalent value clamped to what was
    /// recorded), so the recent figures read as the run's do.
    static func percentiles(_ buckets: Buckets, within recorded: ClosedRange<UInt64> = 0...UInt64.max) -> DashboardFrame.Percentiles? {
        let total = buckets.reduce(0) { $0 + $1.count }
        guard total > 0 else { return nil }
        func at(_ p: Double) -> Double {
            let wanted = max(1, UInt64((p.nextDown * Double(total) / 100).rounded(.up)))
            var running: UInt64 = 0
            for b in buckets {
                running += b.count
                if running >= wanted { return Double(Swift.min(Swift.max(b.value, recorded.lowerBound), recorded.upperBound)) / 1000 }
            }
            return Double(Swift.min(buckets.last!.value, recorded.upperBound)) / 1000
        }
        return .init(count: Int(total), p50: at(50), p90: at(90), p99: at(99), p999: at(99.9))
    }
}
