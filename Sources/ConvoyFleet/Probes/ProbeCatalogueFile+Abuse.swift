import Foundation
import Yams

/// The abuse steps' readers: `repeat`, `compare`, and the catalogue's `code_space`.
extension Reader {
    func repeated() throws(ScenarioError) -> RepeatProbe {
        let m = try mapping(["times", "request", "callers", "rate", "limited_when", "reset_after", "estimate"])
        guard let timesNode = m["times"] else { throw error("a repeat step needs times (attempts, 1…10000)") }
        let times = try timesNode.int(1...10_000)
        guard let r = m["request"] else { throw error("a repeat step needs a request (or a list of them, taken in turn)") }
        let requests = try r.requests()
        var callers: [ProbeActor]?
        if let c = m["callers"] {
            let items: [Reader] = if case .sequence = c.node { try c.sequence() } else { [c] }
            callers = try items.map { (x) throws(ScenarioError) -> ProbeActor in try x.choice(ProbeActor.self) }
            guard !callers!.isEmpty else { throw c.error("give at least one caller") }
        }
        var rate: Double?
        if let n = m["rate"] {
            let text = try n.string().replacingOccurrences(of: " ", with: "")
            if text != "fast" {
                let number = text.hasSuffix("/s") ? String(text.dropLast(2)) : text
                guard let v = Double(number), v > 0, v <= 10_000 else {
                    throw n.error("rate is attempts per second (e.g. 5/s, 0.5/s) or fast, found \"\(text)\"")
                }
                rate = v
            }
        }
        var estimate: BruteForceAssumptions?
        if let e = m["estimate"] {
            let em = try e.mapping(["window", "per", "accounts", "ttl"])
            guard let w = em["window"] else { throw e.error("an estimate needs the limit's window as the specification gives it (e.g. 1h)") }
            let per = try em["per"]?.string() ?? "caller"
            guard ["caller", "ip"].contains(per) else { throw em["per"]!.error("per is caller or ip, found \"\(per)\"") }
            estimate = BruteForceAssumptions(window: try w.duration(minimum: 0.001), perCaller: per == "caller",
                                             accounts: try em["accounts"]?.int(1...100_000_000) ?? 1_000,
                                             ttl: try em["ttl"]?.duration(minimum: 1))
        }
        return RepeatProbe(times: times, requests: requests, callers: callers, rate: rate,
                           limitedWhen: try m["limited_when"]?.match() ?? ProbeMatch(status: [.exact(429)]),
                           resetAfter: try m["reset_after"]?.duration(minimum: 0.001), estimate: estimate)
    }

    func compare() throws(ScenarioError) -> CompareProbe {
        let m = try mapping(["a", "b", "tries", "within"])
        guard let a = m["a"], let b = m["b"] else { throw error("a compare step needs a and b: requests that differ only in whether a thing exists") }
        var within: (ms: Double, percent: Double)?
        if let w = m["within"] {
            let wm = try w.mapping(["ms", "percent"])
            guard let ms = wm["ms"], let percent = wm["percent"] else {
                throw w.error("within needs ms and percent: time differs only when the two sides' fastest answers are further apart than both")
            }
            within = (Double(try ms.int(0...600_000)), Double(try percent.int(0...100)))
        }
        return CompareProbe(a: try a.requests(), b: try b.requests(), tries: try m["tries"]?.int(1...200) ?? (within == nil ? 1 : 8), within: within)
    }

    func codeSpace() throws(ScenarioError) -> CodeSpace {
        let m = try mapping(["alphabet", "length", "prefix", "live"])
        guard let a = m["alphabet"] else { throw error("a code_space needs its alphabet (the symbols a code is made of)") }
        let alphabet = Array(try a.string())
        guard alphabet.count >= 2, Set(alphabet).count == alphabet.count else {
            throw a.error("the alphabet needs at least two symbols, each once (found \(alphabet.count), \(Set(alphabet).count) distinct)")
        }
        guard let l = m["length"] else { throw error("a code_space needs its length (symbols after the prefix)") }
        return CodeSpace(alphabet: alphabet, length: try l.int(1...64), prefix: try m["prefix"]?.string() ?? "",
                         live: try m["live"]?.int(1...1_000_000_000) ?? 1)
    }

    /// One request, or a non-empty list of them.
    func requests() throws(ScenarioError) -> [ProbeRequest] {
        if case .sequence = node {
            let list = try sequence().map { (x) throws(ScenarioError) -> ProbeRequest in try x.request() }
            guard !list.isEmpty else { throw error("give at least one request") }
            return list
        }
        return [try request()]
    }
}
