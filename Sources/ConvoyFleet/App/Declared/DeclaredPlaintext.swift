import ConvoyCrypto
import ConvoyJSON
import ConvoySodium
import ConvoyWire

/// A declared app's sealed plaintext (`plaintext:` in its file): a JSON template whose placeholders are a position's
/// fields in the units the app uses, written when a phone seals and read back, by the same template, when its friend
/// opens. Names (docs/apps.md, "The sealed plaintext"):
/// `lat`, `lon` (degrees), `acc` (metres), `time.s` (whole Unix seconds), `time.ms` (Unix milliseconds),
/// `time.iso` (ISO 8601, UTC, milliseconds); optional, left out when the phone has none: `heading` (degrees),
/// `speed` (m/s), the phone's battery as `battery.percent` (a whole 0–100) or `battery.fraction` (0–1, in hundredths),
/// and Convoy's own `seq` and `sent_ns` (without them a friend matches an update by what was sealed).
public struct DeclaredPlaintext: Sendable, Equatable {
    public static let names = ["lat", "lon", "acc", "time.s", "time.ms", "time.iso", "heading", "speed", "battery.percent", "battery.fraction",
                               "seq", "sent_ns"]
    public static let optional: Set<String> = ["heading", "speed", "battery.percent", "battery.fraction", "seq", "sent_ns"]
    static let times = ["time.s", "time.ms", "time.iso"]

    public let template: JSONTemplate
    /// The placeholders it uses.
    let used: Set<String>

    public init(_ template: JSONTemplate) {
        self.template = template
        used = Set(template.placeholders)
    }

    /// Whether it carries the phone's battery level.
    var carriesBattery: Bool { used.contains("battery.percent") || used.contains("battery.fraction") }

    /// What a friend will read of `update`: the fields the template carries, the time as precise as its unit.
    public func plaintext(of update: LocationPayload) -> LocationPayload {
        var p = LocationPayload(lat: update.lat, lon: update.lon, ts: update.ts, acc: update.acc)
        if used.contains("time.s") {
            p.ts = update.ts.rounded(.down)
        } else {
            p.ts = (update.ts * 1000).rounded(.down) / 1000
        }
        if used.contains("seq") { p.seq = update.seq }
        if used.contains("sent_ns") { p.sentNanos = update.sentNanos }
        if used.contains("heading") { p.heading = update.heading }
        if used.contains("speed") { p.speed = update.speed }
        if carriesBattery { p.battery = update.battery.map { ($0 * 100).rounded() / 100 } }
        return p
    }

    /// The JSON text sealed for `update`.
    public func bytes(_ update: LocationPayload) throws(CryptoError) -> [UInt8] {
        try update.validate()
        do {
            return try template.render({ name in Self.value(name, of: update) }, omit: Self.optional.contains)
        } catch {
            throw .badJSON("the plaintext has no value for {{\(error.name)}}")
        }
    }

    static func value(_ name: String, of p: LocationPayload) -> JSONValue? {
        switch name {
        case "lat": .number(number(p.lat))
        case "lon": .number(number(p.lon))
        case "acc": .number(number(p.acc))
        case "time.s": .number(String(Int64(p.ts.rounded(.down))))
        case "time.ms": .number(String(Int64((p.ts * 1000).rounded(.down))))
        case "time.iso": .string(iso(p.ts))
        case "heading": p.heading.map { .number(number($0)) }
        case "speed": p.speed.map { .number(number($0)) }
        case "battery.percent": p.battery.map { .number(String(Int(($0 * 100).rounded()))) }
        case "battery.fraction": p.battery.map { .number(number(($0 * 100).rounded() / 100)) }
        case "seq": p.seq.map { .number(String($0)) }
        case "sent_ns": p.sentNanos.map { .number(String($0)) }
        default: nil
        }
    }

