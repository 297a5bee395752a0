import Foundation

/// Strict readers for NMEA fields: digits and one decimal point only (Swift's
/// `Double("…")` would also take signs, exponents, `nan` and `inf`).
enum NMEAFields {
    /// An unsigned decimal: `12`, `12.5`.
    static func unsigned(_ s: Substring) -> Double? {
        guard !s.isEmpty, s.first != ".", s.last != ".",
              s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), s.count(where: { $0 == "." }) <= 1
        else { return nil }
        return Double(s)
    }

    /// A decimal that may start with a minus sign (altitude, geoid separation).
    static func signed(_ s: Substring) -> Double? {
        s.first == "-" ? unsigned(s.dropFirst()).map { -$0 } : unsigned(s)
    }

    /// An unsigned whole number.
    static func whole(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.count <= 9, s.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(s)
    }

    /// hhmmss(.sss) as seconds since midnight.
    static func secondsOfDay(_ s: Substring) -> Double? {
        guard s.count >= 6, let h = whole(s.prefix(2)), let m = whole(s.dropFirst(2).prefix(2)),
              let sec = unsigned(s.dropFirst(4)), h < 24, m < 60, sec < 61 else { return nil }
        return Double(h * 3600 + m * 60) + sec
    }

    /// ddmmyy as a UTC midnight; years 80–99 are 19xx. Rejects 31 February.
    static func date(_ s: Substring) -> Date? {
        guard s.count == 6, let d = whole(s.prefix(2)), let m = whole(s.dropFirst(2).prefix(2)),
              let y = whole(s.suffix(2)) else { return nil }
        var utc = Calendar(identifier: .gregorian)
        utc.timeZone = TimeZone(identifier: "UTC")!
        let parts = DateComponents(year: y >= 80 ? 1900 + y : 2000 + y, month: m, day: d)
        guard parts.isValidDate(in: utc) else { return nil }
        return utc.date(from: parts)
    }

    /// (d)ddmm.mmmm plus hemisphere, in degrees.
    static func coordinate(_ value: Substring, _ hemisphere: Substring, degreeDigits: Int, limit: Double) -> Double? {
        guard value.count > degreeDigits + 2, let deg = whole(value.prefix(degreeDigits)),
              let min = unsigned(value.dropFirst(degreeDigits)), min < 60 else { return nil }
        let v = Double(deg) + min / 60
        guard v <= limit else { return nil }
        switch hemisphere {
        case "N", "E": return v
        case "S", "W": return -v
        default: return nil
        }
    }
}
