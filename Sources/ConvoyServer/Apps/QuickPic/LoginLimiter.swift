import ConvoyTime
import Synchronization

/// Failed logins counted in a sliding window, per username and per client address (the spec's "rate
/// limiting" against credential stuffing): past `limit` failures for a username, or 20 × that from one
/// address, within `window` seconds, a login is refused (429) before any password is checked, until the
/// oldest failure leaves the window. Successes neither count nor reset it.
final class LoginLimiter: Sendable {
    let limit: Int
    let window: Double
    let clock: any ConvoyClock
    private let failures = Mutex<[String: [Double]]>([:])

    /// How many failures from one address are allowed for each failure for one username.
    static let addressFactor = 20

    init(limit: Int, window: Double, clock: any ConvoyClock) {
        (self.limit, self.window, self.clock) = (limit, window, clock)
    }

    /// Nil when a login for `username` from `address` may go ahead; else the seconds until one may.
    func retryAfter(username: String, address: String) -> Double? {
        let now = clock.now()
        return failures.withLock { map in
            let waits = [(Self.userKey(username), limit), (Self.addressKey(address), limit * Self.addressFactor)].compactMap { key, allowed in
                let recent = (map[key] ?? []).filter { $0 > now - window }
                map[key] = recent.isEmpty ? nil : recent
                return recent.count >= allowed ? recent[recent.count - allowed] + window - now : nil
            }
            return waits.max()
        }
    }

    func failed(username: String, address: String) {
        let now = clock.now()
        failures.withLock { map in
            for key in [Self.userKey(username), Self.addressKey(address)] {
                map[key, default: []].append(now)
            }
            // Bounded memory under a spray of usernames: a full sweep of what has left the window now and then.
            if map.count > 100_000 { map = map.filter { $0.value.contains { $0 > now - window } } }
        }
    }

    private static func userKey(_ u: String) -> String { "u:" + u }
    private static func addressKey(_ a: String) -> String { "a:" + a }
}
