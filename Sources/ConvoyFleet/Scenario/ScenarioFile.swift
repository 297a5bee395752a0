import ConvoyGeo
import ConvoyMetrics
import Foundation
import Yams

/// A scenario file that cannot be used: where, which key, what is wrong, and
/// what was probably meant.
public struct ScenarioError: Error, Sendable, CustomStringConvertible {
    public let file: String
    public let line: Int
    public let column: Int
    /// The key path, e.g. `groups[1].cadence`.
    public let path: String
    public let message: String

    public var description: String {
        "\(file):\(line):\(column): \(path.isEmpty ? "" : "\(path): ")\(message)"
    }
}

/// Reads scenario YAML strictly: unknown keys and wrong types are errors
/// with their position, never silently ignored.
public enum ScenarioFile {
    public static func load(_ path: String) throws(ScenarioError) -> Scenario {
        try parse(try YAMLDocument.text(path), file: path)
    }

    public static func parse(_ text: String, file: String) throws(ScenarioError) -> Scenario {
        try YAMLDocument.root(text, file: file, empty: "a scenario needs at least name and groups").scenario()
    }
}

extension YamlError {
    var mark: Mark? {
        switch self {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): mark
        case .duplicatedKeysInMapping(_, let context): context.mark
        default: nil
        }
    }
    var line: Int { mark?.line ?? 0 }
    var column: Int { mark?.column ?? 0 }
    var problem: String {
        switch self {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): problem
        case .duplicatedKeysInMapping(let keys, _): "a key is given twice: \(keys.joined(separator: ", "))"
        default: "\(self)"
        }
    }
}

/// A position in the YAML tree and what can be read from it.
struct Reader {
    let file: String
    let node: Node
    let path: String

    func error(_ message: String) -> ScenarioError {
        ScenarioError(file: file, line: node.mark?.line ?? 0, column: node.mark?.column ?? 0, path: path, message: message)
    }

    // MARK: Shapes

    /// The mapping here, after checking every key is one of `allowed`.
    func mapping(_ allowed: [String]) throws(ScenarioError) -> [String: Reader] {
        guard case .mapping(let m) = node else { throw error("expected a mapping (key: value lines), found \(kind)") }
        var out: [String: Reader] = [:]
        for (k, v) in m {
            let key = k.string ?? ""
            let sub = Reader(file: file, node: k, path: child(key))
            guard allowed.contains(key) else {
                var message = "unknown key \"\(key)\""
                if let guess = Spelling.closest(key, among: allowed) { message += "; did you mean \"\(guess)\"?" }
                throw sub.error(message + " (keys here: \(allowed.joined(separator: ", ")))")
            }
            guard out[key] == nil else { throw sub.error("\"\(key)\" is given twice") }
            out[key] = Reader(file: file, node: v, path: child(key))
        }
        return out
    }

    func sequence() throws(ScenarioError) -> [Reader] {
        guard case .sequence(let s) = node else { throw error("expected a list (- item lines), found \(kind)") }
        return s.enumerated().map { Reader(file: file, node: $1, path: "\(path)[\($0)]") }
    }

    func string() throws(ScenarioError) -> String {
        guard case .scalar(let s) = node else { throw error("expected a value, found \(kind)") }
        return s.string
    }

    func int(_ range: ClosedRange<Int>) throws(ScenarioError) -> Int {
        let s = try string()
        guard let n = Int(s.replacingOccurrences(of: "_", with: "")) else { throw error("expected a whole number, found \"\(s)\"") }
        guard range.contains(n) else { throw error("\(n) is out of range \(range.lowerBound)…\(range.upperBound)") }
        return n
    }

    func bool() throws(ScenarioError) -> Bool {
        switch try string() {
        case "true", "yes", "on": true
        case "false", "no", "off": false
        case let s: throw error("expected true or false, found \"\(s)\"")
        }
    }

    /// A fraction: 0.25 or 25%.
    func fraction() throws(ScenarioError) -> Double {
        let s = try string().trimmingCharacters(in: .whitespaces)
        let value = s.hasSuffix("%") ? Quantity.number(String(s.dropLast())).map { $0 / 100 } : Quantity.number(s)
        guard let v = value, (0...1).contains(v) else { throw error("expected a fraction 0…1 or a percentage (25%), found \"\(s)\"") }
        return v
    }

