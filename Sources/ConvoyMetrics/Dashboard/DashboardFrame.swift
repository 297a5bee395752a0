import Foundation

/// One second of a run as the live dashboard shows it (`convoy run --dashboard`): where the run is, the
/// phones, this second's traffic and latency, what has happened so far (errors by kind, each group, the
/// app's own counters) and each threshold as it stands now. Sent as JSON once a second over Server-Sent
/// Events; the page keeps a window of them for its charts.
public struct DashboardFrame: Codable, Sendable, Equatable {
    /// Seconds since the first arrival (negative during set-up).
    public var t: Double
    public var phase: String
    /// 0…1 over the planned timeline (ramp-up, steady, ramp-down); 1 while draining.
    public var progress: Double
    /// Seconds until the planned end of the ramp-down (0 once past it).
    public var left: Double
    public var devices: Int
    public var onboarded: Int
    public var online: Int
    public var offRealtime: Int
    public var retryQueued: Int
    /// This second: sent (one per friend expected, or a mailbox app's messages) and received.
    public var out: Int
    public var inbound: Int
    /// The histogram the latency figures are of (`e2e_latency`, or `mailbox_latency` for a mailbox app).
    public var latency: String
    /// This second's p50 and p99 of `latency`, milliseconds (nil: nothing arrived).
    public var p50: Double?
    public var p99: Double?
    /// So far.
    public var sent: Int
    public var received: Int
    /// Errors so far by kind (`http_errors.503`, `transport_errors.timeout`, `decrypt_failures.mac`, `*_failures`, `*_failed`).
    public var errors: [String: Int]
    /// This second's errors by kind (those not zero), for the errors chart.
    public var errorsNow: [String: Int] = [:]
    /// Each kind's last second with errors and, for a failed request, the last one and the server's answer.
    public var errorNotes: [String: ErrorNote] = [:]
    /// Every histogram recorded so far, `latency` first: over the run and over the last 10 s.
    public var operations: [Operation] = []
    /// The harness's own processes: this run's, or under `convoy dashboard` each shard's (named by its dashboard).
    public var processes: [Process] = []
    public var groups: [Group]
    /// The app's own counters so far, those not zero (pairing, messages, media, mailbox, probes, retention…).
    public var app: [String: Int]
    public var thresholds: [ThresholdNow]

    public struct Group: Codable, Sendable, Equatable {
        public var name: String
        public var devices: Int
        public var online: Int
        public var offRealtime: Int
        public var sent: Int
        public var received: Int

        enum CodingKeys: String, CodingKey {
            case name, devices, online, sent, received, offRealtime = "off_realtime"
        }

        public init(name: String, devices: Int, online: Int, offRealtime: Int, sent: Int, received: Int) {
            (self.name, self.devices, self.online, self.offRealtime, self.sent, self.received) = (name, devices, online, offRealtime, sent, received)
        }
    }

    enum CodingKeys: String, CodingKey {
        case t, phase, progress, left, devices, onboarded, online, retryQueued = "retry_queued", offRealtime = "off_realtime"
        case out, inbound = "in", latency, p50, p99, sent, received, errors, groups, app, thresholds, operations
        case errorsNow = "errors_now", errorNotes = "error_notes", processes
    }

    /// A harness process this second: its CPU (percent of one core, over the last second), its resident and peak memory.
    public struct Process: Codable, Sendable, Equatable {
        public var name: String
        public var cpu: Double
        public var rssMiB: Double
        public var maxRSSMiB: Double

        public init(name: String, cpu: Double, rssMiB: Double, maxRSSMiB: Double) {
            (self.name, self.cpu, self.rssMiB, self.maxRSSMiB) = (name, cpu, rssMiB, maxRSSMiB)
        }

        enum CodingKeys: String, CodingKey { case name, cpu, rssMiB = "rss_mib", maxRSSMiB = "max_rss_mib" }
    }

    /// A histogram's count and percentiles, milliseconds.
    public struct Percentiles: Codable, Sendable, Equatable {
        public var count: Int
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double

        enum CodingKeys: String, CodingKey { case count, p50, p90, p99, p999 = "p99_9" }
    }

    /// One histogram (an operation's latency: an insert, commit to receipt, a broadcast's ack…): over the run so far,
    /// and over the last 10 s (nil: nothing in them).
    public struct Operation: Codable, Sendable, Equatable {
        public var name: String
        public var run: Percentiles
        public var recent: Percentiles?
    }

