import Foundation

/// What the retention checker saw (summary.json's `retention`): rows kept
/// past the policy (violations, each with its overage) and rows gone before
/// it (deleted early), with a timeline of the oldest row recipients could read.
public struct RetentionReport: Codable, Sendable, Equatable {
    public var windowSeconds: Double
    public var purgeEverySeconds: Double
    public var graceSeconds: Double
    /// window + purge interval + grace: a readable row older than this is a violation.
    public var limitSeconds: Double
    /// Ages count from the end of each group, not from each row's creation (a group app: Survale's
    /// operations are purged a set time after they end, everything of them at once).
    public var afterGroupEnd = false
    /// Recipient checks made (each one device asking for its own oldest rows).
    public var checks = 0
    /// Full-table scans made with the service key (0 without one).
    public var scans = 0
    /// Distinct rows found older than the limit.
    public var violations = 0
    /// The most any of them was past the window, seconds.
    public var maxOverageSeconds: Double?
    /// Rows younger than window − grace that a recipient had received and could no longer read.
    public var deletedEarly = 0
    /// Rows checked for early deletion.
    public var earlyChecked = 0
    /// The first findings of each kind, for the report.
    public var findings: [Finding] = []
    /// At each check, the age of the oldest row any checked recipient could read, seconds since the first arrival.
    public var timeline: [Point] = []
    /// How old the run's oldest row (for a group app: the earliest group end) had become by the last check,
    /// readable or not, seconds: below `limitSeconds`, no row could have been kept too long, so the run did not
    /// test that (nil: no row seen).
    public var oldestRowAgeSeconds: Double?

    /// Whether a row could have been found kept too long: the oldest reached the limit before the last check.
    public var keptTooLongTestable: Bool { (oldestRowAgeSeconds ?? 0) >= limitSeconds }

    /// The counters this run could not measure (thresholds on them fail as not measured, never pass as 0):
    /// `retention_violations` when no row got old enough, `retention_deleted_early` when no young row was looked for.
    public var unmeasured: Set<String> {
        var out: Set<String> = []
        if !keptTooLongTestable { out.insert("retention_violations") }
        if earlyChecked == 0 { out.insert("retention_deleted_early") }
        return out
    }

    public struct Finding: Codable, Sendable, Equatable {
        /// `kept_too_long` or `deleted_early`.
        public var kind: String
        public var rowID: Int64
        public var createdAt: String
        /// The row's age when it was found (kept too long) or found missing (deleted early), seconds.
        public var ageSeconds: Double
        /// How far past the window (kept too long), or how far short of it (deleted early), seconds.
        public var overageSeconds: Double
        /// `recipient` (the row's own recipient could read it) or `scan` (the service-key scan).
        public var foundBy: String
        /// What was found when it is not one row (`afterGroupEnd`): the group and the kind, e.g. `operation 1f0c…: messages`.
        public var item: String?

        public init(kind: String, rowID: Int64, createdAt: String, ageSeconds: Double, overageSeconds: Double, foundBy: String) {
            (self.kind, self.rowID, self.createdAt, self.ageSeconds, self.overageSeconds, self.foundBy)
                = (kind, rowID, createdAt, ageSeconds, overageSeconds, foundBy)
        }

        enum CodingKeys: String, CodingKey {
            case kind
            case rowID = "row_id"
            case createdAt = "created_at"
            case ageSeconds = "age_s"
            case overageSeconds = "overage_s"
            case foundBy = "found_by"
            case item
        }
    }

    public struct Point: Codable, Sendable, Equatable {
        public var t: Double
        public var oldestAgeSeconds: Double?

        public init(t: Double, oldestAgeSeconds: Double?) { (self.t, self.oldestAgeSeconds) = (t, oldestAgeSeconds) }

        enum CodingKeys: String, CodingKey {
            case t = "t_s"
            case oldestAgeSeconds = "oldest_age_s"
        }
    }

    /// Nothing kept too long and nothing deleted early.
    public var holds: Bool { violations == 0 && deletedEarly == 0 }

    /// One line a person reads: what was kept too long, or that the policy held.
    public var verdict: String {
        func s(_ x: Double) -> String { String(format: "%.1f s", x) }
        func things(_ n: Int) -> String { afterGroupEnd ? "\(n) kind\(n == 1 ? "" : "s") of a group's data" : "\(n) row\(n == 1 ? "" : "s")" }
        let window = afterGroupEnd ? "\(s(windowSeconds)) window after the group ended" : "\(s(windowSeconds)) window"
        var parts: [String] = []
        if violations > 0 {
            parts.append("\(things(violations)) kept too long: readable up to \(s(maxOverageSeconds ?? 0)) past the \(window) (limit \(s(limitSeconds)) with the purge interval and grace)")
        }
        if deletedEarly > 0 {
            parts.append("\(things(deletedEarly)) deleted before the \(window) ended")
        }
        if parts.isEmpty, checks + scans > 0, !keptTooLongTestable {
            let needs = Self.duration(limitSeconds)
            let oldest = oldestRowAgeSeconds.map { "oldest \(afterGroupEnd ? "group ended" : "row") \(Self.duration($0))\(afterGroupEnd ? " before" : "")" }
                ?? "no row seen"
            let early = earlyChecked == 0 ? "deleted early: not checked either" : "nothing deleted early (\(earlyChecked) looked for)"
            return "kept too long: not testable in this run (\(oldest); needs ≥ \(needs)); \(early)"
        }
        if parts.isEmpty {
            if afterGroupEnd {
                return checks + scans == 0 ? "not checked" : "held: \(checks) checks\(scans > 0 ? " and \(scans) scans" : ""), nothing of a group readable past \(s(limitSeconds)) after its end, nothing gone before \(s(windowSeconds - graceSeconds)) (\(earlyChecked) looked for)"
            }
            return checks == 0 ? "not checked" : "held: \(checks) checks\(scans > 0 ? " and \(scans) scans" : ""), no row past \(s(limitSeconds)), no young row deleted early (\(earlyChecked) looked for)"
        }
        return parts.joined(separator: "; ")
    }

    /// `62 s`, `10 min 30 s`, `7 d 1 h` (the reports' way to say a duration; Closer's reminders say theirs with it).
    public static func duration(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        let parts = [(s / 86_400, "d"), (s % 86_400 / 3600, "h"), (s % 3600 / 60, "min"), (s % 60, "s")].filter { $0.0 > 0 }
        return parts.isEmpty ? "0 s" : parts.prefix(2).map { "\($0.0) \($0.1)" }.joined(separator: " ")
    }

    public init(windowSeconds: Double, purgeEverySeconds: Double, graceSeconds: Double) {
        (self.windowSeconds, self.purgeEverySeconds, self.graceSeconds) = (windowSeconds, purgeEverySeconds, graceSeconds)
        limitSeconds = windowSeconds + purgeEverySeconds + graceSeconds
    }

    enum CodingKeys: String, CodingKey {
        case checks, scans, violations, findings, timeline
        case afterGroupEnd = "after_group_end"
        case windowSeconds = "window_s"
        case purgeEverySeconds = "purge_every_s"
        case graceSeconds = "grace_s"
        case limitSeconds = "limit_s"
        case maxOverageSeconds = "max_overage_s"
        case deletedEarly = "deleted_early"
        case earlyChecked = "early_checked"
        case oldestRowAgeSeconds = "oldest_row_age_s"
    }
}
