import Prometheus
import Synchronization

/// Mirrors a run's measurements into swift-prometheus as they are recorded,
/// for `convoy run --metrics-listen`: each counter as `convoy_<name>_total`,
/// each duration histogram as `convoy_<name>_seconds` (Prometheus buckets
/// from 1 ms to 60 s), and gauges the run sets each second. Names are the
/// summary's with every character Prometheus does not allow made `_`
/// (`lost.not_received` → `convoy_lost_not_received_total`).
public final class PrometheusExporter: MetricsObserver, Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let counters = Mutex<[String: Counter]>([:])
    private let histograms = Mutex<[String: DurationHistogram]>([:])
    private let gauges = Mutex<[String: Gauge]>([:])

    static let buckets: [Duration] = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000]
        .map { .microseconds(Int64($0 * 1000)) }

    public init() {}

    public func recorded(_ name: String, microseconds: UInt64) {
        let h = histograms.withLock { all in
            Self.cached(&all, name) {
                registry.makeDurationHistogram(descriptor: Self.descriptor(name, unit: "seconds", help: "Convoy histogram \(name), seconds"),
                                               buckets: Self.buckets)
            }
        }
        h.record(.microseconds(Int64(clamping: microseconds)))
    }

    public func counted(_ name: String, by n: Int) {
        let c = counters.withLock { all in
            Self.cached(&all, name) { registry.makeCounter(descriptor: Self.descriptor(name, unit: "total", help: "Convoy counter \(name)")) }
        }
        c.increment(by: Int64(n))
    }

    /// Sets a gauge (e.g. `devices_online`), made on first use as `convoy_<name>`.
    public func set(_ name: String, to value: Double) {
        let g = gauges.withLock { all in
            Self.cached(&all, name) { registry.makeGauge(descriptor: Self.descriptor(name, unit: "", help: "Convoy gauge \(name)")) }
        }
        g.set(to: value)
    }

    /// The gauges `convoy run` sets once a second: phones online, seconds since the first arrival, phones off
    /// Realtime, updates waiting in retry queues.
    public static let gauges = ["devices_online", "elapsed_seconds", "realtime_down", "retry_queue"]

    /// Whether `metric` (as Prometheus sees it: `convoy_sent_total`, `convoy_e2e_latency_seconds_bucket`,
    /// `convoy_devices_online`) is one a run can export: a counter Convoy records (a family's member included),
    /// a histogram's series, or a gauge.
    public static func exports(_ metric: String) -> Bool {
        guard metric.hasPrefix("convoy_") else { return false }
        let name = String(metric.dropFirst("convoy_".count))
        if gauges.contains(name) { return true }
        if name.hasSuffix("_total") {
            let counter = String(name.dropLast("_total".count))
            return CounterName.all.contains { sanitize($0.name) == counter }
                || CounterName.families.contains { counter.hasPrefix(sanitize($0) + "_") && counter.count > $0.count + 1 }
        }
        for suffix in ["_seconds_bucket", "_seconds_sum", "_seconds_count", "_seconds"] where name.hasSuffix(suffix) {
            let histogram = String(name.dropLast(suffix.count))
            return HistogramName.all.contains { sanitize($0.name) == histogram }
        }
        return false
    }

    /// Whether `prefix` (`convoy_http_errors_`) begins the counters of one of Convoy's families.
    public static func exportsFamily(_ prefix: String) -> Bool {
        CounterName.families.contains { "convoy_" + sanitize($0) + "_" == prefix }
    }

    /// The text exposition format (version 0.0.4) of everything so far.
    public func exposition() -> String { registry.emitToString() }

    /// The metric made for `name` the first time it is seen, the same one after.
    static func cached<M>(_ all: inout [String: M], _ name: String, _ make: () -> M) -> M {
        if let m = all[name] { return m }
        let m = make()
        all[name] = m
        return m
    }

    /// `convoy_<name>_<unit>` (no unit: `convoy_<name>`).
    static func descriptor(_ name: String, unit: String, help: String) -> MetricNameDescriptor {
        let metric = sanitize(name)
        return MetricNameDescriptor(namespace: "convoy", metricName: metric.isEmpty ? "unnamed" : metric, unitName: unit, helpText: help)
    }

    /// `[a-zA-Z0-9_]`, everything else `_`.
    static func sanitize(_ name: String) -> String {
        String(name.unicodeScalars.map { s -> Character in
            (("a"..."z").contains(s) || ("A"..."Z").contains(s) || ("0"..."9").contains(s) || s == "_") ? Character(s) : "_"
        })
    }
}
