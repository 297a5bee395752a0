import ConvoyMetrics
import Foundation
import Testing

@Suite struct MetricsTests {
    @Test func thresholdsParseEachForm() throws {
        let p99 = try Threshold("e2e_latency.p99 < 500ms")
        #expect(p99.subject == .statistic(histogram: "e2e_latency", stat: "p99") && p99.comparison == .less && p99.limit == 500_000)
        let loss = try Threshold("delivery.loss<0.1%")
        #expect(loss.subject == .ratio("delivery.loss") && loss.limit == 0.001)
        #expect(try Threshold("delivery.loss <= 0.002").limit == 0.002)
        let failures = try Threshold("decrypt_failures == 0")
        #expect(failures.subject == .counter("decrypt_failures") && failures.comparison == .equal && failures.limit == 0)
        #expect(try Threshold("scheduler_lag.p99.9 <= 1ms").subject == .statistic(histogram: "scheduler_lag", stat: "p99.9"))
        #expect(try Threshold("seal.max >= 2s").limit == 2_000_000 && (try Threshold("open.mean != 800us")).comparison == .notEqual)
        // Dotted counters: a family's member, render.dot; an unknown one reads but is refused by name (unknownMetric).
        #expect(try Threshold("lost.retry_expired == 0").subject == .counter("lost.retry_expired"))
        #expect(try Threshold("lost.retry_expired == 0").unknownMetric == nil && (try Threshold("render.dot > 0")).unknownMetric == nil)
        #expect(try Threshold("http_errors.503 <= 10").unknownMetric == nil)
        #expect(try Threshold("something.weird < 3").unknownMetric?.contains("no counter is named something.weird") == true)
        for bad in ["e2e_latency.p99 500ms", "e2e_latency.p99 < fast", "delivery.loss < lots", "something..weird < 3", ".lost < 3", "< 3",
                    "x < nan", "e2e_latency.p99 < -5ms", "e2e_latency.p99 < inf s", "a=<5"] {
            #expect(throws: Threshold.ParseError.self, "\(bad)") { try Threshold(bad) }
        }
    }

    @Test func thresholdsJudgeASnapshot() throws {
        let metrics = Metrics()
        for ms in 1...100 { metrics.record(.e2eLatency, microseconds: UInt64(ms * 1000)) }
        metrics.count(.sent, by: 1000)
        metrics.count(.lost, by: 2)
        let s = metrics.snapshot()
        // p99 of 1…100 ms is 99 ms, within HdrHistogram's 3 significant digits.
        let p99 = try #require(s.statistic("e2e_latency", "p99"))
        #expect(abs(p99 - 99_000) <= 99)
        #expect(try Threshold("e2e_latency.p99 < 100ms").evaluate(s).passed)
        #expect(try !Threshold("e2e_latency.p99 < 50ms").evaluate(s).passed)
        #expect(try Threshold("delivery.loss < 0.3%").evaluate(s).passed)
        #expect(try !Threshold("delivery.loss < 0.1%").evaluate(s).passed)
        #expect(try !Threshold("decrypt_failures == 0").evaluate(s).passed, "nothing was received: not tested, not a pass at 0")
        metrics.count(.received, by: 998)
        #expect(try Threshold("decrypt_failures == 0").evaluate(metrics.snapshot()).passed, "given its chance, an uncounted counter is 0")
        metrics.record(.e2eLatency, seconds: .nan)
        #expect(metrics.snapshot().statistic("e2e_latency", "count") == 100, "NaN is not a duration")
        let never = try Threshold("open.p99 < 1s").evaluate(s)
        #expect(never.value == nil && !never.passed, "nothing measured is not a pass")
    }

    @Test func snapshotsMergeLosslessly() throws {
        let whole = Metrics(), a = Metrics(), b = Metrics()
        var rng = SystemRandomNumberGenerator()
        for i in 0..<20_000 {
            let v = UInt64.random(in: 1...5_000_000, using: &rng)
            whole.record(.post, microseconds: v)
            (i.isMultiple(of: 3) ? a : b).record(.post, microseconds: v)
        }
        a.count(.sent, by: 3)
        b.count(.sent, by: 4)
        var merged = a.snapshot()
        merged.merge(b.snapshot())
        #expect(merged.histograms["post"] == whole.snapshot().histograms["post"])
        #expect(merged.counters["sent"] == 7)
        // Through JSON, as shard results travel.
        let decoded = try JSONDecoder().decode(MetricsSnapshot.self, from: try JSONEncoder().encode(merged))
        #expect(decoded == merged)
        let hgrm = try #require(merged.hgrm("post"))
        #expect(hgrm.contains("Percentile") && hgrm.contains("#[Mean"))
    }
}

