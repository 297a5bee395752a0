/// Escaping for the markup Convoy writes (report.html, its SVG, junit.xml):
/// the five special characters become entities, and control characters other
/// than tab and newline, which XML 1.0 forbids, are dropped.
enum Markup {
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for u in s.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n": out.unicodeScalars.append(u)
            default: if u.value >= 0x20 && !(0xFFFE...0xFFFF).contains(u.value) { out.unicodeScalars.append(u) }
            }
        }
        return out
    }

    /// A whole number with thousands separators, as the dashboard writes it: 1,234,567 (not the locale's).
    static func count(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return n < 0 ? "-" + out : out
    }
}
