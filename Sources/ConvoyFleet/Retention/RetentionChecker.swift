import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// Checks the backend's retention policy while the run goes (greenbox-prd.md
/// §3.3): at each check a sample of online recipients asks, through the app,
/// for its own oldest updates, and any older than `window + purge interval + grace` is a violation
/// with its overage; rows a recipient received that are younger than
/// `window − grace` must still be there (nothing deleted early). With a
/// service key the whole table is scanned as well. Times are the harness's
/// wall clock against the server's `created_at`: across machines they need
/// synchronised clocks, which the grace absorbs.
public final class RetentionChecker: Sendable {
    /// A stored update as the checker judges it (what the app's retention queries return).
    public typealias Row = StoredUpdate

    /// Findings kept in the report; the counts go on past it.
    static let findingsKept = 20

    struct State {
        var report: RetentionReport
        var kept: Set<Int64> = []
        var early: Set<Int64> = []
        var cursor = 0
        /// Group apps: when each group ended, as first read (its row goes with the purge), and the scan's next group.
        var groupEnds: [String: (at: Double, text: String, byBackend: Bool)] = [:]
        var scanCursor = 0
        /// The earliest creation (or group end) any check saw, Unix seconds: how old the run's oldest row got.
        var earliest: Double?

        /// A check at `now` saw rows created at `createdAt`: how old the run's oldest row is by now, purged or not,
        /// for whether the run could test the limit.
        mutating func saw(createdAt: [Double], now: Double) {
            if let first = createdAt.min() { earliest = min(earliest ?? first, first) }
            if let earliest { report.oldestRowAgeSeconds = max(report.oldestRowAgeSeconds ?? 0, now - earliest) }
        }
    }

    public let policy: RetentionPolicy
    let metrics: Metrics
    let state: Mutex<State>

    /// `afterGroupEnd`: a group app's, whose data goes a set time after its group ends (`RetentionChecker+Groups`).
    public init(policy: RetentionPolicy, metrics: Metrics, afterGroupEnd: Bool = false) {
        self.policy = policy
        self.metrics = metrics
        var report = RetentionReport(windowSeconds: policy.window, purgeEverySeconds: policy.purgeEvery, graceSeconds: policy.grace)
        report.afterGroupEnd = afterGroupEnd
        state = Mutex(State(report: report))
    }

    public var report: RetentionReport { state.withLock { $0.report } }

    // MARK: Judging (no I/O: tests call these with their own times)

    /// Rows someone could read at `now`: each older than the limit is a violation
    /// (counted once per row). Returns the oldest row's age.
    @discardableResult
    public func judge(readable rows: [Row], now: Double, foundBy: String, items: [Int64: String] = [:]) -> Double? {
        let limit = policy.limit
        var fresh: [RetentionReport.Finding] = []
        let oldest = rows.map { now - $0.createdAt }.max()
        state.withLock { s in
            if foundBy == "scan" { s.report.scans += 1 } else { s.report.checks += 1 }
            s.saw(createdAt: rows.map(\.createdAt), now: now)
            for row in rows where now - row.createdAt > limit {
                let age = now - row.createdAt
                // A row seen again is not a new violation, but it has been kept longer still.
                s.report.maxOverageSeconds = max(s.report.maxOverageSeconds ?? 0, age - policy.window)
                guard s.kept.insert(row.id).inserted else { continue }
                var finding = RetentionReport.Finding(kind: "kept_too_long", rowID: row.id, createdAt: row.createdText, ageSeconds: age,
                                                      overageSeconds: age - policy.window, foundBy: foundBy)
                finding.item = items[row.id]
                s.report.violations += 1
                if s.report.findings.count < Self.findingsKept { s.report.findings.append(finding) }
                fresh.append(finding)
            }
        }
        metrics.count(foundBy == "scan" ? .retentionScans : .retentionChecks)
        if !fresh.isEmpty { metrics.count(.retentionViolations, by: fresh.count) }
        return oldest
    }

    /// Rows a recipient received (id, creation time) that should still be there at
    /// `now`, and which of them the backend still has. Rows within a second of
    /// creation or of the window's end are not judged.
    public func judgeEarly(received: [(id: Int64, createdAt: Double)], present: Set<Int64>, now: Double, items: [Int64: String] = [:],
                           foundBy: String = "recipient") {
        let due = Self.dueForEarlyCheck(received, now: now, policy: policy)
        var gone = 0
        state.withLock { s in
            s.saw(createdAt: received.map(\.createdAt), now: now)
            s.report.earlyChecked += due.count
            for row in due where !present.contains(row.id) && s.early.insert(row.id).inserted {
                gone += 1
                s.report.deletedEarly += 1
                if s.report.findings.count < Self.findingsKept {
                    let age = now - row.createdAt
                    var finding = RetentionReport.Finding(kind: "deleted_early", rowID: row.id, createdAt: CommitTimestamp.format(row.createdAt),
                                                          ageSeconds: age, overageSeconds: age - policy.window, foundBy: foundBy)
                    finding.item = items[row.id]
                    s.report.findings.append(finding)
                }
            }
        }
        if gone > 0 { metrics.count(.retentionDeletedEarly, by: gone) }
    }

    static func dueForEarlyCheck(_ rows: [(id: Int64, createdAt: Double)], now: Double, policy: RetentionPolicy) -> [(id: Int64, createdAt: Double)] {
        rows.filter { now - $0.createdAt > 1 && now - $0.createdAt < policy.window - policy.grace - 1 }
    }

    /// One point of the timeline: `t` seconds into the run, the oldest readable row's age.
    public func mark(t: Double, oldestAge: Double?) {
        state.withLock { $0.report.timeline.append(.init(t: t, oldestAgeSeconds: oldestAge)) }
    }
}
