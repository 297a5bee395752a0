import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire
import Foundation
import Synchronization

/// One run's cast, placeholder values and redactor.
struct ProbeContext: Sendable {
    let target: SupabaseTarget
    let parties: [ProbeActor: ProbeParty]
    var values: [String: String]
    let redactor: ProbeRedactor
    /// The victim's published public key, when readable.
    let victimKey: PublicKey?

    static func make(runner: ProbeRunner, attacker: ProbeParty, victims: ProbeVictims) async -> ProbeContext {
        let target = runner.target
        let parties: [ProbeActor: ProbeParty] = [.attacker: attacker, .friend: victims.friend, .victim: victims.victim, .stranger: victims.stranger]
        var values: [String: String] = ["anon_key": target.anonKey, "run": String(UUID().uuidString.prefix(8)).lowercased()]
        var redactor = ProbeRedactor()
        redactor.add(target.anonKey, "anon key")
        if let service = target.serviceKey {
            values["service_key"] = service
            redactor.add(service, "service key")
        }
        redactor.add(runner.jwtSecret, "jwt secret")
        // Public keys as published (any signed-in user may read them on Green Box).
        let published = (try? await runner.app.friends?.publicKeys(of: parties.values.map(\.userID), token: attacker.session.accessToken,
                                                          via: SupabaseHTTP(engine: runner.engine, target: target))) ?? [:]
        for (actor, party) in parties {
            let name = actor.rawValue
            values["\(name).id"] = party.userID
            values["\(name).token"] = party.session.accessToken
            if let email = party.session.email { values["\(name).email"] = email }
            if let key = party.keys?.publicKey.base64 ?? published[party.userID]?.base64 { values["\(name).public_key"] = key }
            values["\(name).refresh_token"] = party.session.refreshToken
            if let password = party.password {
                values["\(name).password"] = password
                redactor.add(password, "\(name) password")
            }
            redactor.add(party.session.accessToken, "\(name) access token")
            redactor.add(party.session.refreshToken, "\(name) refresh token")
            if let secret = party.keys?.secretKey.exportBase64() { redactor.add(secret, "\(name) secret key") }
        }
        if let tokens = try? ProbeTokens(attackerToken: attacker.session.accessToken, victimID: victims.victim.userID, jwtSecret: runner.jwtSecret) {
            values["token.expired"] = tokens.expired
            values["token.forged"] = tokens.forged
            values["token.forged_service"] = tokens.forgedService
            values["token.alg_none"] = tokens.algNone
            redactor.add(tokens.expired, tokens.expiredIsSigned ? "expired token, validly signed" : "expired token, wrong secret")
            redactor.add(tokens.forged, "forged token (victim's sub, wrong secret)")
            redactor.add(tokens.forgedService, "forged service_role token (wrong secret)")
            redactor.add(tokens.algNone, "alg:none token (victim's sub)")
        }
        // What the app's cast adds (Survale: each party's operation and callsign).
        let roles = Dictionary(uniqueKeysWithValues: parties.map { ($0.key.rawValue, $0.value.userID) })
        values.merge(runner.app.probeValues(roles: roles)) { a, _ in a }
        let keys = Dictionary(uniqueKeysWithValues: parties.compactMap { p in p.value.keys.map { (p.key.rawValue, $0) } })
        values.merge(runner.app.probeMessages(keys: keys)) { a, _ in a }
        let victimKey = values["victim.public_key"].flatMap { try? PublicKey(base64: $0) }
        if let victimKey, let app = runner.app.locations {
            // A ciphertext the victim's friend sent, as an observer of the network captured it.
            let now = Date().timeIntervalSince1970.rounded(.down)
            let update = app.plaintext(of: LocationPayload(lat: ProbeTraffic.captured.lat, lon: ProbeTraffic.captured.lon, ts: now, acc: 5, seq: ProbeTraffic.seqBase))
            values["captured.ciphertext"] = try? app.seal(update, to: victimKey)
        }
        return ProbeContext(target: target, parties: parties, values: values, redactor: redactor, victimKey: victimKey)
    }

    /// The catalogue's codes: `{{guess}}` outside a repeat or compare step is a fresh one at each use.
    var codeSpace: CodeSpace?
    /// Requests this pass sent, per party and route: what a limit had counted before a series began.
    let sent = RouteLedger()

    func fill(_ s: String) throws(Template.Unavailable) -> String {
        if values["guess"] == nil, let codeSpace, s.contains("{{guess}}") {
            var v = values
            v["guess"] = codeSpace.random()
            return try ProbeTemplate.fill(s, v)
        }
        return try ProbeTemplate.fill(s, values)
    }

    /// Keeps columns of a response's first row as `saved.<name>` for the probe's later steps.
    mutating func save(_ save: [(name: String, column: String)], from body: [UInt8]) {
        values.merge(JSONTemplate.saved(save, from: body)) { _, new in new }
    }

