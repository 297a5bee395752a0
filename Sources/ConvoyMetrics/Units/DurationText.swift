import Foundation

/// The one grammar for durations, for every scenario key, CLI flag and
/// threshold: a bare number is seconds (`90`, `1.5`); otherwise groups of a
/// number and a unit, largest unit first, each unit once — `d`, `h`, `m`,
/// `s`, `ms`, `us` (or `µs`): `250ms`, `1.5m`, `1h30m`, `2d`, `800us`.
/// Negative, infinite, exponent and hexadecimal forms are not durations.
public enum DurationText {
    /// Each unit's size in seconds (for its order) and in microseconds (written out, so `250ms` is exactly 250,000 µs), largest first.
    static let units: [(name: String, seconds: Double, microseconds: Double)] = [
        ("d", 86_400, 86_400e6), ("h", 3600, 3600e6), ("m", 60, 60e6), ("s", 1, 1e6), ("ms", 0.001, 1000), ("us", 0.000_001, 1), ("µs", 0.000_001, 1),
    ]

    /// `text` in seconds; nil when it is not a duration. Units are summed in microseconds and divided
    /// once, so `800us` is the double nearest 0.0008 and `250ms` exactly 0.25.
    public static func seconds(_ text: String) -> Double? {
        let s = text.trimmingCharacters(in: .whitespaces)
        if let plain = PlainNumber.parse(s) { return plain }
        return parse(s, micro: true).map { $0 / 1e6 }
    }

    /// `text` in microseconds (thresholds on latency); nil when it is not a duration.
    public static func microseconds(_ text: String) -> Double? { parse(text, micro: true) }

    private static func parse(_ text: String, micro: Bool) -> Double? {
        let s = text.trimmingCharacters(in: .whitespaces)
        if let plain = PlainNumber.parse(s) { return micro ? plain * 1e6 : plain }
        var total = 0.0, digits = "", i = s.startIndex, last = Double.infinity
        while i < s.endIndex {
            let c = s[i]
            if c.isASCII, c.isNumber || c == "." {
                digits.append(c)
                i = s.index(after: i)
                continue
            }
            var unit = ""
            while i < s.endIndex, s[i].isLetter {
                unit.append(s[i])
                i = s.index(after: i)
            }
            guard let v = PlainNumber.parse(digits), let u = units.first(where: { $0.name == unit }), u.seconds < last else { return nil }
            total += v * (micro ? u.microseconds : u.seconds)
            last = u.seconds
            digits = ""
        }
        return digits.isEmpty && !s.isEmpty && total.isFinite ? total : nil
    }
}
