/// A second's frame from what the run knows, and which counters the page shows as errors and as the app's.
extension DashboardFeed {
    /// `measured`: the run so far (its counters the totals), `book` its histograms' buckets (percentiles are read from
    /// these, in one pass: HdrHistogram's own `valueAtPercentile` runs its generic code unspecialized from here).
    static func frame(_ s: Second, header: Header, thresholds: [Threshold], measured: MetricsSnapshot, book: LatencyBook? = nil) -> DashboardFrame {
        // An app that shares no locations sends messages through a mailbox: its figures are those; an app of actions
        // alone, its actions'.
        if header.actionsAlone { return actionsFrame(s, header: header, thresholds: thresholds, measured: measured, book: book) }
        let mailbox = !header.sharesLocations
        let latency: HistogramName = mailbox ? .mailboxLatency : .e2eLatency
        let (sent, received): (CounterName, CounterName) = mailbox ? (.mailboxSent, .mailboxReceived) : (.sent, .received)
        let (planned, progress) = progress(s, header: header)
        func ms(_ stat: String) -> Double? { second(s, latency.name, stat).map { $0 / 1000 } }
        return DashboardFrame(
            t: s.elapsed, phase: s.phase, progress: progress, left: max(planned - max(s.elapsed, 0), 0), devices: header.devices,
            onboarded: s.onboarded, online: s.online, offRealtime: s.offRealtime, retryQueued: s.retryQueued,
            out: s.interval.counters[sent.name] ?? 0, inbound: s.interval.counters[received.name] ?? 0, latency: latency.name,
            p50: ms("p50"), p99: ms("p99"), sent: s.totals[sent.name] ?? 0, received: s.totals[received.name] ?? 0,
            errors: errorsByKind(s.totals), groups: s.groups, app: appCounters(s.totals),
            thresholds: thresholds.map { now($0, measured, book: book) })
    }

    /// This second's statistic of a histogram, microseconds: a percentile from its buckets when the feed has read them.
    static func second(_ s: Second, _ name: String, _ stat: String) -> Double? {
        guard let b = s.buckets?[name], stat.hasPrefix("p"), let p = Double(stat.dropFirst()), p >= 0, p <= 100 else {
            return s.interval.statistic(name, stat)
        }
        return LatencyBook.values(b, at: [p]).map { Double($0[0]) }
    }

    /// An app of actions alone: sent is the actions made, received those that succeeded (made, less failed), and the
    /// latency the action made most so far (this second's p50 and p99, as every other app's).
    static func actionsFrame(_ s: Second, header: Header, thresholds: [Threshold], measured: MetricsSnapshot, book: LatencyBook?) -> DashboardFrame {
        let names = header.actions ?? []
        func sum(_ counters: [String: Int], _ prefix: String) -> Int { names.reduce(0) { $0 + (counters[prefix + $1] ?? 0) } }
        let made = (sum(s.totals, "actions."), sum(s.interval.counters, "actions."))
        let failed = (sum(s.totals, "action_failures."), sum(s.interval.counters, "action_failures."))
        let most = names.max { (s.totals["actions." + $0] ?? 0, $1) < (s.totals["actions." + $1] ?? 0, $0) } ?? ""
        func ms(_ stat: String) -> Double? { second(s, most, stat).map { $0 / 1000 } }
        let (planned, progress) = progress(s, header: header)
        return DashboardFrame(
            t: s.elapsed, phase: s.phase, progress: progress, left: max(planned - max(s.elapsed, 0), 0), devices: header.devices,
            onboarded: s.onboarded, online: s.online, offRealtime: s.offRealtime, retryQueued: s.retryQueued,
            out: made.1, inbound: max(made.1 - failed.1, 0), latency: most, p50: ms("p50"), p99: ms("p99"),
            sent: made.0, received: max(made.0 - failed.0, 0), errors: errorsByKind(s.totals), groups: s.groups, app: appCounters(s.totals),
            thresholds: thresholds.map { now($0, measured, book: book) })
    }

    /// The run's planned length, and how far through it the second is (0 before the timeline, 1 from the drain on).
    static func progress(_ s: Second, header: Header) -> (planned: Double, progress: Double) {
        let planned = max(header.planned, 1)
        let progress: Double = switch s.phase {
        case "onboarding", "pairing", "waiting": 0
        case "draining", "done": 1
        default: min(max(s.elapsed / planned, 0), 1)
        }
        return (planned, progress)
    }

    /// Families whose breakdown names the kind of error.
    static let errorFamilies = ["http_errors", "transport_errors", "decrypt_failures", "messages_failed", "media_failed", "mailbox_send_failed",
                                "action_failures"]

