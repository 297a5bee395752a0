import Histogram
import Synchronization

/// A run's measurements: HdrHistograms of durations in microseconds (3
/// significant digits, 1 µs to 1 hour) and counters, recorded from any
/// thread. `snapshot()` copies them out; snapshots merge losslessly (shards).
public final class Metrics: Sendable {
    private struct State {
        var total = MetricsSnapshot()
        /// What was recorded since the last `takeInterval()` (the live, per-second view).
        var interval = MetricsSnapshot()
    }

    private let state = Mutex(State())
    private let observer: (any MetricsObserver)?

    /// `observer` (e.g. a `PrometheusExporter`) sees every recording as it happens.
    public init(observer: (any MetricsObserver)? = nil) { self.observer = observer }

    /// Records one duration, in microseconds (clamped to the trackable range).
    func record(_ name: String, microseconds: UInt64) {
        state.withLock {
            $0.total.record(name, microseconds: microseconds)
            $0.interval.record(name, microseconds: microseconds)
        }
        observer?.recorded(name, microseconds: microseconds)
    }

    /// Records one duration in seconds; NaN is not recorded, negative counts as 0, beyond an hour as an hour.
    func record(_ name: String, seconds: Double) {
        guard !seconds.isNaN else { return }
        record(name, microseconds: seconds <= 0 ? 0 : UInt64(min(seconds * 1e6, Double(MetricsSnapshot.highest))))
    }

    func count(_ name: String, by n: Int = 1) {
        state.withLock {
            $0.total.counters[name, default: 0] += n
            $0.interval.counters[name, default: 0] += n
        }
        observer?.counted(name, by: n)
    }

    /// The counters so far (without copying the histograms).
    public func counters() -> [String: Int] { state.withLock { $0.total.counters } }

    /// Everything recorded so far.
    public func snapshot() -> MetricsSnapshot { state.withLock { $0.total } }

    /// What was recorded since the previous call (or since the start), and a fresh interval.
    public func takeInterval() -> MetricsSnapshot {
        state.withLock { s in
            defer { s.interval = MetricsSnapshot() }
            return s.interval
        }
    }
}

/// Something that sees each recording as it happens (outside `Metrics`'s lock).
public protocol MetricsObserver: Sendable {
    func recorded(_ name: String, microseconds: UInt64)
    func counted(_ name: String, by n: Int)
}

/// Histograms and counters at one moment; Codable, so shards' results can be
/// written and merged later without loss.
public struct MetricsSnapshot: Codable, Sendable, Equatable {
    public var histograms: [String: Histogram<UInt64>] = [:]
    public var counters: [String: Int] = [:]
    /// Counters the run could not measure (a retention check too short to see a row reach its limit): a threshold
    /// on one has no value and fails, as a threshold on a histogram that recorded nothing does.
    public var unmeasured: Set<String>?

    /// One hour, in microseconds: the largest duration a histogram tracks.
    public static let highest: UInt64 = 3_600_000_000

    public init() {}

    /// A histogram as every snapshot makes them (1 µs to an hour, 3 significant digits).
    static func emptyHistogram() -> Histogram<UInt64> {
        Histogram(lowestDiscernibleValue: 1, highestTrackableValue: Self.highest, numberOfSignificantValueDigits: .three)
    }

    public mutating func record(_ name: String, microseconds: UInt64) {
        if histograms[name] == nil { histograms[name] = Self.emptyHistogram() }
        _ = histograms[name]!.record(Swift.min(Swift.max(microseconds, 1), Self.highest))
    }

    /// Adds another snapshot's recordings and counts (histograms losslessly).
    public mutating func merge(_ other: MetricsSnapshot) {
        for (name, h) in other.histograms {
            if histograms[name] == nil { histograms[name] = h } else { histograms[name]!.add(h) }
        }
        for (name, n) in other.counters { counters[name, default: 0] += n }
    }

    /// A histogram's statistic in microseconds: `p50`, `p99`, `p99.9`, `min`, `max`, `mean`, `count`.
    public func statistic(_ name: String, _ stat: String) -> Double? {
        guard let h = histograms[name], h.totalCount > 0 else { return nil }
        switch stat {
        case "min": return Double(h.min)
        case "max": return Double(h.max)
        case "mean": return h.mean
        case "count": return Double(h.totalCount)
        default:
            guard stat.hasPrefix("p"), let p = Double(stat.dropFirst()), p >= 0, p <= 100 else { return nil }
            return Double(h.valueAtPercentile(p))
        }
    }

    /// The percentile distribution in HdrHistogram's `.hgrm` text, in milliseconds.
    public func hgrm(_ name: String) -> String? {
        guard let h = histograms[name] else { return nil }
        var out = ""
        h.outputPercentileDistribution(to: &out, outputValueUnitScalingRatio: 1000)
        return out
    }
}
