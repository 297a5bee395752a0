import Foundation

/// Supabase's timestamps: Realtime's `commit_timestamp` and PostgREST's
/// `timestamptz` columns (`2026-01-05T08:00:00.123456+00:00`, `…Z`, a space
/// instead of `T`, any number of fraction digits), read as Unix seconds
/// without Foundation's formatters (it runs once per received update), and
/// written for a filter.
public enum CommitTimestamp {
    public static func parse(_ text: String) -> Double? {
        let utf8 = Array(text.utf8)
        guard utf8.count >= 19 else { return nil }
        func digits(_ at: Int, _ n: Int) -> Int? {
            guard at + n <= utf8.count else { return nil }
            var v = 0
            for i in at..<at + n {
                let c = utf8[i]
                guard c >= 48, c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            return v
        }
        guard let year = digits(0, 4), utf8[4] == 45, let month = digits(5, 2), utf8[7] == 45, let day = digits(8, 2),
              utf8[10] == 84 || utf8[10] == 32, let hour = digits(11, 2), utf8[13] == 58, let minute = digits(14, 2),
              utf8[16] == 58, let second = digits(17, 2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var i = 19
        var fraction = 0.0
        if i < utf8.count, utf8[i] == 46 {
            i += 1
            var scale = 0.1
            while i < utf8.count, utf8[i] >= 48, utf8[i] <= 57 {
                fraction += Double(utf8[i] - 48) * scale
                scale /= 10
                i += 1
            }
        }
        var offset = 0
        if i < utf8.count {
            switch utf8[i] {
            case 90: i += 1  // Z
            case 43, 45:  // + or -
                let sign = utf8[i] == 43 ? 1 : -1
                guard let h = digits(i + 1, 2) else { return nil }
                var m = 0
                if i + 3 < utf8.count {
                    let at = utf8[i + 3] == 58 ? i + 4 : i + 3
                    guard let mm = digits(at, 2) else { return nil }
                    m = mm
                    i = at + 2
                } else {
                    i += 3
                }
                offset = sign * (h * 3600 + m * 60)
            default: return nil
            }
        }
        guard i == utf8.count else { return nil }
        return Double(daysFromCivil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
    }

    /// `2026-01-05T08:00:00.123456Z`, for a `created_at` filter.
    public static func format(_ unix: Double) -> String {
        let seconds = unix.rounded(.down)
        let micros = Int((unix - seconds) * 1e6)
        let base = Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle()).dropLast()
        return "\(base).\(String(format: "%06d", micros))Z"
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    static func daysFromCivil(_ y0: Int, _ m: Int, _ d: Int) -> Int {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }
}
