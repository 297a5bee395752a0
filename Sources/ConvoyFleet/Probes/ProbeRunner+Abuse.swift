import ConvoyJSON
import ConvoyWire
import Foundation

/// What a repeat step's series showed.
struct ProbeSeries {
    var attempts = 0
    var successes = 0
    var refusals = 0
    /// 1-based.
    var firstRefusal: Int?
    var successesAfterLimit = 0
    /// Whether the attempt made after `reset_after` went through (nil: none was made).
    var reset: Bool?
    var seconds = 0.0
    /// Attempts per status, for the summary.
    var statuses: [Int: Int] = [:]
    /// Each caller's attempts the limit let through before it first refused that caller, counting the
    /// requests to the same route earlier steps of the pass made as that caller.
    var through: [ProbeActor: Int] = [:]
    var refusedCallers: Set<ProbeActor> = []

    var summary: String {
        let counts = statuses.sorted { $0.key < $1.key }.map { "\($0.value)× \($0.key)" }.joined(separator: ", ")
        var s = "\(attempts) attempts (\(counts)) in \(String(format: "%.1f", seconds)) s; "
        s += firstRefusal.map { "first refused at attempt \($0)" } ?? "none refused"
        if successesAfterLimit > 0 { s += "; \(successesAfterLimit) succeeded after the limit" }
        if let reset { s += reset ? "; went through again after the window" : "; still refused after the window" }
        return s
    }
}

extension ProbeRunner {
    /// A repeat step: `times` attempts (each from the next caller, at `rate` or as fast as answered), judged on
    /// the series; with `reset_after`, one more attempt once that long has passed. With an `estimate` and the
    /// catalogue's code space, the expected time to guess a live code joins the outcome's measurements.
    func runSeries(_ step: ProbeStep, _ series: RepeatProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        var facts = ProbeSeries()
        var last: (HTTPResponse, HTTPRequest)?
        let started = Date()
        /// One attempt; whether the limit let it through. `counted` false: the reset attempt, judged apart from the series.
        func attempt(_ i: Int, counted: Bool = true) async -> Bool {
            var request = series.requests[i % series.requests.count]
            if let callers = series.callers { request.actor = callers[i % callers.count] }
            var c = context
            c.values["attempt"] = String(i + 1)
            switch await send(request, c) {
            case .sent(let response, let sent):
                let refused = ProbeFacts(response).matches(series.limitedWhen, c)
                guard counted else { return !refused }
                last = (response, sent)
                facts.statuses[response.status, default: 0] += 1
                if facts.through[request.actor] == nil {
                    // What earlier steps had spent of this caller's allowance on this route (without this attempt, if it counted).
                    let counted = response.status != 429 && response.status != 401 ? 1 : 0
                    facts.through[request.actor] = context.sent.count(RouteLedger.key(request.actor, sent, base: context.target.url)) - counted
                }
                if refused { facts.refusedCallers.insert(request.actor) } else if !facts.refusedCallers.contains(request.actor) {
                    facts.through[request.actor, default: 0] += 1
                }
                if refused {
                    facts.refusals += 1
                    if facts.firstRefusal == nil { facts.firstRefusal = i + 1 }
                } else if response.status < 300 {
                    facts.successes += 1
                    if facts.firstRefusal != nil { facts.successesAfterLimit += 1 }
                }
                return !refused
            case .skipped(let why):
                outcome.notes.append("skipped \(step.source): \(why)")
                return false
            case .failed(let why):
                outcome.tried += 1
                outcome.notes.append("inconclusive \(step.source): attempt \(i + 1): \(why)")
                return false
            }
        }
        for i in 0..<series.times {
            if let rate = series.rate, i > 0 {
                let due = Double(i) / rate - Date().timeIntervalSince(started)
                if due > 0 { await sleep(due) }
            }
            let before = outcome.notes.count
            _ = await attempt(i)
            if outcome.notes.count > before { return }
            facts.attempts += 1
        }
        facts.seconds = Date().timeIntervalSince(started)
        if let wait = series.resetAfter {
            await sleep(wait)
            let before = outcome.notes.count
            let through = await attempt(series.times, counted: false)
            if outcome.notes.count > before { return }
            facts.reset = through
        }
        guard let (response, request) = last else { return }
        if let assumptions = series.estimate, let codeSpace = context.codeSpace {
            // The allowance: per caller, the most a refused caller had let through; per address, all the callers'
            // together (one window) — this pass's earlier requests to the route included.
            let refused = facts.through.filter { facts.refusedCallers.contains($0.key) }.values
            let allowed = facts.firstRefusal.map { _ in assumptions.perCaller ? refused.max() ?? 0 : facts.through.values.reduce(0, +) }
            if allowed == 0 {
                outcome.measurements.append("\(step.source): " + facts.summary + "; refused from the first attempt (the window was full already): no allowance measured, no estimate")
                var judged = ProbeFacts(response)
                judged.series = facts
                judge(step, judged, context, &outcome) { context.evidence(step, request, status: response.status, body: response.body, kind: $0, detail: $1) }
                return
            }
            let estimate = BruteForceEstimate(space: codeSpace, allowed: allowed,
                                              measuredRate: Double(facts.attempts) / max(facts.seconds, 1e-3), assumptions: assumptions)
            outcome.measurements += ["\(step.source): " + facts.summary] + estimate.lines
        } else {
            outcome.measurements.append("\(step.source): " + facts.summary)
        }
        var judged = ProbeFacts(response)
        judged.series = facts
        judge(step, judged, context, &outcome) {
            context.evidence(step, request, status: response.status, body: response.body, kind: $0, detail: $1)
        }
    }