    /// A duration: 90, 90s, 1.5m, 250ms, 1h30m (a bare number is seconds), at most 30 days.
    func duration(minimum: Double = 0) throws(ScenarioError) -> Double {
        let s = try string()
        guard let seconds = Quantity.seconds(s) else { throw error("expected a duration such as 30s, 2m, 250ms, 1h30m or 2d, found \"\(s)\"") }
        guard seconds >= minimum else { throw error("must be at least \(Quantity.format(seconds: minimum)), found \"\(s)\"") }
        guard seconds <= Quantity.longest else { throw error("at most 30 days, found \"\(s)\"") }
        return seconds
    }

    /// A distance in metres: 5, 5m, 1.2km.
    func metres() throws(ScenarioError) -> Double {
        let s = try string()
        guard let m = Quantity.metres(s), m >= 0 else { throw error("expected a distance such as 5m or 1.2km, found \"\(s)\"") }
        return m
    }

    func choice<T: RawRepresentable & CaseIterable>(_: T.Type) throws(ScenarioError) -> T where T.RawValue == String {
        let s = try string()
        if let v = T(rawValue: s) { return v }
        let names = T.allCases.map(\.rawValue)
        var message = "\"\(s)\" is not one of \(names.joined(separator: ", "))"
        if let guess = Spelling.closest(s, among: names) { message += "; did you mean \"\(guess)\"?" }
        throw error(message)
    }

    private var kind: String {
        switch node {
        case .scalar(let s): "the value \"\(s.string)\""
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .alias: "an alias"
        }
    }

    func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    // MARK: The scenario

    func scenario() throws(ScenarioError) -> Scenario {
        let m = try mapping(["name", "app", "seed", "target", "groups", "social", "timeline", "workload", "thresholds", "migration", "retention", "battery", "hostile", "retry", "auth"])
        guard let name = try m["name"]?.string(), !name.isEmpty else { throw error("a scenario needs a name") }
        guard let groupsNode = m["groups"] else { throw error("a scenario needs groups (at least one group of devices)") }
        let groups = try groupsNode.sequence().map { (r) throws(ScenarioError) -> DeviceGroup in try r.group() }
        guard !groups.isEmpty else { throw groupsNode.error("at least one group of devices") }
        var names = Set<String>()
        for (i, g) in groups.enumerated() where !names.insert(g.name).inserted {
            throw try groupsNode.sequence()[i].error("two groups are named \"\(g.name)\"")
        }
        let seed: UInt64
        if let s = m["seed"] {
            let text = try s.string()
            guard text.allSatisfy({ $0.isASCII && $0.isNumber }), let v = UInt64(text) else { throw s.error("expected a whole number ≥ 0, found \"\(text)\"") }
            seed = v
        } else {
            seed = 1
        }
        // The app first: its actions are histograms thresholds may name.
        let app = try checkedApp(m)
        let declared = app.declared?.actions.map(\.name) ?? []
        var scenario = Scenario(
            name: name, seed: seed, target: try m["target"]?.target() ?? .embedded, groups: groups,
            social: try m["social"]?.social() ?? Social(), timeline: try m["timeline"]?.timeline() ?? Timeline(),
            workload: try m["workload"]?.choice(Scenario.Workload.self) ?? .open,
            thresholds: try m["thresholds"]?.sequence().map { (r) throws(ScenarioError) -> Threshold in
                let text = try r.string()
                let threshold: Threshold
                do {
                    threshold = try Threshold(text)
                } catch {
                    throw r.error("\(error)")
                }
                if let unknown = threshold.unknownMetric(declared: declared) { throw r.error(unknown) }
                return threshold
            } ?? [],
            migration: try m["migration"]?.migration(),
            retention: try m["retention"]?.retention() ?? RetentionPolicy())
        .with(battery: try m["battery"]?.battery() ?? BatterySettings(), hostile: try m["hostile"]?.hostile(),
              app: app, retry: try m["retry"]?.retryPolicy() ?? .none)
        // An app of actions alone: its phones have no friends.
        if app.declared?.sharesLocations == false { scenario.social = Social(friends: 0...0) }
        // Closer's phones account for the outcome reminders owed them with the couples' day and the scan's interval.
        if scenario.app.name == "closer", app.declared == nil {
            scenario.app.options.values["outcome_day"] = String(scenario.social.outcomeDay ?? 86_400)
            scenario.app.options.values["reminder_every"] = String(scenario.social.reminderEvery ?? 60)
        }
        if let auth = m["auth"] { scenario.tokenTTL = try auth.tokenTTL(target: scenario.target) }
        // Retention as the app's shape keeps it, unless the scenario says (`Delivery/ScenarioFile+Shape.swift`).
        scenario.applyShapeRetention(given: try m["retention"]?.mapping(["window", "purge_every", "grace", "check_every", "sample", "scan"]))
        return scenario
    }

