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
}
