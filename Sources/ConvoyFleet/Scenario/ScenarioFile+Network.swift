import ConvoyMetrics
import ConvoyWire
import Foundation
import Yams

/// A group's `conditions:` (docs/network.md): a preset, or a mapping that starts
/// from one (`preset:`, lte by default) and sets any of its values.
extension Reader {
    static let conditionKeys = ["preset", "rtt", "jitter", "loss", "up", "down", "resets", "offline"]

    func conditions() throws(ScenarioError) -> NetworkConditions {
        let presets = NetworkConditions.presets.keys.sorted()
        func preset(_ r: Reader) throws(ScenarioError) -> NetworkConditions {
            let name = try r.string()
            if let p = NetworkConditions.presets[name] { return p }
            var message = "\"\(name)\" is not a network preset (\(presets.joined(separator: ", ")))"
            if let guess = Spelling.closest(name, among: presets) { message += "; did you mean \"\(guess)\"?" }
            throw r.error(message)
        }
        if case .scalar = node { return try preset(self) }
        let m = try mapping(Self.conditionKeys)
        var c = try m["preset"].map { (r) throws(ScenarioError) in try preset(r) } ?? NetworkConditions.presets["lte"]!
        if let r = m["rtt"] { c.rtt = try r.duration() }
        if let j = m["jitter"] { c.jitter = try j.duration() }
        if let l = m["loss"] {
            c.loss = try l.fraction()
            guard c.loss < 0.5 else { throw l.error("a loss of half the segments or more would never deliver anything; at most 49%") }
        }
        if let u = m["up"] { c.up = try u.bandwidth() }
        if let d = m["down"] { c.down = try d.bandwidth() }
        if let r = m["resets"] {
            if case .scalar(let s) = r.node, ["none", "0"].contains(s.string) { c.resetEvery = 0 } else { c.resetEvery = try r.duration(minimum: 1) }
        }
        if let o = m["offline"] { c.offline = try o.offline() }
        return c
    }

    /// `offline: none`, `{every: 5m, for: 60s}`, or `{mean_interval: 5m, mean_duration: 60s}` (a seeded random process).
    func offline() throws(ScenarioError) -> NetworkConditions.Offline? {
        if case .scalar(let s) = node, s.string == "none" { return nil }
        let m = try mapping(["every", "for", "mean_interval", "mean_duration"])
        switch (m["every"], m["for"], m["mean_interval"], m["mean_duration"]) {
        case (let every?, let length?, nil, nil):
            let e = try every.duration(minimum: 1), l = try length.duration(minimum: 0.1)
            guard l < e else { throw length.error("an offline window must be shorter than the time between them (every)") }
            return .periodic(every: e, for: l)
        case (nil, nil, let interval?, let length?):
            return .random(meanInterval: try interval.duration(minimum: 1), meanDuration: try length.duration(minimum: 0.1))
        default:
            throw error("offline is {every: 5m, for: 60s}, {mean_interval: 5m, mean_duration: 60s} (random), or none")
        }
    }

    /// Bits per second: `2mbit`, `500kbit`, `1.5 Mbit/s`, `750kbps`, `100000` (bit/s).
    func bandwidth() throws(ScenarioError) -> Double {
        let s = try string()
        var text = s.lowercased().replacingOccurrences(of: " ", with: "")
        for suffix in ["/s", "ps"] where text.hasSuffix(suffix) { text.removeLast(suffix.count) }
        var scale = 1.0
        for (unit, factor) in [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0), ("gb", 1e9), ("mb", 1e6), ("kb", 1e3)] where text.hasSuffix(unit) {
            text.removeLast(unit.count)
            scale = factor
            break
        }
        guard let v = Quantity.number(text), v * scale >= 1_000 || v == 0 else {
            throw error("expected a bandwidth such as 2mbit, 500kbit or 1.5 Mbit/s (at least 1 kbit/s; 0: not limited), found \"\(s)\"")
        }
        return v * scale
    }
}
