import Foundation
import Histogram

/// `summary.json`: a run's result in a versioned, documented schema
/// (docs/results.md). Durations are milliseconds; ratios are fractions.
public struct RunSummary: Codable, Sendable, Equatable {
    /// Bumped when a field changes meaning or goes away (adding fields does not).
    public static let currentVersion = 1

    public var schema = "convoy.run.summary"
    public var version = RunSummary.currentVersion
    public var scenario: String
    public var scenarioFile: String
    public var seed: UInt64
    /// False when the run was interrupted: the figures cover what ran.
    public var complete: Bool
    public var startedAt: Date
    public var endedAt: Date
    /// Seconds from the first arrival to the end of the drain.
    public var durationSeconds: Double
    public var target: Target
    public var devices: Int
    public var accounting: Accounting
    /// Each histogram's statistics, milliseconds.
    public var latencyMs: [String: Statistics]
    public var counters: [String: Int]
    public var thresholds: [ThresholdResult]
    /// Every threshold held.
    public var passed: Bool
    /// The harness process's own cost (with `target: embedded` the backend's too); nil if not measured.
    public var resources: Resources?

    public struct Resources: Codable, Sendable, Equatable {
        /// Before any device existed (before sign-ups).
        public var beforeDevices: ProcessResources
        /// After set-up, as the first device arrived.
        public var timelineStart: ProcessResources
        public var end: ProcessResources
        /// CPU time (user + system) from the first arrival to the end (the drain and the checks after it included),
        /// per delivered update, microseconds.
        public var cpuPerDeliveredMicroseconds: Double?
        /// The same over the steady part alone, per update received in it (`steady(_:lastArrival:rampDown:)`):
        /// what compares with a steady-state figure such as scripts/bench-peers' (nil: too short a steady part).
        public var steady: Window?
        /// (peak resident − resident before any device) ÷ devices, KiB.
        public var memoryPerDeviceKiB: Double?

        enum CodingKeys: String, CodingKey {
            case end
            case beforeDevices = "before_devices"
            case timelineStart = "timeline_start"
            case cpuPerDeliveredMicroseconds = "cpu_per_delivered_us"
            case memoryPerDeviceKiB = "memory_per_device_kib"
            case steady
        }

        public init(beforeDevices: ProcessResources, timelineStart: ProcessResources, end: ProcessResources, delivered: Int, devices: Int) {
            self.beforeDevices = beforeDevices
            self.timelineStart = timelineStart
            self.end = end
            cpuPerDeliveredMicroseconds = delivered > 0 ? (end.cpuSeconds - timelineStart.cpuSeconds) / Double(delivered) * 1e6 : nil
            memoryPerDeviceKiB = devices > 0 ? (end.maxRSSMiB - beforeDevices.rssMiB) * 1024 / Double(devices) : nil
        }
    }

    /// What the retention checker found (nil: not checked).
    public var retention: RetentionReport?
    /// The battery model, per group (nil: not modelled).
    public var battery: BatteryReport?
    /// The hostile devices' probes (nil: none ran). Any leak fails the run.
    public var probes: ProbeSummary?
    /// The network conditions each group ran under (nil: none had any; docs/network.md).
    public var network: [NetworkGroup]?
    /// A group app's groups (Survale's operations) and their auto-end (nil: not a group app).
    public var groups: GroupsReport?
    /// A mailbox app's messages (QuickPic): accounting, ACK-then-delete, polling (nil: not a mailbox app).
    public var mailbox: MailboxReport?
    /// Why requests failed, by operation and reason, each with its first request and answer (nil: none failed).
    public var failures: [FailureSample]?
    /// Whether the app's phones share locations (false: QuickPic, Closer): without them the location accounting and
    /// its cards are left out of the reports rather than shown as zeros (nil, as older summaries have it: true).
    public var sharesLocations: Bool?

    /// The location accounting applies to this run.
    public var showsLocations: Bool { sharesLocations ?? true }

    /// One group's network conditions, as they were applied.
    public struct NetworkGroup: Codable, Sendable, Equatable {
        public var group: String
        /// The preset the conditions start from (`lte`, `3g`, `edge`, `wifi`, `subway`).
        public var preset: String
        public var rttMs: Double
        public var jitterMs: Double
        /// A fraction of segments.
        public var loss: Double
        /// Bits per second; 0: not limited.
        public var upBps: Double
        public var downBps: Double
        /// Mean seconds between connection resets; nil: none.
        public var resetEverySeconds: Double?
        /// The offline windows in words; nil: none.
        public var offline: String?
        /// All of it in one line.
        public var summary: String
        /// Connections the phones opened through their links, and times a phone's connections were cut
        /// (an offline window began, or a reset), over the whole run.
        public var tunnels: Int
        public var cuts: Int
        /// Of the phones' time from arrival to the run's end, the share their offline windows took, as drawn
        /// (nil: no offline windows). A short run draws few windows: its share can be far from the mean the conditions give.
        public var offlineShare: Double?
        /// The share their random offline windows take on average (length ÷ (interval + length)); nil: none random.
        public var offlineMeanShare: Double?
        /// How many random offline windows the group's phones draw, on average, in a run this long: with few (under
        /// `RunSummary.NetworkGroup.fewWindows`) the drawn share can be far from the mean, and decides what a threshold
        /// on their delivery measures.
        public var offlineWindowsExpected: Double?
        /// Of the phones' time from their first subscription to the end, the share their Realtime connection was down:
        /// the offline windows and the reconnect after each (nil: no phone subscribed).
        public var offRealtimeShare: Double?

