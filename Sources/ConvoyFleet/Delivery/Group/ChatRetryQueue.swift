/// The chat's retry queue (survale-spec §6 "progress UI and retry queue",
/// §11 "retry failed uploads"): a chat line or a photo whose post or upload
/// failed for a reason a retry can cure — no answer, 408, 429, 5xx, 401 once
/// the session is renewed (`RetryPolicy.isRetryable`) — waits and is tried
/// again after a backoff (full jitter, doubling from the first wait up to the
/// longest), until it has been tried `attempts` times, would be tried later
/// than `maxAge` after it was made, or the queue holds `limit`; any other
/// failure is given up at once with its reason. Once closed (its group ended,
/// the phone left) everything is given up with the closing reason.
///
/// A value with no clock of its own: the phone tells it each failure with the
/// time and a uniform draw, and takes an entry back when its time comes; tests
/// drive it with their own times.
struct ChatRetryQueue<Item: Sendable>: Sendable {
    struct Policy: Sendable, Equatable {
        /// The first wait and the longest, seconds.
        var backoff: ClosedRange<Double> = 1...30
        /// Attempts in all, the first included: eight bridge about 45 s off the network on average.
        var attempts = 8
        /// Nothing is tried later than this after it was made, seconds.
        var maxAge: Double = 300
        /// Entries held at once.
        var limit = 200
    }

    struct Entry: Sendable {
        var id: Int
        var item: Item
        /// When it was made (the first attempt's intended time), seconds on the phone's clock.
        var madeAt: Double
        /// Attempts made so far.
        var attempts: Int
        var dueAt: Double
    }

    enum Verdict: Equatable {
        /// Tried again at `at` (take entry `id` then).
        case retry(id: Int, at: Double)
        case givenUp(reason: String)
    }

    let policy: Policy
    private(set) var waiting: [Int: Entry] = [:]
    private var nextID = 0
    /// Why it was closed (nil: open).
    private(set) var closedBecause: String?

    init(policy: Policy = Policy()) { self.policy = policy }

    var count: Int { waiting.count }

    /// Attempt `attempts` of `item` failed at `now` with `reason`; `retryable`: whether another attempt may cure it.
    /// `unit` is a uniform draw in [0, 1) for the jitter.
    mutating func failed(_ item: Item, madeAt: Double, attempts: Int, reason: String, retryable: Bool, now: Double, unit: Double) -> Verdict {
        if let closedBecause { return .givenUp(reason: closedBecause) }
        guard retryable else { return .givenUp(reason: reason) }
        guard attempts < policy.attempts else { return .givenUp(reason: "retry_limit") }
        let due = now + delay(attempt: attempts, unit: unit)
        guard due - madeAt <= policy.maxAge else { return .givenUp(reason: "retry_expired") }
        guard waiting.count < policy.limit else { return .givenUp(reason: "retry_queue_full") }
        nextID += 1
        waiting[nextID] = Entry(id: nextID, item: item, madeAt: madeAt, attempts: attempts, dueAt: due)
        return .retry(id: nextID, at: due)
    }

    /// The entry whose time has come (nil: given up meanwhile, by `close`).
    mutating func take(_ id: Int) -> Entry? { waiting.removeValue(forKey: id) }

    /// Gives up everything waiting, and everything that fails from now on, with `reason`; the entries given up.
    mutating func close(_ reason: String) -> [Entry] {
        if closedBecause == nil { closedBecause = reason }
        defer { waiting = [:] }
        return waiting.values.sorted { $0.id < $1.id }
    }

    /// The wait before attempt `attempts + 1`: full jitter over min(longest, first × 2^(attempts − 1)), never under a
    /// tenth of the first wait (as the scenario's `retry:` waits).
    func delay(attempt attempts: Int, unit: Double) -> Double {
        RetryPolicy(mode: .retry, backoff: policy.backoff).delay(attempt: attempts, unit: unit)
    }
}
