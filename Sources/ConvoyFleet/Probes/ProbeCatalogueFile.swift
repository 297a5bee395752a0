import ConvoyMetrics
import Foundation
import Yams

/// Reads a probe catalogue strictly, as scenario files are read: unknown
/// keys, wrong types and unknown placeholders are `ScenarioError`s naming
/// `file:line:column` and the key path.
public enum ProbeCatalogueFile {
    public static func load(_ path: String) throws(ScenarioError) -> ProbeCatalogue {
        try parse(try YAMLDocument.text(path, what: "the catalogue"), file: path)
    }

    public static func parse(_ text: String, file: String) throws(ScenarioError) -> ProbeCatalogue {
        var catalogue = try YAMLDocument.root(text, file: file, empty: "a catalogue needs catalogue and probes").catalogue()
        catalogue.file = file
        if catalogue.codeSpace == nil, let at = text.range(of: "{{guess}}") {
            let line = text[..<at.lowerBound].filter { $0 == "\n" }.count + 1
            throw ScenarioError(file: file, line: line, column: 1, path: "code_space",
                                message: "{{guess}} needs the catalogue's code_space (alphabet, length, prefix, live)")
        }
        return catalogue
    }
}

extension Reader {
    var line: Int { node.mark?.line ?? 0 }
    var source: String { "\(file):\(line)" }

    func catalogue() throws(ScenarioError) -> ProbeCatalogue {
        let m = try mapping(["catalogue", "description", "cast", "code_space", "setup", "probes"])
        guard let name = try m["catalogue"]?.string(), !name.isEmpty else { throw error("a catalogue needs a name (catalogue: <name>)") }
        guard let probesNode = m["probes"] else { throw error("a catalogue needs probes (a list)") }
        let probes = try probesNode.sequence().map { (r) throws(ScenarioError) -> Probe in try r.probe() }
        var ids = Set<String>()
        for (i, p) in probes.enumerated() where !ids.insert(p.id).inserted {
            throw try probesNode.sequence()[i].error("two probes have the id \"\(p.id)\"")
        }
        let setup = try m["setup"]?.sequence().map { (r) throws(ScenarioError) -> ProbeRequest in try r.request() } ?? []
        var catalogue = ProbeCatalogue(name: name, description: try m["description"]?.string() ?? "", setup: setup, probes: probes)
        catalogue.cast = try m["cast"]?.choice(ProbeCast.self) ?? .app
        catalogue.codeSpace = try m["code_space"]?.codeSpace()
        return catalogue
    }

    func probe() throws(ScenarioError) -> Probe {
        let m = try mapping(["id", "category", "section", "description", "if_leaked", "steps"])
        guard let id = try m["id"]?.string(), !id.isEmpty else { throw error("a probe needs an id") }
        guard let category = try m["category"]?.string(), !category.isEmpty else { throw error("probe \"\(id)\" needs a category") }
        guard let description = try m["description"]?.string(), !description.isEmpty else { throw error("probe \"\(id)\" needs a description") }
        guard let stepsNode = m["steps"] else { throw error("probe \"\(id)\" needs steps") }
        let steps = try stepsNode.sequence().map { (r) throws(ScenarioError) -> ProbeStep in try r.step() }
        guard steps.contains(where: \.isJudged) else {
            throw stepsNode.error("probe \"\(id)\" judges nothing: give at least one step expect, leak_if or finding_if")
        }
        if category == Probe.readCategory, let first = steps.firstIndex(where: \.isJudged), !steps[...first].contains(where: \.isControl) {
            throw stepsNode.error("probe \"\(id)\" reads others' data but shows no allowed reader getting it first: give a step before "
                                  + "its first judged one whose requires: holds for the rightful reader (as: victim …, requires: {rows: \">0\"}), "
                                  + "or a realtime/channel step with control:; without it a read refused to everyone (a broken policy, a "
                                  + "missing table) would count as denied")
        }
        return Probe(id: id, category: category, description: description, ifLeaked: try m["if_leaked"]?.string() ?? "", steps: steps,
                     section: try m["section"]?.string())
    }