    /// A compare step: `tries` rounds of one `a` and one `b`; judged on whether they answered alike.
    func runCompare(_ step: ProbeStep, _ compare: CompareProbe, _ context: ProbeContext, _ outcome: inout ProbeOutcome) async {
        var times: ([Double], [Double]) = ([], [])
        var answers: [HTTPResponse?] = [nil, nil]
        var roundDifferences: [String] = []
        var sentB: HTTPRequest?
        let complete = await rounds(compare.tries, compare.a, compare.b, step, context, &outcome) { side, response, sent in
            if side == 0 { times.0.append(response.timing.total * 1000) } else { times.1.append(response.timing.total * 1000); sentB = sent }
            answers[side] = response
            // Every round's pair is compared: a difference in any round is one.
            if side == 1, let a = answers[0] {
                for d in ResponseShape.differences(a, response) where !roundDifferences.contains(d) { roundDifferences.append(d) }
            }
        }
        guard complete else { return }
        guard let a = answers[0], let b = answers[1], let sentB else { return }
        var differences = roundDifferences
        // Each side's fastest answer: a compare has few tries (a rate-limited RPC allows a handful), and one
        // answer slowed by a busy machine (or a cold connection) must not read as a difference; a server that
        // takes longer for one side does so every time, the fastest included.
        let (ma, mb) = (times.0.min() ?? 0, times.1.min() ?? 0)
        if let within = compare.within {
            let gap = abs(ma - mb), percent = max(ma, mb) > 0 ? gap / max(ma, mb) * 100 : 0
            if gap > within.ms, percent > within.percent {
                differences.append(String(format: "time: fastest %.1f ms and %.1f ms (gap %.1f ms, %.0f %%)", ma, mb, gap, percent))
            }
        }
        var facts = ProbeFacts(b)
        facts.comparison = differences
        facts.timing = compare.within == nil ? nil : (ma, mb, compare.tries)
        outcome.measurements.append("\(step.source): " + (differences.isEmpty ? "a and b answered alike (HTTP \(a.status))" : "a and b differ: " + differences.joined(separator: "; ")))
        judge(step, facts, context, &outcome) {
            context.evidence(step, sentB, status: b.status, body: b.body, kind: $0, detail: $1)
        }
    }
}

/// What two answers must share to say nothing of which is which: status, the shape of the JSON body (its
/// keys and the types of their values), and its message fields word for word.
enum ResponseShape {
    static let messageFields = ["message", "msg", "error", "error_code", "error_description", "code", "hint", "details", "status"]

    static func differences(_ a: HTTPResponse, _ b: HTTPResponse) -> [String] {
        var out: [String] = []
        if a.status != b.status { out.append("status: \(a.status) and \(b.status)") }
        let ja = JSONScanner.parse(a.body, maxDepth: JSONScanner.foundationDepth)
        let jb = JSONScanner.parse(b.body, maxDepth: JSONScanner.foundationDepth)
        let (sa, sb) = (shape(ja), shape(jb))
        if sa != sb { out.append("body shape: \(sa) and \(sb)") }
        for field in messageFields {
            let va = message(ja, field), vb = message(jb, field)
            if va != vb { out.append("\(field): \(va ?? "none") and \(vb ?? "none")") }
        }
        if ja == nil, jb == nil, a.body != b.body { out.append("body: they differ") }
        return out
    }

    /// `{code:string,message:string}`, `[{id:string}]`, `null`.
    static func shape(_ v: JSONValue?) -> String {
        switch v {
        case nil: return "not JSON"
        case .object?:
            let o = v?.dictionary ?? [:]
            return "{" + o.keys.sorted().map { "\($0):\(shape(o[$0]))" }.joined(separator: ",") + "}"
        case .array(let a)?: return "[" + (a.first.map { shape($0) } ?? "") + "]"
        case .string?: return "string"
        case .null?: return "null"
        case .number?, .bool?: return "scalar"
        }
    }

    /// A top-level message field (or the same field inside a top-level `error` object, as Firebase's callables write it).
    static func message(_ v: JSONValue?, _ field: String) -> String? {
        guard case .object? = v else { return nil }
        if let x = v?[field] { if case .object = x {} else { return x.flatText ?? "null" } }
        if let inner = v?["error"], case .object = inner, let x = inner[field] { return x.flatText ?? "null" }
        return nil
    }
}
