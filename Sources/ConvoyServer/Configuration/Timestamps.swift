import Foundation

/// Timestamps as PostgreSQL prints `timestamptz` in UTC: microseconds and an
/// explicit offset, `2026-01-05T08:00:00.123456+00:00`. Years are limited to
/// 0001–9999 so the text is fixed width and text order is time order in SQLite.
enum Timestamps {
    /// 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999999Z, Unix seconds.
    static let range: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_799.999

    static func format(_ date: Date) -> String {
        let t = min(max(date.timeIntervalSince1970, range.lowerBound), range.upperBound)
        let micros = Int64(exactly: (t * 1_000_000).rounded(.down)) ?? 0
        // Floor division, so times before 1970 keep a positive fraction.
        var seconds = micros / 1_000_000, fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        let base = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle()).dropLast()  // drop the Z
        let text = String(fraction)
        return "\(base).\(String(repeating: "0", count: 6 - text.count))\(text)+00:00"
    }

    /// Reads what clients send: ISO 8601 with or without fraction and zone.
    /// Nil for anything unreadable or outside years 0001–9999.
    static func parse(_ text: String) -> Date? {
        let style = Date.ISO8601FormatStyle()
        let date = (try? style.parse(text)) ?? (try? style.parse(text.replacingOccurrences(of: " ", with: "T")))
            ?? (try? style.parse(text + "Z"))
        guard let date, range.contains(date.timeIntervalSince1970) else { return nil }
        return date
    }
}