    /// `auth: {token_ttl: 2m}`: the embedded backend's access-token lifetime, so that a short run renews every
    /// phone's session (each refreshes before expiry). Another backend's lifetime is its own setting.
    func tokenTTL(target: Scenario.Target) throws(ScenarioError) -> Double? {
        let m = try mapping(["token_ttl"])
        guard let ttl = m["token_ttl"] else { return nil }
        guard target == .embedded else {
            throw ttl.error("token_ttl sets the embedded backend's access-token lifetime; another backend's is its own "
                            + "(convoy serve --token-ttl, or the project's JWT expiry)")
        }
        let seconds = try ttl.duration()
        guard seconds >= 5 else { throw ttl.error("at least 5s (a phone refreshes a fifth of the lifetime before expiry)") }
        return seconds
    }

    /// A profile name: letters, digits, `_` and `-`.
    func name() throws(ScenarioError) -> String {
        let s = try string()
        guard !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }) else {
            throw error("expected a profile name such as lte, 3g or wifi, found \"\(s)\"")
        }
        return s
    }

    func hostile() throws(ScenarioError) -> Hostile {
        let m = try mapping(["share", "catalogue", "at", "every"])
        guard let share = m["share"] else { throw error("hostile needs share (the fraction of devices that probe)") }
        guard let catalogue = m["catalogue"] else { throw error("hostile needs catalogue (a probe catalogue file, e.g. ../probes/greenbox.yaml)") }
        var h = Hostile(share: try share.fraction(), catalogue: try catalogue.string(), at: try m["at"]?.duration() ?? 5,
                        every: try m["every"]?.duration() ?? 0)
        if h.every > 0, h.every < 10 { throw m["every"]!.error("at least 10s (a pass takes several seconds), or 0 for once") }
        (h.catalogueLine, h.catalogueColumn) = (catalogue.node.mark?.line ?? 0, catalogue.node.mark?.column ?? 0)
        return h
    }

    func battery() throws(ScenarioError) -> BatterySettings {
        let m = try mapping(["capacity", "profiles"])
        var b = BatterySettings()
        if let c = m["capacity"] {
            let text = try c.string().trimmingCharacters(in: .whitespaces)
            let digits = text.lowercased().hasSuffix("mah") ? String(text.dropLast(3)).trimmingCharacters(in: .whitespaces) : text
            guard let v = Quantity.number(digits), v > 0, v <= 1_000_000 else { throw c.error("expected a capacity such as 3000mAh, found \"\(text)\"") }
            b.capacity = v
        }
        if let p = m["profiles"] {
            b.profiles = try p.string()
            (b.profilesLine, b.profilesColumn) = (p.node.mark?.line ?? 0, p.node.mark?.column ?? 0)
        }
        return b
    }

    func retention() throws(ScenarioError) -> RetentionPolicy {
        let m = try mapping(["window", "purge_every", "grace", "check_every", "sample", "scan"])
        let d = RetentionPolicy()
        var p = RetentionPolicy(window: try m["window"]?.duration(minimum: 1) ?? d.window, purgeEvery: try m["purge_every"]?.duration() ?? d.purgeEvery,
                                grace: try m["grace"]?.duration() ?? d.grace, checkEvery: try m["check_every"]?.duration() ?? d.checkEvery,
                                sample: try m["sample"]?.int(1...10_000) ?? d.sample, scan: d.scan)
        if let scan = m["scan"] {
            switch try scan.string() {
            case "true", "yes", "on": p.scan = true
            case "false", "no", "off": p.scan = false
            case let other: throw scan.error("expected true or false, found \"\(other)\"")
            }
        }
        if p.checkEvery > 0, p.checkEvery < 0.5 { throw m["check_every"]!.error("at least 500ms, or 0 for no checks") }
        return p
    }

    func migration() throws(ScenarioError) -> Migration {
        let m = try mapping(["share", "at", "reaccept"])
        guard let share = m["share"] else { throw error("a migration needs share (the fraction of devices that reinstall)") }
        return Migration(share: try share.fraction(), at: try m["at"]?.duration() ?? 0, reaccept: try m["reaccept"]?.range() ?? 5...30)
    }

    func target() throws(ScenarioError) -> Scenario.Target {
        if case .scalar = node {
            let s = try string()
            guard s == "embedded" else { throw error("a target is \"embedded\", or a mapping with url and anon_key, or keys_file") }
            return .embedded
        }
        let m = try mapping(["url", "anon_key", "service_key", "keys_file"])
        if let keys = m["keys_file"] {
            guard m["url"] == nil, m["anon_key"] == nil, m["service_key"] == nil else {
                throw keys.error("give keys_file, or url and anon_key (and service_key), not both")
            }
            return .keysFile(try keys.string())
        }
        guard let url = m["url"] else { throw error("a target needs url (and anon_key), or keys_file") }
        let u = try url.string()
        guard u.hasPrefix("http://") || u.hasPrefix("https://"), URL(string: u) != nil else { throw url.error("expected an http(s) URL, found \"\(u)\"") }
        guard let anon = m["anon_key"] else { throw error("a target with a url needs anon_key") }
        return .project(url: u, anonKey: try anon.string(), serviceKey: try m["service_key"]?.string())
    }

    func tracks() throws(ScenarioError) -> DeviceGroup.TrackSource {
        let m = try mapping(["synthetic", "files"])
        switch (m["synthetic"], m["files"]) {
        case (let s?, nil): return .synthetic(try s.choice(MobilityProfile.self))
        case (nil, let f?):
            let files = try f.sequence().map { (r) throws(ScenarioError) -> String in try r.string() }
            guard !files.isEmpty else { throw f.error("at least one file or glob") }
            return .files(files)
        default: throw error("tracks are either synthetic: <profile> or files: [paths or globs]")
        }
    }

    /// `10s..15s` (or one duration for a fixed interval).
    /// An interval of durations, `10s..15s`, or one duration; with `fromZero` it may start at 0 (a window of time).
    func range(fromZero: Bool = false) throws(ScenarioError) -> ClosedRange<Double> {
        let s = try string()
        let parts = s.components(separatedBy: "..")
        guard let low = Quantity.seconds(parts[0]), let high = parts.count == 2 ? Quantity.seconds(parts[1]) : low, parts.count <= 2
        else { throw error("expected an interval such as 10s..15s, or one duration, found \"\(s)\"") }
        guard fromZero ? low >= 0 : low > 0, low <= high else {
            throw error("the interval must be above \(fromZero ? "or at " : "")0 and its low end first, found \"\(s)\"")
        }
        guard high <= Quantity.longest else { throw error("at most 30 days, found \"\(s)\"") }
        return low...high
    }

    func timeline() throws(ScenarioError) -> Timeline {
        let m = try mapping(["arrival_rate", "steady", "ramp_down"])
        var t = Timeline()
        if let r = m["arrival_rate"] {
            let s = try r.string()
            let number = s.hasSuffix("/s") ? String(s.dropLast(2)) : s
            guard let v = Quantity.number(number), v > 0 else {
                throw r.error("expected devices per second such as 20/s, found \"\(s)\"")
            }
            t.arrivalRate = v
        }
        if let s = m["steady"] { t.steady = try s.duration() }
        if let d = m["ramp_down"] { t.rampDown = try d.duration() }
        return t
    }
}

/// Durations and distances as scenario files write them.
public enum Quantity {
    /// The longest duration a scenario may give: 30 days.
    public static let longest: Double = 30 * 86_400

    /// A plain decimal number ≥ 0 (`PlainNumber`: no signs, exponents, hex, `inf` or `nan`).
    public static func number(_ text: String) -> Double? { PlainNumber.parse(text) }

    /// `90`, `90s`, `1.5m`, `250ms`, `2h`, `1h30m`, `1m30s`: units from
    /// largest to smallest, each at most once.
    /// A duration in seconds, in the grammar every key, flag and threshold shares (`DurationText`).
    public static func seconds(_ text: String) -> Double? { DurationText.seconds(text) }

    public static func metres(_ text: String) -> Double? {
        let s = text.trimmingCharacters(in: .whitespaces)
        if s.hasSuffix("km") { return number(String(s.dropLast(2))).map { $0 * 1000 } }
        if s.hasSuffix("m") { return number(String(s.dropLast())) }
        return number(s)
    }

    public static func format(seconds: Double) -> String {
        seconds < 1 ? "\(Int(seconds * 1000))ms" : seconds.truncatingRemainder(dividingBy: 1) == 0 ? "\(Int(seconds))s" : "\(seconds)s"
    }
}