    /// When a kind of error last happened (seconds, as `t`), and what it was, where the run knows (a failed request's
    /// operation, method and path, and the server's answer).
    public struct ErrorNote: Codable, Sendable, Equatable {
        public var t: Double
        public var last: String?
    }
}

/// A threshold as it stands: its value so far in its unit (ms, ratio, count) and whether it holds now.
/// `state` is `passing` or `failing` on what was measured so far, `no_data` before anything was, and
/// `at_end` for one on what only the end's accounting knows (loss, delivered): the run cannot say yet.
public struct ThresholdNow: Codable, Sendable, Equatable {
    public var threshold: String
    public var value: Double?
    public var unit: String
    /// passing, failing, no_data, at_end (live); passed, failed, not_tested (at the end).
    public var state: String
    /// Why it has nothing to judge (no_data, not_tested).
    public var why: String?
}

/// How the run ended, sent once after the last frame: the verdict and the figures summary.json holds,
/// so the page's final numbers are the summary's own.
public struct DashboardEnd: Codable, Sendable, Equatable {
    public var exitCode: Int
    public var complete: Bool
    public var passed: Bool
    /// Location apps: the accounting (sent, delivered, lost by reason); nil for an app that shares none.
    public var accounting: Accounting?
    /// Mailbox apps: sent, delivered, lost by reason.
    public var mailbox: MailboxEnd?
    public var thresholds: [ThresholdNow]
    public var counters: [String: Int]
    public var durationSeconds: Double
    /// Where report.html is served (a path on the dashboard), and the results folder.
    public var report: String
    public var results: String
    /// `convoy dashboard`: how each shard ended (nil for one run).
    public var shards: [Shard]?
    /// Why it failed (or, passed, what to know), in report.html's words; shown first.
    public var why: [String]?
    /// The run's own latency over the whole run (e2e for a location app, the mailbox's for a mailbox app), ms.
    public var latency: Latency?

    public struct Latency: Codable, Sendable, Equatable {
        public var name: String
        public var count: Int
        public var p50: Double
        public var p90: Double
        public var p99: Double
        public var p999: Double

        enum CodingKeys: String, CodingKey { case name, count, p50, p90, p99, p999 = "p99_9" }
    }

    public struct Shard: Codable, Sendable, Equatable {
        public var url: String
        public var exitCode: Int
        public var report: String

        enum CodingKeys: String, CodingKey { case url, report, exitCode = "exit_code" }
    }

    public struct MailboxEnd: Codable, Sendable, Equatable {
        public var sent: Int
        public var delivered: Int
        public var lost: [String: Int]
    }

    enum CodingKeys: String, CodingKey {
        case exitCode = "exit_code", complete, passed, accounting, mailbox, thresholds, counters, report, results, shards, why, latency
        case durationSeconds = "duration_s"
    }

    init(exitCode: Int, complete: Bool, passed: Bool, accounting: Accounting?, mailbox: MailboxEnd?, thresholds: [ThresholdNow],
         counters: [String: Int], durationSeconds: Double, report: String, results: String, shards: [Shard]?) {
        (self.exitCode, self.complete, self.passed, self.accounting, self.mailbox) = (exitCode, complete, passed, accounting, mailbox)
        (self.thresholds, self.counters, self.durationSeconds, self.report, self.results, self.shards)
            = (thresholds, counters, durationSeconds, report, results, shards)
    }

    public init(_ summary: RunSummary, report: String, results: String) {
        exitCode = Int(summary.exitCode)
        complete = summary.complete
        passed = summary.passed
        accounting = summary.showsLocations ? summary.accounting : nil
        mailbox = summary.mailbox.map { MailboxEnd(sent: $0.sent, delivered: $0.delivered, lost: $0.lost) }
        thresholds = summary.thresholds.map {
            ThresholdNow(threshold: $0.threshold, value: $0.value, unit: $0.unit,
                         state: $0.untested != nil ? "not_tested" : $0.passed ? "passed" : "failed", why: $0.untested)
        }
        counters = summary.counters
        durationSeconds = summary.durationSeconds
        self.report = report
        self.results = results
        why = summary.failureReasons()
        let name = summary.mailbox != nil ? HistogramName.mailboxLatency.name : HistogramName.e2eLatency.name
        latency = summary.latencyMs[name].map { Latency(name: name, count: $0.count, p50: $0.p50, p90: $0.p90, p99: $0.p99, p999: $0.p999) }
    }
}
