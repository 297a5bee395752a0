/// The names a probe catalogue's `{{placeholders}}` may use (the language is `Template`'s, docs/templates.md).
public enum ProbeTemplate {
    /// Every name a catalogue may use (besides `Template`'s built-ins: `uuid`, `big:<size>`, `saved.<name>`).
    public static let names: [String] = {
        var n: [String] = []
        for party in ["attacker", "victim", "friend", "stranger"] {
            // `group`: a declared group app's (`DeclaredGroupApp.probeValues`).
            for field in ["id", "token", "refresh_token", "password", "public_key", "email", "group"] + Apps.probeFields { n.append("\(party).\(field)") }
        }
        return n + ["anon_key", "service_key", "token.expired", "token.forged", "token.forged_service", "token.alg_none",
                    "captured.ciphertext", "run", "uuid", "attempt", "guess"] + Apps.probeNames
    }()

    static func isKnown(_ name: String) -> Bool { names.contains(name) || Template.isBuiltIn(name) }

    /// `s` with each placeholder replaced; nil names a value this run does not have.
    static func fill(_ s: String, _ values: [String: String]) throws(Template.Unavailable) -> String {
        try Template.fill(s) { values[$0] }
    }

}
