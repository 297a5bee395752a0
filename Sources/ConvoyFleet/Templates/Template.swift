import Foundation

/// Convoy's one template language (docs/templates.md): text with `{{name}}` placeholders, filled from what the
/// caller knows at the time (a probe's cast, a declared app's phone). Probe catalogues and declared apps read and
/// fill their strings here, so a placeholder means the same in both; each says which names it offers.
///
/// Names every context has: `{{uuid}}` (a fresh random uuid at each use), `{{big:2MB}}` (that many `A`s) and
/// `{{saved.<name>}}` (a value an earlier step kept with `save:`).
public enum Template {
    /// The placeholders in `s`, in order (an unclosed `{{` is text).
    public static func placeholders(in s: String) -> [String] {
        var out: [String] = []
        var rest = s[...]
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            out.append(String(rest[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespaces))
            rest = rest[close.upperBound...]
        }
        return out
    }

    /// The one placeholder `s` is, with nothing around it (`"{{lat}}"`): in a JSON template it takes its value's own
    /// JSON type (a number stays a number); nil for text with placeholders in it, or none.
    public static func whole(_ s: String) -> String? {
        guard s.hasPrefix("{{"), s.hasSuffix("}}"), s.count > 4 else { return nil }
        let inner = s.dropFirst(2).dropLast(2)
        guard !inner.contains("{{"), !inner.contains("}}") else { return nil }
        return inner.trimmingCharacters(in: .whitespaces)
    }

    /// Whether `name` is one every context offers (`uuid`, `big:<size>`, `saved.<name>`).
    public static func isBuiltIn(_ name: String) -> Bool { name == "uuid" || bigSize(name) != nil || savedName(name) != nil }

    /// `saved.request` → `request`: a value an earlier step saved (`save:`).
    public static func savedName(_ name: String) -> String? {
        guard name.hasPrefix("saved.") else { return nil }
        let rest = name.dropFirst(6)
        return !rest.isEmpty && rest.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) ? String(rest) : nil
    }

    /// `big:2MB` → 2,097,152 (B, KB, MB; at most 64 MB).
    public static func bigSize(_ name: String) -> Int? {
        guard name.hasPrefix("big:") else { return nil }
        let s = name.dropFirst(4).uppercased()
        for (unit, scale) in [("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)] where s.hasSuffix(unit) {
            guard let n = Int(s.dropLast(unit.count)), n > 0, n <= (64 << 20) / scale else { return nil }
            return n * scale
        }
        return nil
    }

    /// `s` with each placeholder replaced by `value(name)` (or a built-in's); a name with no value throws.
    public static func fill(_ s: String, _ value: (String) -> String?) throws(Unavailable) -> String {
        guard s.contains("{{") else { return s }
        var out = "", rest = s[...]
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            out += rest[..<open.lowerBound]
            let name = String(rest[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespaces)
            if let v = value(name) {
                out += v
            } else if let size = bigSize(name) {
                out += String(repeating: "A", count: size)
            } else if name == "uuid" {
                out += UUID().uuidString.lowercased()
            } else {
                throw Unavailable(name: name)
            }
            rest = rest[close.upperBound...]
        }
        return out + rest
    }

    /// A placeholder with no value here (a probe's `service_key` against a project whose key is not given; a
    /// declared app's `saved.code` before a step saved it).
    public struct Unavailable: Error, Sendable {
        public let name: String
    }
}
