import Foundation

/// `{{placeholders}}` in catalogue strings, and their values for one run.
public enum ProbeTemplate {
    /// Every name a catalogue may use (besides `big:<size>`).
    public static let names: [String] = {
        var n: [String] = []
        for party in ["attacker", "victim", "friend", "stranger"] {
            for field in ["id", "token", "refresh_token", "password", "public_key", "email"] + Apps.probeFields { n.append("\(party).\(field)") }
        }
        return n + ["anon_key", "service_key", "token.expired", "token.forged", "token.forged_service", "token.alg_none",
                    "captured.ciphertext", "run", "uuid", "attempt", "guess"] + Apps.probeNames
    }()

    static func isKnown(_ name: String) -> Bool { names.contains(name) || bigSize(name) != nil || savedName(name) != nil }

    /// `saved.request` → `request`: a value an earlier step of the probe saved (`save:`).
    static func savedName(_ name: String) -> String? {
        guard name.hasPrefix("saved.") else { return nil }
        let rest = name.dropFirst(6)
        return !rest.isEmpty && rest.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) ? String(rest) : nil
    }

    /// `big:2MB` → 2,097,152 (B, KB, MB; at most 64 MB).
    static func bigSize(_ name: String) -> Int? {
        guard name.hasPrefix("big:") else { return nil }
        let s = name.dropFirst(4).uppercased()
        for (unit, scale) in [("MB", 1 << 20), ("KB", 1 << 10), ("B", 1)] where s.hasSuffix(unit) {
            guard let n = Int(s.dropLast(unit.count)), n > 0, n <= (64 << 20) / scale else { return nil }
            return n * scale
        }
        return nil
    }

    static func placeholders(in s: String) -> [String] {
        var out: [String] = []
        var rest = s[...]
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            out.append(String(rest[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespaces))
            rest = rest[close.upperBound...]
        }
        return out
    }

    /// `s` with each placeholder replaced; nil names a value this run does not have.
    static func fill(_ s: String, _ values: [String: String]) throws(Unavailable) -> String {
        guard s.contains("{{") else { return s }
        var out = "", rest = s[...]
        while let open = rest.range(of: "{{"), let close = rest[open.upperBound...].range(of: "}}") {
            out += rest[..<open.lowerBound]
            let name = String(rest[open.upperBound..<close.lowerBound]).trimmingCharacters(in: .whitespaces)
            if let size = bigSize(name) {
                out += String(repeating: "A", count: size)
            } else if name == "uuid" {
                out += UUID().uuidString.lowercased()
            } else if let v = values[name] {
                out += v
            } else {
                throw Unavailable(name: name)
            }
            rest = rest[close.upperBound...]
        }
        return out + rest
    }

    /// A placeholder this run has no value for (e.g. `service_key` against a project whose key is not given).
    struct Unavailable: Error {
        let name: String
    }
}