    /// Reads an opened plaintext by the template: each placeholder's value at its place; a missing required field,
    /// a wrong type or a value out of range names its path.
    public func read(_ bytes: [UInt8]) throws(CryptoError) -> LocationPayload {
        guard let json = JSONScanner.parse(bytes) else { throw .badJSON("the plaintext is not JSON") }
        var found: [String: JSONValue] = [:]
        try Self.collect(template, json, path: "", into: &found)
        func double(_ name: String) throws(CryptoError) -> Double? {
            guard let v = found[name] else { return nil }
            switch (name, v) {
            case ("time.iso", .string(let s)):
                guard let t = CommitTimestamp.parse(s) else { throw .badJSON("{{time.iso}} is not an ISO 8601 time: \(s)", key: name) }
                return t
            case (_, .number(let n)):
                guard let d = Double(n), d.isFinite else { throw .badJSON("{{\(name)}} is not a number: \(n)", key: name) }
                switch name {
                case "time.ms": return d / 1000
                case "battery.percent": return d / 100
                default: return d
                }
            default:
                throw .badJSON("{{\(name)}} has the wrong type: \(v.text)", key: name)
            }
        }
        var ts: Double?
        for name in Self.times where ts == nil { ts = try double(name) }
        guard let lat = try double("lat"), let lon = try double("lon"), let acc = try double("acc"), let ts else { throw .badJSON("the plaintext lacks a position's lat, lon, acc or time") }
        var p = LocationPayload(lat: lat, lon: lon, ts: ts, acc: acc)
        p.heading = try double("heading")
        p.speed = try double("speed")
        let percent = try double("battery.percent")
        p.battery = percent != nil ? percent : try double("battery.fraction")
        if case .number(let n)? = found["seq"] { p.seq = UInt64(n) }
        if case .number(let n)? = found["sent_ns"] { p.sentNanos = Int64(n) }
        try p.validate()
        return p
    }

    private static func collect(_ t: JSONTemplate, _ v: JSONValue, path: String, into found: inout [String: JSONValue]) throws(CryptoError) {
        switch t {
        case .string(let s):
            if let name = Template.whole(s) { found[name] = v }
        case .array(let items):
            guard case .array(let values) = v else { throw .badJSON("\(path.isEmpty ? "the plaintext" : path) is not an array", key: path) }
            for (i, item) in items.enumerated() {
                guard i < values.count else {
                    if item.isOptional { continue }
                    throw .badJSON("\(path)[\(i)] is missing", key: "\(path)[\(i)]")
                }
                try collect(item, values[i], path: "\(path)[\(i)]", into: &found)
            }
        case .object(let members):
            guard case .object = v else { throw .badJSON("\(path.isEmpty ? "the plaintext" : path) is not an object", key: path) }
            for m in members {
                let at = path.isEmpty ? m.key : "\(path).\(m.key)"
                guard let value = v[m.key], value != .null else {
                    if m.value.isOptional || !m.value.carriesValue { continue }
                    throw .badJSON("the key \"\(at)\" is missing", key: at)
                }
                try collect(m.value, value, path: at, into: &found)
            }
        case .number, .bool, .null:
            break
        }
    }

    /// Shortest round-tripping decimal; integers without a fraction (as Green Box's plaintext writes them).
    static func number(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }

    /// `2026-12-02T10:46:14.123Z`.
    static func iso(_ unix: Double) -> String {
        let ms = Int64((unix * 1000).rounded(.down))
        let text = CommitTimestamp.format(Double(ms / 1000))
        // CommitTimestamp writes whole seconds as `…:14Z` or with a fraction; the plaintext always has milliseconds.
        let base = text.hasSuffix("Z") ? String(text.dropLast()) : text
        let whole = base.split(separator: ".").first.map(String.init) ?? base
        let frac = String(ms % 1000)
        return whole + "." + String(repeating: "0", count: 3 - frac.count) + frac + "Z"
    }
}

extension JSONTemplate {
    /// A placeholder alone that a plaintext may leave out (`heading`).
    var isOptional: Bool {
        if case .string(let s) = self, let name = Template.whole(s) { return DeclaredPlaintext.optional.contains(name) }
        return false
    }

    /// Whether a position's field is in it (else it is a constant the reader does not need).
    var carriesValue: Bool { !placeholders.isEmpty }
}