    func step() throws(ScenarioError) -> ProbeStep {
        let kinds = ["request", "realtime", "replay", "channel", "timing", "repeat", "compare", "wait"]
        let m = try mapping(kinds + ["expect", "leak_if", "finding_if", "requires", "save"])
        let actions = kinds.filter { m[$0] != nil }
        guard actions.count == 1 else {
            throw error("a step is one of \(kinds.joined(separator: ", ")) (found \(actions.isEmpty ? "none" : actions.joined(separator: ", ")))")
        }
        let action: ProbeStep.Action
        switch actions[0] {
        case "request": action = .request(try m["request"]!.request())
        case "realtime": action = .realtime(try m["realtime"]!.realtime())
        case "channel": action = .channel(try m["channel"]!.channel())
        case "timing": action = .timing(try m["timing"]!.timing())
        case "repeat": action = .series(try m["repeat"]!.repeated())
        case "compare": action = .compare(try m["compare"]!.compare())
        case "wait":
            action = .wait(try m["wait"]!.duration(minimum: 0.001))
            for key in ["expect", "leak_if", "finding_if", "requires", "save"] where m[key] != nil {
                throw m[key]!.error("a wait step is judged by nothing; give \(key) to the step after it")
            }
        default: action = .replay(try m["replay"]!.replay())
        }
        var save: [(name: String, column: String)] = []
        if let s = m["save"] {
            guard actions[0] == "request" else { throw s.error("save keeps columns of a request's response; this step is a \(actions[0])") }
            for (name, column) in try s.pairs() {
                guard Template.savedName("saved.\(name)") != nil, !column.isEmpty else {
                    throw s.error("save maps a name (letters, digits, _) to a column, e.g. {request: id}; found \(name): \(column)")
                }
                save.append((name, column))
            }
        }
        return ProbeStep(action: action, expect: try m["expect"]?.match(), leakIf: try m["leak_if"]?.match(),
                         findingIf: try m["finding_if"]?.match(), source: source, requires: try m["requires"]?.match(), save: save)
    }

