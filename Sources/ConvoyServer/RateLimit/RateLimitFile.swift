import ConvoyMetrics
import Foundation
import Yams

/// Reads a rate-limits file (docs/server.md, "Rate limits"), strictly: an unknown key, a wrong type or a
/// route that is not `METHOD /path` is an error naming `file:line:column` and the key.
///
/// ```yaml
/// limits:
///   - name: invite_validation
///     route: POST /rest/v1/rpc/validate_invite_code     # or a list; a path may end in *, carry ?name=value
///     per: ip                                           # ip, caller or project
///     limit: 5
///     window: 1h
///     count: all                                        # all, or failures (4xx answers only)
///     message: Too many attempts. Please try again later.
/// ```
public enum RateLimitFile {
    public static func load(_ path: String) throws(ServerConfiguration.Invalid) -> RateLimits {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ServerConfiguration.Invalid(description: "\(path): cannot read the rate-limits file")
        }
        return try parse(text, file: path)
    }

    public static func parse(_ text: String, file: String) throws(ServerConfiguration.Invalid) -> RateLimits {
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: text) else { throw ServerConfiguration.Invalid(description: "\(file): empty; give limits: [ … ]") }
            root = node
        } catch let e as ServerConfiguration.Invalid {
            throw e
        } catch {
            throw ServerConfiguration.Invalid(description: "\(file): not YAML: \(error)")
        }
        func fail(_ node: Node, _ key: String, _ message: String) -> ServerConfiguration.Invalid {
            let at = node.mark.map { "\($0.line):\($0.column)" } ?? "1:1"
            return ServerConfiguration.Invalid(description: "\(file):\(at): \(key): \(message)")
        }
        func mapping(_ node: Node, _ key: String, allowed: [String]) throws(ServerConfiguration.Invalid) -> [(String, Node)] {
            guard case .mapping(let m) = node else { throw fail(node, key, "expected a mapping") }
            var out: [(String, Node)] = []
            for (k, v) in m {
                let name = k.string ?? ""
                guard allowed.contains(name) else { throw fail(k, "\(key).\(name)", "unknown key (known: \(allowed.joined(separator: ", ")))") }
                out.append((name, v))
            }
            return out
        }
        func scalar(_ node: Node, _ key: String) throws(ServerConfiguration.Invalid) -> String {
            guard case .scalar(let s) = node else { throw fail(node, key, "expected a value, not a list or mapping") }
            return s.string
        }
        let top = try mapping(root, "limits", allowed: ["limits"])
        guard let listNode = top.first(where: { $0.0 == "limits" })?.1, case .sequence(let list) = listNode else {
            throw fail(root, "limits", "give limits: a list of rules")
        }
        var rules: [RateLimitRule] = []
        for (i, item) in list.enumerated() {
            let at = "limits[\(i)]"
            let fields = Dictionary(try mapping(item, at, allowed: ["name", "route", "per", "limit", "window", "count", "message"]), uniquingKeysWith: { a, _ in a })
            guard let nameNode = fields["name"] else { throw fail(item, at, "a rule needs a name") }
            let name = try scalar(nameNode, "\(at).name")
            guard !name.isEmpty, !rules.contains(where: { $0.name == name }) else { throw fail(nameNode, "\(at).name", "empty or used twice: \"\(name)\"") }
            guard let routeNode = fields["route"] else { throw fail(item, at, "a rule needs a route (METHOD /path)") }
            let routeNodes: [Node] = if case .sequence(let s) = routeNode { Array(s) } else { [routeNode] }
            var routes: [RateLimitRule.Route] = []
            for r in routeNodes {
                let text = try scalar(r, "\(at).route")
                guard let route = RateLimitRule.Route(text) else {
                    throw fail(r, "\(at).route", "expected METHOD /path (e.g. POST /rest/v1/rpc/validate_invite_code), found \"\(text)\"")
                }
                routes.append(route)
            }
            guard !routes.isEmpty else { throw fail(routeNode, "\(at).route", "give at least one route") }
            var scope = RateLimitRule.Scope.ip
            if let n = fields["per"] {
                let text = try scalar(n, "\(at).per")
                guard let s = RateLimitRule.Scope(rawValue: text) else { throw fail(n, "\(at).per", "ip, caller or project, found \"\(text)\"") }
                scope = s
            }
            guard let limitNode = fields["limit"] else { throw fail(item, at, "a rule needs a limit (requests per window)") }
            let limitText = try scalar(limitNode, "\(at).limit")
            guard let limit = Int(limitText), (1...10_000_000).contains(limit) else {
                throw fail(limitNode, "\(at).limit", "a whole number 1…10000000, found \"\(limitText)\"")
            }
            guard let windowNode = fields["window"] else { throw fail(item, at, "a rule needs a window (e.g. 1m, 1h, 24h)") }
            let windowText = try scalar(windowNode, "\(at).window")
            guard let window = DurationText.seconds(windowText), window >= 0.001, window <= 366 * 86_400 else {
                throw fail(windowNode, "\(at).window", "a duration 1ms…366d (e.g. 15m), found \"\(windowText)\"")
            }
            var counts = RateLimitRule.Counts.all
            if let n = fields["count"] {
                let text = try scalar(n, "\(at).count")
                guard let c = RateLimitRule.Counts(rawValue: text) else { throw fail(n, "\(at).count", "all or failures, found \"\(text)\"") }
                counts = c
            }
            let message = try fields["message"].map { (n) throws(ServerConfiguration.Invalid) -> String in try scalar(n, "\(at).message") }
            rules.append(RateLimitRule(name: name, routes: routes, scope: scope, limit: limit, window: window, counts: counts, message: message))
        }
        return RateLimits(rules)
    }
}