/// One grammar for durations: scenario keys, CLI flags and thresholds read the same text the same way.
@Suite struct DurationTextTests {
    @Test(arguments: [("90", 90.0), ("1.5", 1.5), ("250ms", 0.25), ("1.5m", 90), ("1h30m", 5400), ("2d", 172_800), ("1d12h", 129_600),
                      ("800us", 0.0008), ("800µs", 0.0008), ("1m30s", 90)])
    func reads(text: String, seconds: Double) {
        #expect(DurationText.seconds(text) == seconds)
    }

    @Test func refusesWhatIsNotADuration() {
        for bad in ["", "soon", "10x", "5m3", "-5s", "inf", "nan", "1e3s", "30s1m", "1s1s", "0x10", "2h1d", "1us1µs"] {
            #expect(DurationText.seconds(bad) == nil, "\(bad)")
        }
    }

    @Test func thresholdsTakeTheSameDurationsExactlyInMicroseconds() throws {
        #expect(DurationText.microseconds("250ms") == 250_000 && DurationText.microseconds("1m") == 60_000_000)
        #expect(try Threshold("e2e_latency.p99 < 1m").limit == 60_000_000)
        #expect(try Threshold("e2e_latency.p99 < 1h").limit == 3_600_000_000)
        #expect(throws: (any Error).self) { try Threshold("e2e_latency.p99 < 500") }
    }
}

/// metrics.csv's columns, defined once: what a row holds and how shards' rows combine.
@Suite struct MetricsCSVTests {
    @Test func aRowIsTheSecondsCountsAndLatencies() {
        var interval = MetricsSnapshot()
        interval.counters = ["updates": 3, "sent": 7, "received": 6, "duplicate": 1]
        interval.record("e2e_latency", microseconds: 12_000)
        let row = MetricsCSV.row(.init(elapsed: 4.2, phase: "steady", devicesOnline: 9, interval: interval))
        let byName = Dictionary(uniqueKeysWithValues: zip(MetricsCSV.header, row))
        #expect(row.count == MetricsCSV.header.count)
        #expect(byName["t_s"] == "4" && byName["phase"] == "steady" && byName["devices_online"] == "9")
        #expect(byName["updates_per_s"] == "3" && byName["sent_per_s"] == "7" && byName["received_per_s"] == "6")
        #expect(byName["duplicates"] == "1", "the counter is `duplicate`; the column says what it counts")
        #expect(byName["e2e_p50_ms"].flatMap(Double.init).map { abs($0 - 12) < 0.05 } == true && byName["post_p99_ms"] == "")
    }

    @Test func shardsRowsCombineByColumn() {
        #expect(MetricsCSV.merge(of: "sent_per_s") == .sum && MetricsCSV.merge(of: "e2e_p99_ms") == .worst && MetricsCSV.merge(of: "phase") == .first)
        #expect(MetricsCSV.merge(of: "some_old_p90_ms") == .worst && MetricsCSV.merge(of: "some_old_count") == .sum, "an older file's column")
    }
}

/// Metric names are defined once (ConvoyMetrics) and described in docs/results.md.
@Suite struct MetricNameTests {
    static var resultsDoc: String {
        get throws {
            let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/results.md")
            return try String(contentsOf: url, encoding: .utf8)
        }
    }

    /// The text of a `## heading` section, up to the next one.
    static func section(_ heading: String, of doc: String) throws -> String {
        let start = try #require(doc.range(of: "\n## \(heading)\n"))
        let rest = doc[start.upperBound...]
        return String(rest[..<(rest.range(of: "\n## ")?.lowerBound ?? rest.endIndex)])
    }

    /// Every `code` span of a text, split at commas (`seal`, `open` in one cell).
    static func codeSpans(_ text: String) -> Set<String> {
        Set(text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
            .filter { $0.offset % 2 == 1 }.map { String($0.element) })
    }