    /// The access token `actor` sends (nil: none).
    func token(_ actor: ProbeActor) throws(Template.Unavailable) -> String? {
        switch actor {
        case .anon: return target.anonKey
        case .service: guard let k = target.serviceKey else { throw .init(name: "service_key") }; return k
        case .none: return nil
        default: return parties[actor]?.session.accessToken
        }
    }

    func build(_ t: ProbeRequest) throws -> HTTPRequest {
        // One `{{guess}}` a request: the same code in its path, query and body.
        if values["guess"] == nil, let codeSpace {
            var one = self
            one.values["guess"] = codeSpace.random()
            return try one.build(t)
        }
        var headers: [(name: String, value: String)] = []
        switch t.actor {
        case .none: break
        case .service: headers.append(("apikey", try token(.service)!))
        default: headers.append(("apikey", target.anonKey))
        }
        if let token = try token(t.actor) { headers.append(("Authorization", "Bearer \(token)")) }
        var body: [UInt8]?
        switch t.body {
        case .json(let json)?: body = Array(try Self.render(json, self).utf8)
        case .raw(let text)?: body = Array(try fill(text).utf8)
        case nil: break
        }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        for (name, value) in t.headers {
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            let v = try fill(value)
            if !v.isEmpty { headers.append((name, v)) }
        }
        var url = target.url + (try fill(t.path))
        if !t.query.isEmpty {
            var allowed = CharacterSet.urlQueryAllowed
            allowed.remove(charactersIn: "&=+/?#")
            var q: [String] = []
            for pair in t.query {
                let value = try fill(pair.value)
                q.append("\(pair.name.addingPercentEncoding(withAllowedCharacters: allowed) ?? pair.name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")")
            }
            url += (url.contains("?") ? "&" : "?") + q.joined(separator: "&")
        }
        return HTTPRequest(method: t.method, url: url, headers: headers, body: body)
    }

    /// A catalogue's JSON body, placeholders filled (`{{guess}}`: one code for the whole body).
    static func render(_ json: JSONTemplate, _ context: ProbeContext) throws -> String {
        var values = context.values
        if values["guess"] == nil, let codeSpace = context.codeSpace, json.placeholders.contains("guess") { values["guess"] = codeSpace.random() }
        return String(decoding: try json.render { values[$0].map(JSONValue.string) }, as: UTF8.self)
    }

    static func quote(_ s: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 2)
        JSONValue.write(string: s, into: &out, escapingSlash: false)
        return String(decoding: out, as: UTF8.self)
    }

    func evidence(_ step: ProbeStep, _ request: HTTPRequest, status: Int, body: [UInt8], kind: ProbeEvidence.Kind, detail: String) -> ProbeEvidence {
        let path = redactor.redact(String(request.url.dropFirst(target.url.count)))
        return ProbeEvidence(kind: kind, step: step.source, method: request.method, path: path.count > 500 ? String(path.prefix(500)) + "…" : path,
                             headers: redactor.headers(request.headers), requestBody: request.body.map { redactor.excerpt($0) },
                             status: status, responseBody: redactor.excerpt(body), detail: redactor.redact(detail))
    }
}

/// What came back, as the rules see it.
struct ProbeFacts {
    var status: Int
    var code: String?
    var body: String
    var rows: Int
    var events = 0
    /// A channel step's: joined, the actor's broadcasts the control heard, others seen present.
    var channel: (joined: Bool, delivered: Int, presences: Int)?
    /// A timing step's: each side's median round trip, milliseconds, and how many of each were timed.
    var timing: (a: Double, b: Double, tries: Int)?
    /// A repeat step's series.
    var series: ProbeSeries?
    /// A compare step's: what differed between the two sides (empty: alike).
    var comparison: [String]?
    var gapMs: Double { timing.map { abs($0.a - $0.b) } ?? 0 }
    var gapPercent: Double { timing.map { max($0.a, $0.b) > 0 ? abs($0.a - $0.b) / max($0.a, $0.b) * 100 : 0 } ?? 0 }

    init(status: Int, code: String? = nil, body: String, rows: Int, events: Int = 0) {
        (self.status, self.code, self.body, self.rows, self.events) = (status, code, body, rows, events)
    }

    init(_ r: HTTPResponse) {
        let json = JSONScanner.parse(r.body, maxDepth: JSONScanner.foundationDepth)
        status = r.status
        // PostgREST's `code`, GoTrue's `error_code`, or an API of its own's `error` (QuickPic's).
        code = json?["code"]?.string ?? json?["error_code"]?.string ?? json?["error"]?.string
        body = String(decoding: r.body, as: UTF8.self)
        rows = switch json {
        case _ where r.status >= 300: 0
        case .array(let items)?: items.count
        case .object?: 1
        default: 0
        }
    }

