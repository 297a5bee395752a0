import Foundation
import Yams

/// Reads battery profile YAML strictly, with the scenario reader: unknown keys,
/// wrong types and out-of-range numbers are errors naming file:line:column and
/// the key path (`networks.lte.tail[0].power_w: …`).
public enum BatteryProfilesFile {
    public static func load(_ path: String, over base: BatteryProfiles = BatteryProfiles()) throws(ScenarioError) -> BatteryProfiles {
        try parse(try YAMLDocument.text(path), file: path, over: base)
    }

    /// Sections and networks the text gives replace those in `base`; new networks are added.
    public static func parse(_ text: String, file: String, over base: BatteryProfiles = BatteryProfiles()) throws(ScenarioError) -> BatteryProfiles {
        try YAMLDocument.root(text, file: file, empty: "give at least one of battery, gps, cpu, networks").batteryProfiles(over: base)
    }
}

extension Reader {
    /// A plain decimal number in `range` (no signs, exponents, `inf` or `nan`).
    func number(_ range: ClosedRange<Double>, unit: String) throws(ScenarioError) -> Double {
        let s = try string()
        guard let v = Quantity.number(s) else { throw error("expected a number of \(unit) such as 0.35, found \"\(s)\"") }
        guard range.contains(v) else { throw error("\(s) is out of range \(range.lowerBound)…\(range.upperBound) \(unit)") }
        return v
    }

    func required(_ m: [String: Reader], _ key: String, _ what: String) throws(ScenarioError) -> Reader {
        guard let r = m[key] else { throw error("missing \(key) (\(what))") }
        return r
    }

    func batteryProfiles(over base: BatteryProfiles) throws(ScenarioError) -> BatteryProfiles {
        let m = try mapping(["battery", "gps", "cpu", "networks"])
        var profiles = base
        if let b = m["battery"] {
            let k = try b.mapping(["voltage_v", "capacity_mah", "source"])
            if let v = k["voltage_v"] { profiles.battery.voltage = try v.number(1...20, unit: "volts") }
            if let c = k["capacity_mah"] { profiles.battery.capacityMAh = try c.number(1...1_000_000, unit: "mAh") }
        }
        if let g = m["gps"] {
            let modes = try g.mapping(LocationMode.allCases.map(\.rawValue))
            for mode in LocationMode.allCases {
                guard let r = modes[mode.rawValue] else { continue }
                let k = try r.mapping(["power_w", "duty", "source"])
                profiles.gps.modes[mode] = GPSProfile.Mode(
                    power: try r.required(k, "power_w", "watts while the receiver is on").number(0...20, unit: "watts"),
                    duty: try r.required(k, "duty", "the fraction of time the receiver is on, 0…1").number(0...1, unit: ""))
            }
        }
        if let c = m["cpu"] {
            let k = try c.mapping(["active_w", "time_scale", "source"])
            if let a = k["active_w"] { profiles.cpu.activePower = try a.number(0...50, unit: "watts") }
            if let t = k["time_scale"] { profiles.cpu.timeScale = try t.number(0...1000, unit: "") }
        }
        if let n = m["networks"] {
            guard case .mapping(let pairs) = n.node else { throw n.error("expected a mapping of network names to profiles") }
            for (key, value) in pairs {
                guard let name = key.string, !name.isEmpty else { throw n.error("a network needs a name") }
                let path = n.path.isEmpty ? name : "\(n.path).\(name)"
                profiles.networks[name] = try Reader(file: file, node: value, path: path).radioProfile()
                if !profiles.networkNames.contains(name) { profiles.networkNames.append(name) }
            }
        }
        return profiles
    }

    func radioProfile() throws(ScenarioError) -> RadioProfile {
        let m = try mapping(["uplink_mbps", "downlink_mbps", "promotion", "transfer", "tail", "idle_w", "source"])
        // Read in file order, so the first missing key is the one reported.
        let uplink = try required(m, "uplink_mbps", "uplink throughput").number(0.001...100_000, unit: "Mbit/s")
        let downlink = try required(m, "downlink_mbps", "downlink throughput").number(0.001...100_000, unit: "Mbit/s")
        let promotion = try required(m, "promotion", "{ seconds, power_w } from idle to connected").radioStep()
        let t = try required(m, "transfer", "{ alpha_up_w_per_mbps, alpha_down_w_per_mbps, beta_w }")
        let k = try t.mapping(["alpha_up_w_per_mbps", "alpha_down_w_per_mbps", "beta_w"])
        let alphaUp = try t.required(k, "alpha_up_w_per_mbps", "watts per Mbit/s up").number(0...100, unit: "W per Mbit/s")
        let alphaDown = try t.required(k, "alpha_down_w_per_mbps", "watts per Mbit/s down").number(0...100, unit: "W per Mbit/s")
        let beta = try t.required(k, "beta_w", "watts while transferring").number(0...50, unit: "watts")
        let tailNode = try required(m, "tail", "a list of stages { name, seconds, power_w }")
        let tail = try tailNode.sequence().map { (r) throws(ScenarioError) -> RadioProfile.TailStage in try r.tailStage() }
        let idle = try required(m, "idle_w", "average watts while idle").number(0...50, unit: "watts")
        return RadioProfile(uplinkMbps: uplink, downlinkMbps: downlink, promotion: promotion, alphaUp: alphaUp, alphaDown: alphaDown,
                            beta: beta, tail: tail, idlePower: idle)
    }

    func radioStep() throws(ScenarioError) -> RadioProfile.Step {
        let k = try mapping(["seconds", "power_w"])
        return RadioProfile.Step(seconds: try required(k, "seconds", "how long").number(0...3600, unit: "seconds"),
                                 power: try required(k, "power_w", "watts").number(0...50, unit: "watts"))
    }

    func tailStage() throws(ScenarioError) -> RadioProfile.TailStage {
        let k = try mapping(["name", "seconds", "power_w", "promotion", "small_transfer"])
        var small: (up: Int, down: Int)?
        if let s = k["small_transfer"] {
            let b = try s.mapping(["up_bytes", "down_bytes"])
            small = (try s.required(b, "up_bytes", "largest upload carried in this stage").int(0...100_000_000),
                     try s.required(b, "down_bytes", "largest download carried in this stage").int(0...100_000_000))
        }
        return RadioProfile.TailStage(
            name: try required(k, "name", "the stage's name, e.g. dch").string(),
            seconds: try required(k, "seconds", "inactivity before the next stage").number(0...3600, unit: "seconds"),
            power: try required(k, "power_w", "watts in this stage").number(0...50, unit: "watts"),
            promotion: try k["promotion"]?.radioStep(), smallTransfer: small)
    }
}