    func request() throws(ScenarioError) -> ProbeRequest {
        let m = try mapping(["as", "method", "path", "query", "headers", "body", "body_raw"])
        guard let pathNode = m["path"] else { throw error("a request needs a path (e.g. /rest/v1/<table>)") }
        let path = try pathNode.templated()
        guard path.hasPrefix("/") else { throw pathNode.error("a path starts with /, found \"\(path)\"") }
        let method = try m["method"]?.string().uppercased() ?? "GET"
        guard ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"].contains(method) else { throw m["method"]!.error("unknown method \"\(method)\"") }
        guard m["body"] == nil || m["body_raw"] == nil else { throw error("give body (JSON) or body_raw (text), not both") }
        var body: ProbeBody?
        if let b = m["body"] { body = .json(try b.json()) }
        if let b = m["body_raw"] { body = .raw(try b.templated()) }
        return ProbeRequest(actor: try m["as"]?.choice(ProbeActor.self) ?? .attacker, method: method, path: path,
                            query: try m["query"]?.pairs() ?? [], headers: try m["headers"]?.pairs() ?? [], body: body, source: source)
    }

    func realtime() throws(ScenarioError) -> RealtimeProbe {
        let m = try mapping(["as", "token", "table", "event", "filter", "control", "then", "wait"])
        guard let table = try m["table"]?.string(), !table.isEmpty else { throw error("a realtime step needs a table") }
        let event = try m["event"]?.string() ?? "INSERT"
        guard ["INSERT", "UPDATE", "DELETE", "*"].contains(event) else { throw m["event"]!.error("event is INSERT, UPDATE, DELETE or *, found \"\(event)\"") }
        return RealtimeProbe(actor: try m["as"]?.choice(ProbeActor.self) ?? .attacker, token: try m["token"]?.templated(),
                             table: table, event: event, filter: try m["filter"]?.templated(),
                             control: try m["control"]?.choice(ProbeActor.self),
                             then: try m["then"]?.sequence().map { (r) throws(ScenarioError) -> ProbeRequest in try r.request() } ?? [],
                             wait: try m["wait"]?.duration() ?? 3)
    }

    func channel() throws(ScenarioError) -> ChannelProbe {
        let m = try mapping(["as", "token", "topic", "private", "broadcast", "track", "control", "wait"])
        guard let topicNode = m["topic"] else { throw error("a channel step needs a topic (e.g. op_{{victim.operation}}_locations)") }
        let topic = try topicNode.templated()
        guard !topic.isEmpty, !topic.hasPrefix("realtime:") else { throw topicNode.error("a topic is the channel's name, without realtime: (found \"\(topic)\")") }
        var broadcast: (event: String, payload: JSONTemplate)?
        if let b = m["broadcast"] {
            let bm = try b.mapping(["event", "payload"])
            guard let event = try bm["event"]?.string(), !event.isEmpty else { throw b.error("a broadcast needs an event (e.g. position)") }
            broadcast = (event, try bm["payload"]?.object() ?? .object([]))
        }
        return ChannelProbe(actor: try m["as"]?.choice(ProbeActor.self) ?? .attacker, token: try m["token"]?.templated(), topic: topic,
                            isPrivate: try m["private"]?.truth() ?? true, broadcast: broadcast, track: try m["track"]?.object(),
                            control: try m["control"]?.choice(ProbeActor.self), wait: try m["wait"]?.duration() ?? 2)
    }

    func timing() throws(ScenarioError) -> TimingProbe {
        let m = try mapping(["tries", "a", "b"])
        func side(_ key: String) throws(ScenarioError) -> [ProbeRequest] {
            guard let r = m[key] else { throw error("a timing step needs a and b (a request, or a list of them taken in turn)") }
            if case .sequence = r.node {
                let list = try r.sequence().map { (x) throws(ScenarioError) -> ProbeRequest in try x.request() }
                guard !list.isEmpty else { throw r.error("\(key) needs at least one request") }
                return list
            }
            return [try r.request()]
        }
        let tries = try m["tries"].map { (r) throws(ScenarioError) -> Int in
            guard let n = Int(try r.string()), (3...200).contains(n) else { throw r.error("tries is a whole number 3…200") }
            return n
        } ?? 8
        return TimingProbe(tries: tries, a: try side("a"), b: try side("b"))
    }

    /// A JSON object (a broadcast's payload, presence).
    func object() throws(ScenarioError) -> JSONTemplate {
        guard case .mapping = node else { throw error("expected a mapping (a JSON object)") }
        return try json()
    }

    func truth() throws(ScenarioError) -> Bool {
        switch try string().lowercased() {
        case "true", "yes": return true
        case "false", "no": return false
        case let s: throw error("expected true or false, found \"\(s)\"")
        }
    }

    func replay() throws(ScenarioError) -> ReplayProbe {
        let m = try mapping(["as", "sender"])
        return ReplayProbe(actor: try m["as"]?.choice(ProbeActor.self) ?? .attacker, sender: try m["sender"]?.templated() ?? "{{attacker.id}}")
    }

    func match() throws(ScenarioError) -> ProbeMatch {
        let keys = ["status", "code", "body_contains", "body_lacks", "rows", "events", "joined", "delivered", "presences", "gap_ms", "gap_percent",
                    "limited_at", "limited", "successes", "after_limit", "reset", "alike"]
        let m = try mapping(keys)
        guard !m.isEmpty else {
            throw error("give at least one condition (\(keys.joined(separator: ", ")))")
        }
        var match = ProbeMatch()
        if let s = m["status"] {
            let items: [Reader] = if case .sequence = s.node { try s.sequence() } else { [s] }
            match.status = try items.map { (r) throws(ScenarioError) -> ProbeMatch.StatusPattern in
                let text = try r.string().lowercased()
                if text.count == 3, text.hasSuffix("xx"), let h = Int(text.prefix(1)) { return .hundreds(h) }
                guard let n = Int(text), (100...599).contains(n) else { throw r.error("expected a status such as 403 or a class such as 2xx, found \"\(text)\"") }
                return .exact(n)
            }
        }
        if let c = m["code"] {
            let items: [Reader] = if case .sequence = c.node { try c.sequence() } else { [c] }
            match.code = try items.map { (r) throws(ScenarioError) -> String in try r.string() }
        }
        match.bodyContains = try m["body_contains"]?.templated()
        match.bodyLacks = try m["body_lacks"]?.templated()
        match.joined = try m["joined"]?.truth()
        match.limited = try m["limited"]?.truth()
        match.reset = try m["reset"]?.truth()
        match.alike = try m["alike"]?.truth()
        for key in ["rows", "events", "delivered", "presences", "gap_ms", "gap_percent", "limited_at", "successes", "after_limit"] {
            guard let r = m[key] else { continue }
            let text = try r.string()
            guard let c = ProbeMatch.Comparison.parse(text) else { throw r.error("expected a count such as 0, >0, >=2 or <3, found \"\(text)\"") }
            switch key {
            case "rows": match.rows = c
            case "events": match.events = c
            case "delivered": match.delivered = c
            case "gap_ms": match.gapMs = c
            case "gap_percent": match.gapPercent = c
            case "limited_at": match.limitedAt = c
            case "successes": match.successes = c
            case "after_limit": match.afterLimit = c
            default: match.presences = c
            }
        }
        return match
    }

    /// A mapping of names to text, in order (query parameters, headers).
    func pairs() throws(ScenarioError) -> [(name: String, value: String)] {
        guard case .mapping(let m) = node else { throw error("expected a mapping of names to values") }
        var out: [(name: String, value: String)] = []
        for (k, v) in m {
            let key = k.string ?? ""
            out.append((key, try Reader(file: file, node: v, path: "\(path).\(key)").templated()))
        }
        return out
    }

    /// A body: JSON from YAML whose placeholders a catalogue may use (`Reader.jsonTemplate`).
    func json() throws(ScenarioError) -> JSONTemplate {
        try jsonTemplate { (r: Reader) throws(ScenarioError) in _ = try r.templated() }
    }

    /// Text whose `{{placeholders}}` are all known.
    func templated() throws(ScenarioError) -> String {
        try template(known: ProbeTemplate.isKnown, names: ProbeTemplate.names, docs: "docs/probes.md")
    }
}
