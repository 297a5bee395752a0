import Foundation

/// Timestamps as PostgreSQL prints `timestamptz` in UTC: microseconds and an
/// explicit offset, `2026-01-05T08:00:00.123456+00:00`. Fixed width, so text
/// order is time order in SQLite.
enum Timestamps {
    static func format(_ date: Date) -> String {
        let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let seconds = Date(timeIntervalSince1970: Double(micros.quotientAndRemainder(dividingBy: 1_000_000).quotient))
        var fraction = micros % 1_000_000
        if fraction < 0 { fraction += 1_000_000 }
        let base = seconds.formatted(Date.ISO8601FormatStyle()).dropLast()  // "…T08:00:00Z" without the Z
        let text = String(fraction)
        return "\(base).\(String(repeating: "0", count: 6 - text.count))\(text)+00:00"
    }

    /// Reads what clients send: ISO 8601 with or without fraction and zone.
    static func parse(_ text: String) -> Date? {
        let style = Date.ISO8601FormatStyle()
        if let d = try? style.parse(text) { return d }
        if let d = try? style.parse(text.replacingOccurrences(of: " ", with: "T")) { return d }
        return try? style.parse(text + "Z")
    }
}