    /// Errors by kind: a family's breakdown (`http_errors.503`), else the family's total, and every other counter
    /// of failures (`*_failures`, `*_failed`) that is not zero.
    public static func errorsByKind(_ totals: [String: Int]) -> [String: Int] {
        var out: [String: Int] = [:]
        for (name, n) in totals where n > 0 {
            if errorFamilies.contains(where: { name.hasPrefix($0 + ".") }) {
                out[name] = n
            } else if errorFamilies.contains(name) || name.hasSuffix("_failures") || name.hasSuffix("_failed") {
                let broken = totals.contains { $0.key.hasPrefix(name + ".") && $0.value > 0 }
                if !broken { out[name] = n }
            }
        }
        return out
    }

    /// The app's own counters: what its phones did beyond locations (pairing, messages, media, mailbox,
    /// probes, retention checks, migration, presence, joins, direct messages, live fixes, a declared app's actions).
    static let appPrefixes = ["pairing_", "mailbox_", "messages_", "media_", "direct_", "probe_", "retention_", "migration_",
                              "presence_", "join_", "group_", "replay", "archive", "chat_", "live_", "relogin", "actions.", "action_skipped."]

    static func appCounters(_ totals: [String: Int]) -> [String: Int] {
        totals.filter { name, n in n > 0 && appPrefixes.contains { name.hasPrefix($0) } }
    }

    /// Counters only the end's accounting fills in: a threshold on one cannot be judged during the run.
    static let settledAtEnd = ["lost", "delivered", "mailbox_lost", "mailbox_delivered", "messages_lost", "media_lost", "direct_lost"]

    static func atEnd(_ counter: String) -> Bool {
        settledAtEnd.contains { counter == $0 || counter.hasPrefix($0 + ".") }
    }

    static func now(_ t: Threshold, _ measured: MetricsSnapshot, book: LatencyBook? = nil) -> ThresholdNow {
        let unit: String
        var pending = false
        switch t.subject {
        case .statistic: unit = "ms"
        case .counter(let c): (unit, pending) = ("count", atEnd(c))
        case .ratio(let r):
            unit = "ratio"
            if let (n, d) = Threshold.ratios[r] { pending = atEnd(n) || atEnd(d) }
        }
        guard !pending else { return ThresholdNow(threshold: t.text, value: nil, unit: unit, state: "at_end") }
        let outcome = t.evaluate(measured, statistic: book.map { b in { b.statistic($0, $1) } })
        guard let value = outcome.value else { return ThresholdNow(threshold: t.text, value: nil, unit: unit, state: "no_data", why: outcome.untested) }
        return ThresholdNow(threshold: t.text, value: unit == "ms" ? value / 1000 : value, unit: unit, state: outcome.passed ? "passing" : "failing")
    }
}

/// Errors over time: each second's by kind (the rise of each kind's total), when each kind last rose, and the last
/// failed request of each kind the run describes (an HTTP status's, a transport error's).
struct ErrorTimeline {
    private var before: [String: Int] = [:]
    private var notes: [String: DashboardFrame.ErrorNote] = [:]

    /// This second's errors by kind from the totals so far (`DashboardFeed.errorsByKind`), and every kind's note.
    mutating func add(_ totals: [String: Int], at t: Double, failures: [FailureSample])
        -> (now: [String: Int], notes: [String: DashboardFrame.ErrorNote]) {
        var now: [String: Int] = [:]
        for (kind, n) in totals where n > (before[kind] ?? 0) {
            now[kind] = n - (before[kind] ?? 0)
            notes[kind, default: .init(t: t)].t = t
        }
        before = totals
        // The samples come oldest first: a kind's last is the newest of its operations'.
        for f in failures {
            guard let kind = Self.kind(f.reason), notes[kind] != nil else { continue }
            notes[kind]!.last = "\(f.operation): \(f.request.map { "\($0) → " } ?? "")\(f.answer)"
        }
        return (now, notes)
    }

    /// The error kind (`DashboardFeed.errorsByKind`'s name) a failure's reason is counted under: `http_503` under
    /// `http_errors.503`, a transport error's under `transport_errors.KIND`; nil for one counted otherwise.
    static func kind(_ reason: String) -> String? {
        if reason.hasPrefix("http_"), Int(reason.dropFirst(5)) != nil { return "http_errors." + reason.dropFirst(5) }
        if ["unexpected_response", "not_joined", "error"].contains(reason) { return nil }
        return "transport_errors." + reason
    }
}
