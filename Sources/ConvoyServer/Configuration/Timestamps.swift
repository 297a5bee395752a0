import Foundation

/// Timestamps as PostgreSQL prints `timestamptz` in UTC: microseconds and an
/// explicit offset, `2026-01-05T08:00:00.123456+00:00`. Years are limited to
/// 0001–9999 so the text is fixed width and text order is time order in SQLite.
enum Timestamps {
    /// 0001-01-01T00:00:00Z … 9999-12-31T23:59:59.999999Z, Unix seconds.
    static let range: ClosedRange<Double> = -62_135_596_800 ... 253_402_300_799.999

    /// Foundation's calendar is Julian before this instant (1582-10-15T00:00:00Z, the
    /// Gregorian reform), as `parse` reads it; `format` writes it the same way there.
    static let gregorianReform: Int64 = -12_219_292_800

    /// Written by hand from the Gregorian reform on (every insert stamps its rows): Foundation's
    /// `ISO8601FormatStyle` took microseconds per call. Earlier instants are written by
    /// Foundation, which counts them in the Julian calendar as `parse` does.
    static func format(_ date: Date) -> String {
        let t = min(max(date.timeIntervalSince1970, range.lowerBound), range.upperBound)
        let micros = Int64(exactly: (t * 1_000_000).rounded(.down)) ?? 0
        // Floor division, so times before 1970 keep a positive fraction (and time of day).
        let (seconds, fraction) = floorDivision(micros, 1_000_000)
        guard seconds >= gregorianReform else {
            let base = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle()).dropLast()  // drop the Z
            let text = String(fraction)
            return "\(base).\(String(repeating: "0", count: 6 - text.count))\(text)+00:00"
        }
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let (year, month, day) = civil(days: days)
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func put(_ n: Int64, width: Int) {
            var divisor: Int64 = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(n / divisor % 10))
                divisor /= 10
            }
        }
        put(year, width: 4); out.append(UInt8(ascii: "-"))
        put(month, width: 2); out.append(UInt8(ascii: "-"))
        put(day, width: 2); out.append(UInt8(ascii: "T"))
        put(secondOfDay / 3600, width: 2); out.append(UInt8(ascii: ":"))
        put(secondOfDay / 60 % 60, width: 2); out.append(UInt8(ascii: ":"))
        put(secondOfDay % 60, width: 2); out.append(UInt8(ascii: "."))
        put(fraction, width: 6)
        out.append(contentsOf: "+00:00".utf8)
        return String(decoding: out, as: UTF8.self)
    }

    private static func floorDivision(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let q = a / b, r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    /// The Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's `civil_from_days`).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Reads what clients send: ISO 8601 with or without fraction and zone (UTC without one, the zone Supabase's
    /// sessions run in), a bare date (its midnight), and PostgreSQL's special words `now`, `today`, `tomorrow`,
    /// `yesterday` and `epoch`, with white space around. Nil for anything unreadable or outside years 0001–9999
    /// (`infinity` too: text order could not hold it; docs/server.md, "Known differences").
    static func parse(_ text: String, now: Date = Date()) -> Date? {
        let text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let date: Date?
        switch text.lowercased() {
        case "now": date = now
        case "today", "tomorrow", "yesterday":
            let midnight = (now.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400
            date = Date(timeIntervalSince1970: midnight + (text.lowercased() == "tomorrow" ? 86_400 : text.lowercased() == "yesterday" ? -86_400 : 0))
        case "epoch": date = Date(timeIntervalSince1970: 0)
        default:
            let style = Date.ISO8601FormatStyle()
            let bareDate = text.utf8.count == 10 && text.utf8.enumerated().allSatisfy { i, b in i == 4 || i == 7 ? b == UInt8(ascii: "-") : (0x30...0x39).contains(b) }
            date = bareDate ? try? style.parse(text + "T00:00:00Z")
                : (try? style.parse(text)) ?? (try? style.parse(text.replacingOccurrences(of: " ", with: "T"))) ?? (try? style.parse(text + "Z"))
        }
        guard let date, range.contains(date.timeIntervalSince1970) else { return nil }
        return date
    }
}
