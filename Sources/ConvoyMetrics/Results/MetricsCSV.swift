import Foundation

/// `metrics.csv`, one row a second of a run, defined once: each column's name,
/// how it is made from that second's measurements, and how the rows of
/// several shards for the same second combine (`convoy merge`). `convoy run`
/// writes rows with `row`, the report and the merge read columns by these names.
public enum MetricsCSV {
    /// How one column of several shards' rows for a second combines.
    public enum Merge: Sendable {
        /// Counts and devices online add up.
        case sum
        /// Percentiles of parts do not add: the worst shard's.
        case worst
        /// The first shard's (the time, the phase).
        case first
    }

    public struct Column: Sendable {
        public let name: String
        public let merge: Merge
        /// The value for one second: its elapsed time, phase, devices online and what was recorded in it.
        let value: @Sendable (Second) -> String
    }

    /// What one row is made of.
    public struct Second: Sendable {
        public var elapsed: Double
        public var phase: String
        public var devicesOnline: Int
        public var interval: MetricsSnapshot
        /// Phones that lost Realtime and are not back, and updates waiting in retry queues, at that second.
        public var realtimeDown: Int
        public var retryQueued: Int

        public init(elapsed: Double, phase: String, devicesOnline: Int, interval: MetricsSnapshot, realtimeDown: Int = 0, retryQueued: Int = 0) {
            (self.elapsed, self.phase, self.devicesOnline, self.interval) = (elapsed, phase, devicesOnline, interval)
            (self.realtimeDown, self.retryQueued) = (realtimeDown, retryQueued)
        }
    }

    // The columns the report reads, by name.
    public static let time = "t_s"
    public static let phase = "phase"
    public static let devicesOnline = "devices_online"
    public static let updates = "updates_per_s"
    public static let sent = "sent_per_s"
    public static let received = "received_per_s"
    public static let e2eP50 = "e2e_p50_ms"
    public static let e2eP99 = "e2e_p99_ms"
    public static let postP50 = "post_p50_ms"
    public static let postP99 = "post_p99_ms"
    public static let schedulerLagP99 = "scheduler_lag_p99_ms"
    public static let httpErrors = "http_errors"
    public static let decryptFailures = "decrypt_failures"
    public static let staleRejected = "stale_rejected"
    public static let duplicates = "duplicates"
    public static let reconnects = "reconnects"
    public static let realtimeDown = "realtime_down"
    public static let retryQueued = "retry_queued"
    /// Mailbox apps' (QuickPic) messages: sent, opened by their recipients, and their latency.
    public static let messagesSent = "messages_sent_per_s"
    public static let messagesReceived = "messages_received_per_s"
    public static let messageP50 = "message_p50_ms"
    public static let messageP99 = "message_p99_ms"

    /// Every column, in the file's order.
    public static let columns: [Column] = [
        Column(name: time, merge: .first) { String(format: "%.0f", $0.elapsed) },
        Column(name: phase, merge: .first) { $0.phase },
        Column(name: devicesOnline, merge: .sum) { String($0.devicesOnline) },
        count(updates, .updates), count(sent, .sent), count(received, .received),
        milliseconds(e2eP50, .e2eLatency, "p50"), milliseconds(e2eP99, .e2eLatency, "p99"),
        milliseconds(postP50, .post, "p50"), milliseconds(postP99, .post, "p99"),
        milliseconds(schedulerLagP99, .schedulerLag, "p99"),
        count(httpErrors, .httpErrors), count(decryptFailures, .decryptFailures),
        count(staleRejected, .staleRejected), count(duplicates, .duplicate), count(reconnects, .reconnects),
        Column(name: realtimeDown, merge: .sum) { String($0.realtimeDown) },
        Column(name: retryQueued, merge: .sum) { String($0.retryQueued) },
        count(messagesSent, .mailboxSent), count(messagesReceived, .mailboxReceived),
        milliseconds(messageP50, .mailboxLatency, "p50"), milliseconds(messageP99, .mailboxLatency, "p99"),
    ]

    public static var header: [String] { columns.map(\.name) }

    /// One second's row.
    public static func row(_ second: Second) -> [String] { columns.map { $0.value(second) } }

    /// How `name` combines across shards; a column this build does not write (an older file's) by its suffix.
    public static func merge(of name: String) -> Merge {
        if let column = columns.first(where: { $0.name == name }) { return column.merge }
        return name.hasSuffix("_ms") ? .worst : .sum
    }

    /// A counter's count in the second.
    static func count(_ name: String, _ counter: CounterName) -> Column {
        Column(name: name, merge: .sum) { String($0.interval.counters[counter]) }
    }

    /// A histogram's statistic in the second, milliseconds (empty when nothing was recorded).
    static func milliseconds(_ name: String, _ histogram: HistogramName, _ statistic: String) -> Column {
        Column(name: name, merge: .worst) { s in s.interval.statistic(histogram, statistic).map { String(format: "%.3f", $0 / 1000) } ?? "" }
    }
}
