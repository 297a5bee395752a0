import ConvoyWire
import Synchronization

/// Counts requests against `RateLimits` in rolling windows, in memory: per rule and per key (an address,
/// a user id, or the project). A refused request is not counted, so a window empties `window` seconds
/// after the requests that filled it.
public final class RateLimiter: Sendable {
    public let limits: RateLimits
    let clock: any ConvoyClock
    private let seen = Mutex<[String: [Double]]>([:])

    public init(_ limits: RateLimits, clock: any ConvoyClock) {
        (self.limits, self.clock) = (limits, clock)
    }

    /// The rules a request falls under.
    func rules(method: String, path: String, query: [String: String]) -> [RateLimitRule] {
        limits.rules.filter { $0.matches(method: method, path: path, query: query) }
    }

    /// Whether a request under `rules` (each with its key) may go ahead. If so, it is counted at once against
    /// the rules that count every request (so a burst is refused at exactly the limit); if not, the rule that
    /// refused it and the seconds until it would be let through.
    func admit(_ keyed: [(rule: RateLimitRule, key: String)]) -> (rule: RateLimitRule, retryAfter: Double)? {
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
                for (rule, key) in keyed where rule.counts == .all { map[rule.name + "\u{1}" + key, default: []].append(now) }
            }
            if map.count > 200_000 { Self.sweep(&map, now: now, longest: limits.rules.map(\.window).max() ?? 0) }
            return refusal
        }
    }

    /// Counts a request that failed against the rules that count failures.
    func failed(_ keyed: [(rule: RateLimitRule, key: String)]) {
        let now = clock.now()
        seen.withLock { map in
            for (rule, key) in keyed where rule.counts == .failures { map[rule.name + "\u{1}" + key, default: []].append(now) }
        }
    }

    /// Bounded memory under a spray of addresses or users: drops what has left every window.
    private static func sweep(_ map: inout [String: [Double]], now: Double, longest: Double) {
        map = map.filter { $0.value.contains { $0 > now - longest } }
    }
}