        /// Fewer expected windows than this and a run's offline share is a draw, not the scenario's mean (at 30, about
        /// ±25 % of it: the windows' count and their exponential lengths both vary).
        public static let fewWindows = 30.0

        /// What a run too small for its random offline windows cannot test, in words; nil when it draws enough of them.
        public var drawNote: String? {
            guard let expected = offlineWindowsExpected, expected < Self.fewWindows, let mean = offlineMeanShare else { return nil }
            let drawn = offlineShare.map { String(format: "%.1f %%", $0 * 100) } ?? "–"
            let more = Int((Self.fewWindows / max(expected, 0.1)).rounded(.up))
            return String(format: "%@ drew about %.1f offline windows in a run this long (under %.0f): its phones were offline %@ of their time "
                          + "against the conditions' mean of %.1f %%, so its delivery and latency thresholds judge this draw, not the scenario "
                          + "as written; %d× the phones or the time holds the share near its mean", group, expected, Self.fewWindows, drawn, mean * 100, more)
        }

        public init(group: String, preset: String, rttMs: Double, jitterMs: Double, loss: Double, upBps: Double, downBps: Double,
                    resetEverySeconds: Double?, offline: String?, summary: String, tunnels: Int, cuts: Int) {
            (self.group, self.preset, self.rttMs, self.jitterMs, self.loss, self.upBps, self.downBps) = (group, preset, rttMs, jitterMs, loss, upBps, downBps)
            (self.resetEverySeconds, self.offline, self.summary, self.tunnels, self.cuts) = (resetEverySeconds, offline, summary, tunnels, cuts)
        }

        enum CodingKeys: String, CodingKey {
            case group, preset, loss, offline, summary, tunnels, cuts
            case offlineShare = "offline_share"
            case offlineMeanShare = "offline_mean_share"
            case offlineWindowsExpected = "offline_windows_expected"
            case offRealtimeShare = "off_realtime_share"
            case rttMs = "rtt_ms"
            case jitterMs = "jitter_ms"
            case upBps = "up_bps"
            case downBps = "down_bps"
            case resetEverySeconds = "reset_every_s"
        }
    }

    /// The exit code `convoy run` returned: 0 passed, 99 thresholds failed, 1 interrupted.
    public var exitCode: Int32

    /// A shard's part of a run, or shards merged (nil: one process ran the whole fleet).
    public var shard: ShardInfo?

    public struct ShardInfo: Codable, Sendable, Equatable {
        public var runID: String
        /// 1-based; nil for a merged result.
        public var shard: Int?
        public var shards: Int
        /// Devices in the whole fleet (`devices` is this part's).
        public var fleetDevices: Int
        /// A shard: updates to friends on other shards, left for `convoy merge` to account for.
        public var sentToOtherShards: Int?
        /// A merged result: the shard folders, in shard order.
        public var folders: [String]?
        /// The scenario as every shard resolved it (seed, groups, graph, timeline), hashed: shards of one run agree.
        public var fleet: String?

        public init(runID: String, shard: Int?, shards: Int, fleetDevices: Int, sentToOtherShards: Int? = nil, folders: [String]? = nil) {
            (self.runID, self.shard, self.shards, self.fleetDevices) = (runID, shard, shards, fleetDevices)
            (self.sentToOtherShards, self.folders) = (sentToOtherShards, folders)
        }

        enum CodingKeys: String, CodingKey {
            case shard, shards, folders
            case fleet
            case runID = "run_id"
            case fleetDevices = "fleet_devices"
            case sentToOtherShards = "sent_to_other_shards"
        }
    }

    public struct Target: Codable, Sendable, Equatable {
        /// `embedded`, `project` or `keys_file`.
        public var kind: String
        public var url: String

        public init(kind: String, url: String) { (self.kind, self.url) = (kind, url) }
    }

    public struct Statistics: Codable, Sendable, Equatable {
        public var count: Int
        public var min: Double
        public var mean: Double
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double
        public var max: Double

        enum CodingKeys: String, CodingKey {
            case count, min, mean, p50, p90, p99, max
            case p999 = "p99.9"
        }
    }