    func matches(_ m: ProbeMatch, _ context: ProbeContext) -> Bool {
        if let s = m.status, !s.contains(where: { $0.matches(status) }) { return false }
        if let c = m.code, !c.contains(code ?? "") { return false }
        if let t = m.bodyContains, !contains((try? context.fill(t)) ?? t) { return false }
        if let t = m.bodyLacks, contains((try? context.fill(t)) ?? t) { return false }
        if let r = m.rows, !r.matches(rows) { return false }
        if let e = m.events, !e.matches(events) { return false }
        if let j = m.joined, channel?.joined != j { return false }
        if let d = m.delivered, !d.matches(channel?.delivered ?? 0) { return false }
        if let p = m.presences, !p.matches(channel?.presences ?? 0) { return false }
        if let g = m.gapMs, !g.matches(Int(gapMs.rounded(.down))) { return false }
        if let g = m.gapPercent, !g.matches(Int(gapPercent.rounded(.down))) { return false }
        if let l = m.limitedAt, !(series?.firstRefusal.map { l.matches($0) } ?? false) { return false }
        if let l = m.limited, (series?.firstRefusal != nil) != l { return false }
        if let s = m.successes, !s.matches(series?.successes ?? 0) { return false }
        if let s = m.afterLimit, !s.matches(series?.successesAfterLimit ?? 0) { return false }
        if let r = m.reset, series?.reset != r { return false }
        if let a = m.alike, (comparison?.isEmpty ?? false) != a { return false }
        return true
    }

    /// As written, or as JSON writes it (a server may escape `/` as `\\/`).
    func contains(_ text: String) -> Bool {
        body.contains(text) || (text.contains("/") && body.contains(text.replacingOccurrences(of: "/", with: "\\/")))
    }

    var summary: String {
        if let s = series { return s.summary }
        if let c = comparison { return c.isEmpty ? "answered alike" : "answered differently: " + c.joined(separator: "; ") }
        if let t = timing {
            return String(format: "a median %.1f ms, b median %.1f ms over %d tries each (gap %.1f ms, %.0f %%), last b HTTP %d",
                          t.a, t.b, t.tries, gapMs, gapPercent, status)
        }
        if let c = channel {
            return "\(c.joined ? "joined" : "refused"), heard \(events) broadcast\(events == 1 ? "" : "s"), \(c.presences) other\(c.presences == 1 ? "" : "s") present, "
                + "\(c.delivered) of its broadcasts delivered"
        }
        return "HTTP \(status)\(code.map { " \($0)" } ?? ""), \(rows) row\(rows == 1 ? "" : "s"), \(events) event\(events == 1 ? "" : "s")"
    }
}

extension ProbeMatch {
    var summary: String {
        var parts: [String] = []
        if let s = status {
            parts.append("status " + s.map { p -> String in
                switch p {
                case .exact(let n): return "\(n)"
                case .hundreds(let h): return "\(h)xx"
                }
            }.joined(separator: "|"))
        }
        if let c = code { parts.append("code " + c.joined(separator: "|")) }
        if let t = bodyContains { parts.append("body contains \"\(t)\"") }
        if let t = bodyLacks { parts.append("body lacks \"\(t)\"") }
        if let r = rows { parts.append("rows \(r.op.rawValue) \(r.value)") }
        if let e = events { parts.append("events \(e.op.rawValue) \(e.value)") }
        if let j = joined { parts.append("joined \(j)") }
        if let d = delivered { parts.append("delivered \(d.op.rawValue) \(d.value)") }
        if let p = presences { parts.append("presences \(p.op.rawValue) \(p.value)") }
        if let g = gapMs { parts.append("gap_ms \(g.op.rawValue) \(g.value)") }
        if let g = gapPercent { parts.append("gap_percent \(g.op.rawValue) \(g.value)") }
        if let l = limitedAt { parts.append("limited_at \(l.op.rawValue) \(l.value)") }
        if let l = limited { parts.append("limited \(l)") }
        if let s = successes { parts.append("successes \(s.op.rawValue) \(s.value)") }
        if let s = afterLimit { parts.append("after_limit \(s.op.rawValue) \(s.value)") }
        if let r = reset { parts.append("reset \(r)") }
        if let a = alike { parts.append("alike \(a)") }
        return "{" + parts.joined(separator: ", ") + "}"
    }
}

/// Requests a pass sent, per party and route (`METHOD /path`, no query): a repeat step's series starts where
/// earlier steps left each caller's count, so the allowance it reports is the limit's, not what was left of it.
final class RouteLedger: Sendable {
    private let counts = Mutex<[String: Int]>([:])

    static func key(_ actor: ProbeActor, _ request: HTTPRequest, base: String) -> String {
        let path = String(request.url.dropFirst(base.count).prefix { $0 != "?" })
        return "\(actor.rawValue) \(request.method) \(path)"
    }

    func add(_ key: String) { counts.withLock { $0[key, default: 0] += 1 } }
    func count(_ key: String) -> Int { counts.withLock { $0[key] ?? 0 } }
}
