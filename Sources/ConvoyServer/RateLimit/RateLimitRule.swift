import Foundation

/// One rate limit of `convoy serve` (docs/server.md, "Rate limits"): requests matching `routes`, counted per
/// client address, per signed-in caller or for the whole project, at most `limit` in any rolling `window`.
/// Past it a request is refused with 429 and `Retry-After` before the route runs.
public struct RateLimitRule: Sendable, Equatable {
    public enum Scope: String, Sendable, CaseIterable {
        /// The client's address (GoTrue's limits: per IP).
        case ip
        /// The signed-in user (the bearer token's `sub`); a request without one counts under its address.
        case caller
        /// Every request alike (GoTrue's email limit is project-wide).
        case project
    }

    public enum Counts: String, Sendable, CaseIterable {
        /// Every request that was let through.
        case all
        /// Only requests answered 4xx (429 aside): failed logins, wrong invite codes.
        case failures
    }

    /// `METHOD /path`, where the path may end in `*` (a prefix) and carry `?name=value` conditions on the query.
    public struct Route: Sendable, Equatable, CustomStringConvertible {
        public var method: String
        public var path: String
        public var isPrefix: Bool
        public var query: [String: String]

        /// Parses `POST /auth/v1/token?grant_type=password`; nil when it is not `METHOD /path`.
        public init?(_ text: String) {
            let parts = text.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count == 2, parts[1].hasPrefix("/") else { return nil }
            let method = parts[0].uppercased()
            guard ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD", "*"].contains(method) else { return nil }
            var path = String(parts[1])
            var query: [String: String] = [:]
            if let q = path.firstIndex(of: "?") {
                for pair in path[path.index(after: q)...].split(separator: "&") {
                    let kv = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    guard kv.count == 2, !kv[0].isEmpty else { return nil }
                    query[kv[0]] = kv[1]
                }
                path = String(path[..<q])
            }
            isPrefix = path.hasSuffix("*")
            if isPrefix { path.removeLast() }
            (self.method, self.path, self.query) = (method, path, query)
        }

        public func matches(method m: String, path p: String, query q: [String: String]) -> Bool {
            guard method == "*" || method == m else { return false }
            guard isPrefix ? p.hasPrefix(path) : p == path else { return false }
            return query.allSatisfy { q[$0.key] == $0.value }
        }

        public var description: String {
            "\(method) \(path)\(isPrefix ? "*" : "")" + (query.isEmpty ? "" : "?" + query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&"))
        }
    }

    public var name: String
    public var routes: [Route]
    public var scope: Scope
    public var limit: Int
    /// Seconds.
    public var window: Double
    public var counts: Counts
    /// What the refusal says (default: GoTrue's "Request rate limit reached" on `/auth/v1`, else "Too many requests").
    public var message: String?

    public init(name: String, routes: [Route], scope: Scope, limit: Int, window: Double, counts: Counts = .all, message: String? = nil) {
        (self.name, self.routes, self.scope, self.limit, self.window, self.counts, self.message) = (name, routes, scope, limit, window, counts, message)
    }

    public func matches(method: String, path: String, query: [String: String]) -> Bool {
        routes.contains { $0.matches(method: method, path: path, query: query) }
    }

    /// In words, for logs and the refusal's `details`: `sign_in_sign_ups: 30 per 5m per ip`.
    public var summary: String {
        "\(name): \(limit) \(counts == .failures ? "failures " : "")per \(Self.words(window)) per \(scope.rawValue)"
    }

    static func words(_ seconds: Double) -> String {
        for (unit, size) in [("d", 86_400.0), ("h", 3600), ("m", 60)] where seconds >= size && (seconds / size).rounded() == seconds / size {
            return "\(Int(seconds / size))\(unit)"
        }
        return seconds == seconds.rounded() ? "\(Int(seconds))s" : String(format: "%.3gs", seconds)
    }
}

/// The limits a server enforces: none, hosted Supabase Auth's, or a file's on top of them.
public struct RateLimits: Sendable, Equatable {
    public var rules: [RateLimitRule]

    public init(_ rules: [RateLimitRule] = []) { self.rules = rules }

    public static let off = RateLimits()

    /// Hosted Supabase Auth's per-IP limits as a new project has them (the Supabase CLI's `[auth.rate_limit]`
    /// defaults): sign-ups and password sign-ins 30 per 5 minutes, token refreshes 150 per 5 minutes, OTP and
    /// magic-link verifications 30 per 5 minutes. GoTrue counts them in a token bucket of 30; this counts a
    /// rolling window, which refuses the same request of a burst (the 31st). Email sending (2 an hour) has
    /// nothing to limit here: convoy serve sends no email.
    public static let supabase = RateLimits([
        RateLimitRule(name: "sign_in_sign_ups", routes: ["POST /auth/v1/signup", "POST /auth/v1/token?grant_type=password"].compactMap(RateLimitRule.Route.init),
                      scope: .ip, limit: 30, window: 300),
        RateLimitRule(name: "token_refresh", routes: ["POST /auth/v1/token?grant_type=refresh_token"].compactMap(RateLimitRule.Route.init),
                      scope: .ip, limit: 150, window: 300),
        RateLimitRule(name: "token_verifications", routes: ["* /auth/v1/verify"].compactMap(RateLimitRule.Route.init),
                      scope: .ip, limit: 30, window: 300),
    ])

    public var isEmpty: Bool { rules.isEmpty }

    /// These rules with `other`'s on top: a rule of the same name is replaced, a new one added.
    public func merging(_ other: RateLimits) -> RateLimits {
        var out = rules
        for rule in other.rules {
            if let i = out.firstIndex(where: { $0.name == rule.name }) { out[i] = rule } else { out.append(rule) }
        }
        return RateLimits(out)
    }

    /// The file an app's migrations folder may hold for its limits (`--migrations DIR`).
    public static let migrationsFile = "rate-limits.yaml"
}