    public struct ThresholdResult: Codable, Sendable, Equatable {
        public var threshold: String
        /// In the threshold's unit: milliseconds for latencies, a fraction for ratios, a count; nil when never measured.
        public var value: Double?
        public var unit: String
        public var passed: Bool
        /// Why the run gave it nothing to judge ("not tested in this run"); nil when it was judged.
        public var untested: String?

        enum CodingKeys: String, CodingKey {
            case threshold, value, unit, passed
            case untested = "not_tested"
        }
    }

    enum CodingKeys: String, CodingKey {
        case schema, version, scenario, seed, complete, target, devices, accounting, counters, thresholds, passed, resources, retention, battery, probes, shard, network
        case groups, mailbox, failures
        case sharesLocations = "shares_locations"
        case scenarioFile = "scenario_file"
        case startedAt = "started_at"
        case endedAt = "ended_at"
        case durationSeconds = "duration_s"
        case latencyMs = "latency_ms"
        case exitCode = "exit_code"
    }

    public init(scenario: String, scenarioFile: String, seed: UInt64, complete: Bool, startedAt: Date, endedAt: Date,
                durationSeconds: Double, target: Target, devices: Int, accounting: Accounting, metrics: MetricsSnapshot,
                thresholds: [Threshold], exitCode: (_ passed: Bool) -> Int32) {
        self.scenario = scenario
        self.scenarioFile = scenarioFile
        self.seed = seed
        self.complete = complete
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.durationSeconds = durationSeconds
        self.target = target
        self.devices = devices
        self.accounting = accounting
        counters = metrics.counters
        latencyMs = metrics.histograms.compactMapValues { h in
            guard h.totalCount > 0 else { return nil }
            func ms(_ p: Double) -> Double { Double(h.valueAtPercentile(p)) / 1000 }
            return Statistics(count: Int(h.totalCount), min: Double(h.min) / 1000, mean: h.mean / 1000, p50: ms(50), p90: ms(90),
                              p99: ms(99), p999: ms(99.9), max: Double(h.max) / 1000)
        }
        self.thresholds = thresholds.map { t in
            let outcome = t.evaluate(metrics)
            switch t.subject {
            case .statistic: return ThresholdResult(threshold: t.text, value: outcome.value.map { $0 / 1000 }, unit: "ms", passed: outcome.passed, untested: outcome.untested)
            case .ratio: return ThresholdResult(threshold: t.text, value: outcome.value, unit: "ratio", passed: outcome.passed, untested: outcome.untested)
            case .counter: return ThresholdResult(threshold: t.text, value: outcome.value, unit: "count", passed: outcome.passed, untested: outcome.untested)
            }
        }
        passed = self.thresholds.allSatisfy(\.passed)
        self.exitCode = exitCode(passed)
    }

    /// What fails a run besides its thresholds: a probe that leaked, a retention
    /// finding (a row kept past the policy, or deleted before it). Each makes
    /// `passed` false and, for a complete run, the exit code `failed`.
    /// Why the run failed (or, passed, what to know), report.html's and the dashboard's "Why it failed": each failed
    /// threshold with its value, probe leaks, retention, auto-end, the mailbox, an accounting that does not close, an
    /// interruption. `code` wraps a name (a threshold, a probe), `text` the rest (for HTML, escaping).
    public func failureReasons(code: (String) -> String = { "`\($0)`" }, text: (String) -> String = { $0 }) -> [String] {
        var why: [String] = []
        for t in thresholds where !t.passed { why.append("threshold \(code(t.threshold)): \(text(Self.value(t)))") }
        if let p = probes, p.leaks > 0 {
            why.append("\(p.leaks) probe leak\(p.leaks == 1 ? "" : "s"): " + p.probes.filter { $0.leaked > 0 }.map { code($0.id) }.joined(separator: ", "))
        }
        if let r = retention, !r.holds { why.append("retention: \(text(r.verdict))") }
        if let g = groups, !g.holds { why.append("auto-end: \(text(g.verdict))") }
        if let m = mailbox, !m.holds { why.append("mailbox: \(text(m.verdict))") }
        if !accounting.closes { why.append("the accounting does not close") }
        if !complete { why.append("the run was interrupted: the figures cover what ran") }
        return why
    }

    public var correctnessFailures: [String] {
        var out: [String] = []
        if let p = probes, p.leaks > 0 { out.append("a probe leaked (see the summary's probes)") }
        if let r = retention, !r.holds { out.append("retention: \(r.verdict)") }
        if let g = groups, !g.holds { out.append("auto-end: \(g.verdict)") }
        if let m = mailbox, !m.holds { out.append("mailbox: \(m.verdict)") }
        return out
    }

    public mutating func applyCorrectness(failed: Int32) {
        guard !correctnessFailures.isEmpty else { return }
        passed = false
        if complete { exitCode = failed }
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    public static func decode(_ data: Data) throws -> RunSummary {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(RunSummary.self, from: data)
    }
}
