import ConvoyTime
import Synchronization

/// Counts requests against `RateLimits` in rolling windows, in memory: per rule and per key (an address,
/// a user id, or the project). A refused request is not counted, so a window empties `window` seconds
/// after the requests that filled it.
public final class RateLimiter: Sendable {
    public let limits: RateLimits
    let clock: any ConvoyClock
    private let seen = Mutex<[String: [Double]]>([:])
    private let lastSweep = Mutex<Double>(-.infinity)

    public init(_ limits: RateLimits, clock: any ConvoyClock) {
        (self.limits, self.clock) = (limits, clock)
    }

    /// The rules a request falls under.
    func rules(method: String, path: String, query: [String: String]) -> [RateLimitRule] {
        limits.rules.filter { $0.matches(method: method, path: path, query: query) }
    }

    /// Whether a request under `rules` (each with its key) may go ahead. If so, it is counted at once against
    /// every rule — those that count every request (so a burst is refused at exactly the limit) and those that
    /// count failures (so concurrent attempts cannot all slip in before the first failure is recorded: one
    /// that does not fail is taken back, `succeeded`); if not, the rule that refused it and the seconds until
    /// it would be let through, and nothing is counted.
    func admit(_ keyed: [(rule: RateLimitRule, key: String)]) -> (rule: RateLimitRule, retryAfter: Double)? {
        admitted(keyed).refusal
    }

    /// `admit`, with the moment the request was counted at (for `succeeded`).
    func admitted(_ keyed: [(rule: RateLimitRule, key: String)]) -> (refusal: (rule: RateLimitRule, retryAfter: Double)?, at: Double) {
        let now = clock.now()
        return seen.withLock { map in
            var refusal: (rule: RateLimitRule, retryAfter: Double)?
            for (rule, key) in keyed {
                let id = rule.name + "\u{1}" + key
                let recent = (map[id] ?? []).filter { $0 > now - rule.window }
                map[id] = recent.isEmpty ? nil : recent
                if recent.count >= rule.limit {
                    let wait = recent[recent.count - rule.limit] + rule.window - now
                    if wait > refusal?.retryAfter ?? -1 { refusal = (rule, wait) }
                }
            }
            if refusal == nil {
                for (rule, key) in keyed { map[rule.name + "\u{1}" + key, default: []].append(now) }
            }
            // Bounded memory under a spray of keys, swept at most every ten seconds (not on every request).
            if map.count > 200_000, now - lastSweep.withLock({ $0 }) > 10 {
                lastSweep.withLock { $0 = now }
                Self.sweep(&map, now: now, longest: limits.rules.map(\.window).max() ?? 0)
            }
            return (refusal, now)
        }
    }

    /// A request counted at `at` that did not fail: taken back from the rules that count failures only.
    func succeeded(_ keyed: [(rule: RateLimitRule, key: String)], at: Double) {
        seen.withLock { map in
            for (rule, key) in keyed where rule.counts == .failures {
                let id = rule.name + "\u{1}" + key
                if let i = map[id]?.lastIndex(of: at) { map[id]!.remove(at: i) }
                if map[id]?.isEmpty == true { map[id] = nil }
            }
        }
    }

    /// Bounded memory under a spray of addresses or users: drops what has left every window.
    private static func sweep(_ map: inout [String: [Double]], now: Double, longest: Double) {
        map = map.filter { $0.value.contains { $0 > now - longest } }
    }
}
