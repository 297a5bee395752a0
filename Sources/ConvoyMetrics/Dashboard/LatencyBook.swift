import Histogram

/// Every histogram a run records, as the dashboard shows it: over the run so far and over the last `recentSeconds`. One
/// second's p99 at 15 receipts is just the slowest one; the last ten seconds' is a p99.
///
/// The run's whole HdrHistograms are kept for the thresholds (merged each second). The table's figures come from the
/// same recordings kept as sorted non-empty buckets (the run's merged into one list, each recent second's apart), read in
/// one pass for all four percentiles: HdrHistogram's own `valueAtPercentile` runs its generic code unspecialized from
/// here, and at twenty histograms, four percentiles each, it took some 15 ms a second at 3,000 phones.
struct LatencyBook {
    /// Seconds the recent figures are of.
    static let recentSeconds = 10

    /// Recordings of a histogram: (bucket value, count), values rising, as `recordedValues()` gives them, with the least
    /// and greatest value recorded (HdrHistogram clamps a percentile to them).
    struct Second: Sendable {
        var buckets: [(value: UInt64, count: UInt64)]
        var min: UInt64
        var max: UInt64

        init(_ h: Histogram<UInt64>) {
            // An empty one (most of a run's, most seconds) without walking it.
            guard h.totalCount > 0 else {
                (buckets, min, max) = ([], 0, 0)
                return
            }
            (buckets, min, max) = (h.recordedValues().map { ($0.value, $0.count) }, h.min, h.maxRecorded)
        }

        init(buckets: [(value: UInt64, count: UInt64)], min: UInt64, max: UInt64) { (self.buckets, self.min, self.max) = (buckets, min, max) }

        var total: UInt64 { buckets.reduce(0) { $0 + $1.count } }

        /// Both recordings as one (a merge of the two sorted lists). An empty one's min and max (0) are no
        /// recording's: they are not taken into the other's.
        func adding(_ other: Second) -> Second {
            if other.buckets.isEmpty { return self }
            if buckets.isEmpty { return other }
            var out: [(value: UInt64, count: UInt64)] = []
            out.reserveCapacity(buckets.count + other.buckets.count)
            var (i, j) = (0, 0)
            while i < buckets.count || j < other.buckets.count {
                if j == other.buckets.count || (i < buckets.count && buckets[i].value < other.buckets[j].value) {
                    out.append(buckets[i]); i += 1
                } else if i == buckets.count || other.buckets[j].value < buckets[i].value {
                    out.append(other.buckets[j]); j += 1
                } else {
                    out.append((buckets[i].value, buckets[i].count + other.buckets[j].count)); i += 1; j += 1
                }
            }
            return Second(buckets: out, min: Swift.min(min, other.min), max: Swift.max(max, other.max))
        }
    }

    /// The run's whole histograms, for the thresholds.
    private(set) var run = MetricsSnapshot()
    private var runBuckets: [String: Second] = [:]
    /// Each histogram's run figures, worked out again only in a second it recorded something.
    private var runFigures: [String: DashboardFrame.Percentiles] = [:]
    private var recent: [[String: Second]] = []

    /// Adds one second's recordings (`buckets`: their non-empty buckets, when already read).
    mutating func add(_ interval: [String: Histogram<UInt64>], buckets: [String: Second]? = nil) {
        run.merge(MetricsSnapshot(histograms: interval))
        let second = (buckets ?? interval.mapValues(Second.init)).filter { !$0.value.buckets.isEmpty }
        for (name, s) in second {
            let merged = runBuckets[name].map { $0.adding(s) } ?? s
            runBuckets[name] = merged
            runFigures[name] = Self.percentiles(merged)
        }
        recent.append(second)
        if recent.count > Self.recentSeconds { recent.removeFirst(recent.count - Self.recentSeconds) }
    }

    /// Each histogram recorded so far, `first` (the one the page's tiles are of) first, then by how many it recorded.
    func operations(first: String) -> [DashboardFrame.Operation] {
        runFigures.sorted { a, b in (a.key == first ? 1 : 0, a.value.count, b.key) > (b.key == first ? 1 : 0, b.value.count, a.key) }.map { name, run in
            DashboardFrame.Operation(name: name, run: run, recent: recentPercentiles(name))
        }
    }

    /// A statistic of the run so far in microseconds, as `MetricsSnapshot.statistic` gives it: a percentile (`p99`,
    /// `p99.9`) from the buckets, the others (`min`, `max`, `mean`, `count`) from the whole histogram. Thresholds are
    /// judged each second on these.
    func statistic(_ name: String, _ stat: String) -> Double? {
        guard stat.hasPrefix("p"), let p = Double(stat.dropFirst()), p >= 0, p <= 100 else { return run.statistic(name, stat) }
        return runBuckets[name].flatMap { Self.values($0, at: [p]) }.map { Double($0[0]) }
    }

    /// The last `recentSeconds`' figures of `name` (nil: it recorded nothing in them).
    func recentPercentiles(_ name: String) -> DashboardFrame.Percentiles? {
        var merged: Second?
        for second in recent { if let s = second[name] { merged = merged.map { $0.adding(s) } ?? s } }
        return merged.flatMap(Self.percentiles)
    }

    /// p50, p90, p99 and p99.9 of recordings (milliseconds), as summary.json gives them (`values`). Nil: nothing recorded.
    static func percentiles(_ s: Second) -> DashboardFrame.Percentiles? {
        values(s, at: [50, 90, 99, 99.9]).map { v in
            .init(count: Int(s.total), p50: Double(v[0]) / 1000, p90: Double(v[1]) / 1000, p99: Double(v[2]) / 1000, p999: Double(v[3]) / 1000)
        }
    }

    /// Percentiles `ps` (rising, 0 to 100) of recordings as HdrHistogram reckons them (`valueAtPercentile`: p0 the
    /// least recorded, p100 the greatest, others the first bucket whose running count reaches the percentile's share of
    /// the total, rounded up, its value clamped to what was recorded), all in one pass. Nil: nothing recorded.
    static func values(_ s: Second, at ps: [Double]) -> [UInt64]? {
        let total = s.total
        guard total > 0 else { return nil }
        let wanted = ps.map { p in p >= 100 ? total + 1 : Swift.max(1, UInt64((Swift.max(p.nextDown, 0) * Double(total) / 100).rounded(.up))) }
        var found = ps.map { $0 == 0 ? s.min : s.max }
        var (running, k) = (UInt64(0), 0)
        for b in s.buckets where k < ps.count {
            running += b.count
            while k < ps.count, running >= wanted[k] {
                if ps[k] != 0 { found[k] = Swift.min(Swift.max(b.value, s.min), s.max) }
                k += 1
            }
        }
        return found
    }
}
