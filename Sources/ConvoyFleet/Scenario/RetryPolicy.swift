/// What a phone does with an update whose insert failed (docs/recovery.md):
/// nothing (`none`: it is lost with the failure's reason), or keep it in a
/// bounded queue and post it again with exponential backoff and full jitter
/// until it is `maxAge` old (`retry`). Only failures a retry can cure are
/// queued: no answer (transport), 408, 429, 5xx, and 401 after the phone
/// has renewed its session; any other refusal (a 403 from a policy, a 400)
/// is lost at once.
public struct RetryPolicy: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable {
        case none, retry
    }

    public var mode: Mode
    /// The first wait and the longest, seconds; each failed attempt doubles the wait up to the longest.
    public var backoff: ClosedRange<Double>
    /// An update not posted within this of its tick is given up (`lost.retry_expired`), seconds.
    public var maxAge: Double
    /// Updates a phone holds; beyond this the oldest is given up (`lost.retry_queue_full`).
    public var queue: Int

    public init(mode: Mode = .none, backoff: ClosedRange<Double> = 1...30, maxAge: Double = 300, queue: Int = 500) {
        (self.mode, self.backoff, self.maxAge, self.queue) = (mode, backoff, maxAge, queue)
    }

    public static let none = RetryPolicy()

    /// Whether a failed insert is worth another attempt: no answer at all, or a status that says "later".
    public static func isRetryable(status: Int?) -> Bool {
        guard let status else { return true }
        return status == 401 || status == 408 || status == 429 || (500...599).contains(status)
    }

    /// The wait before attempt `attempt` (1 is the first retry): full jitter over min(longest, first × 2^(attempt−1)),
    /// never under a tenth of the first wait. `unit` is a draw in [0, 1).
    public func delay(attempt: Int, unit: Double) -> Double {
        let ceiling = min(backoff.upperBound, backoff.lowerBound * Double(1 << min(max(attempt - 1, 0), 20)))
        return max(backoff.lowerBound / 10, ceiling * unit)
    }
}

import Yams

extension Reader {
    /// `retry: none`, or `retry: {policy: retry, backoff: 1s..30s, max_age: 5m, queue: 500}`.
    func retryPolicy() throws(ScenarioError) -> RetryPolicy {
        if case .scalar = node {
            var p = RetryPolicy()
            p.mode = try choice(RetryPolicy.Mode.self)
            return p
        }
        let m = try mapping(["policy", "backoff", "max_age", "queue"])
        var p = RetryPolicy(mode: try m["policy"]?.choice(RetryPolicy.Mode.self) ?? .retry)
        if let b = m["backoff"] { p.backoff = try b.range() }
        if let a = m["max_age"] { p.maxAge = try a.duration(minimum: 1) }
        if let q = m["queue"] { p.queue = try q.int(1...100_000) }
        if p.mode == .none, let extra = ["backoff", "max_age", "queue"].first(where: { m[$0] != nil }) {
            throw m[extra]!.error("\(extra) applies to policy: retry")
        }
        if p.maxAge < p.backoff.lowerBound { throw m["max_age"]!.error("max_age is shorter than the first backoff, so nothing would be retried") }
        return p
    }
}