    @Test func docsDescribeEveryHistogramAndNoOther() throws {
        // The table's first column: `name` (or two, `seal`, `open`).
        let rows = try Self.section("Histograms (microseconds inside, milliseconds in reports)", of: try Self.resultsDoc)
            .split(separator: "\n").filter { $0.hasPrefix("| `") }.map { $0.split(separator: "|")[0] }
        let documented = Self.codeSpans(rows.joined(separator: " "))
        let known = Set(HistogramName.all.map(\.name))
        #expect(known.subtracting(documented).isEmpty, "recorded but not in docs/results.md: \(known.subtracting(documented).sorted())")
        #expect(documented.subtracting(known).isEmpty, "in docs/results.md but never recorded: \(documented.subtracting(known).sorted())")
    }

    @Test func docsDescribeEveryCounterAndNoOther() throws {
        let spans = Self.codeSpans(try Self.section("Counters", of: try Self.resultsDoc))
        let known = Set(CounterName.all.map(\.name))
        #expect(known.subtracting(spans).isEmpty, "counted but not in docs/results.md: \(known.subtracting(spans).sorted())")
        // Besides the counters: the families' `name.<detail>` forms, their details, the ratios, a threshold's example and flags.
        let other = spans.subtracting(known).filter { span in
            !(CounterName.families.contains { span.hasPrefix($0 + ".") } || Threshold.ratios[span] != nil || span.contains(" ") || span.hasPrefix("--"))
        }
        let details = ["cannot_open", "bad_base64", "truncated", "bad_json", "out_of_range"]
        #expect(other.subtracting(details).isEmpty, "in docs/results.md but never counted: \(other.subtracting(details).sorted())")
    }

    @Test func familiesAreKnownByTheirPrefix() {
        #expect(CounterName.isKnown(CounterName.httpErrors(status: 429).name) && CounterName.isKnown("lost.stale"))
        #expect(!CounterName.isKnown("lost.") && !CounterName.isKnown("decrypt_failure") && !CounterName.isKnown("transport_errors"))
    }

    @Test func thresholdsNameOnlyKnownMetrics() throws {
        #expect(try Threshold("decrypt_failures == 0").unknownMetric == nil)
        #expect(try Threshold("pairing_first_update_later.p99 < 10s").unknownMetric == nil)
        #expect(try Threshold("delivery.loss < 1%").unknownMetric == nil)
        let counter = try #require(try Threshold("decrypt_failure == 0").unknownMetric)
        #expect(counter.contains("no counter is named decrypt_failure; did you mean decrypt_failures?"))
        let histogram = try #require(try Threshold("e2e_latncy.p99 < 1s").unknownMetric)
        #expect(histogram.contains("did you mean e2e_latency?"))
        #expect(try Threshold("zzzzzzzz.p99 < 1s").unknownMetric?.contains("did you mean") == false)
    }
}

/// The harness's cost over the steady part: the window bench-peers uses, named by its bounds.
@Suite struct SteadyCostTests {
    /// Each second: 0.01 s of CPU and 50 updates in the steady part, 0.5 s of CPU and none before it (set-up's
    /// arrivals) and after it (the drain): the steady figure sees only the steady part's 200 µs an update.
    static let samples: [CostSample] = (0...60).map { t in
        let steadyCPU = Double(min(max(t - 5, 0), 45)) * 0.01, otherCPU = Double(min(t, 5) + max(t - 50, 0)) * 0.5
        return CostSample(t: Double(t), cpuSeconds: steadyCPU + otherCPU, received: min(max(t - 5, 0), 45) * 50)
    }

    @Test func theSteadyWindowIsFifteenSecondsAfterTheLastArrivalToFiveBeforeTheRampDown() throws {
        let w = try #require(RunSummary.Resources.steady(Self.samples, lastArrival: 5, rampDown: 50))
        #expect(w.fromSeconds == 20 && w.toSeconds == 45)
        #expect(w.received == 25 * 50 && abs(w.cpuSeconds - 0.25) < 1e-9)
        #expect(abs((w.cpuPerDeliveredMicroseconds ?? 0) - 200) < 1e-6, "\(w)")
    }

    @Test func aSteadyPartTooShortToMeasureHasNoFigure() {
        #expect(RunSummary.Resources.steady(Self.samples, lastArrival: 5, rampDown: 34) == nil, "20 s to 29 s: under 10 s")
        #expect(RunSummary.Resources.steady(Array(Self.samples.prefix(25)), lastArrival: 5, rampDown: 50) == nil, "not sampled that far")
    }
}
