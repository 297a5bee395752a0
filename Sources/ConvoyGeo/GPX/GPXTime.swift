import Foundation

/// GPX `time` values: ISO 8601 / RFC 3339 in UTC or with an offset, with or
/// without fractional seconds. A time without a zone is read as UTC and the
/// caller is told so (GPX requires UTC; some loggers write local time anyway).
///
/// Uses `Date.ISO8601FormatStyle`: on Linux it parses in about 1 µs, where
/// `ISO8601DateFormatter` takes about 100 µs (docs/performance.md).
struct GPXTime {
    private let whole = Date.ISO8601FormatStyle()
    private let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    /// - Returns: the date, and whether the zone was missing; nil if unreadable.
    func parse(_ raw: String) -> (date: Date, assumedUTC: Bool)? {
        let text = String(raw.trimmedASCII)
        if let d = try? whole.parse(text) { return (d, false) }
        if let d = try? whole.parse(text + "Z") { return (d, true) }
        return nil
    }

    /// UTC, whole seconds unless the date has a fraction (then milliseconds).
    func format(_ date: Date) -> String {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        let rounded = Date(timeIntervalSince1970: ms / 1000)
        return ms.truncatingRemainder(dividingBy: 1000) == 0 ? rounded.formatted(whole) : rounded.formatted(fractional)
    }
}
