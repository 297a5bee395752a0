import Foundation

/// GPX `time` values: ISO 8601 / RFC 3339 in UTC or with an offset, with or
/// without fractional seconds. A time without a zone is read as UTC and the
/// caller is told so (GPX requires UTC; some loggers write local time anyway).
struct GPXTime {
    private let whole = ISO8601DateFormatter()
    private let fractional = ISO8601DateFormatter()

    init() {
        whole.formatOptions = [.withInternetDateTime]
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    }

    /// - Returns: the date, and whether the zone was missing; nil if unreadable.
    func parse(_ raw: String) -> (date: Date, assumedUTC: Bool)? {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        if let d = parseZoned(text) { return (d, false) }
        if let d = parseZoned(text + "Z") { return (d, true) }
        return nil
    }

    private func parseZoned(_ text: String) -> Date? {
        if text.contains(".") {
            // Normalise the fraction to milliseconds, which every Foundation reads.
            guard let dot = text.firstIndex(of: ".") else { return nil }
            let afterDot = text[text.index(after: dot)...]
            let digits = afterDot.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty else { return nil }
            let rest = afterDot.dropFirst(digits.count)
            let frac = Double("0." + digits) ?? 0
            guard let base = whole.date(from: String(text[..<dot]) + rest) else { return nil }
            return base.addingTimeInterval(frac)
        }
        return whole.date(from: text)
    }

    /// UTC, whole seconds unless the date has a fraction (then milliseconds).
    func format(_ date: Date) -> String {
        let ms = (date.timeIntervalSince1970 * 1000).rounded()
        if ms.truncatingRemainder(dividingBy: 1000) == 0 {
            return whole.string(from: Date(timeIntervalSince1970: ms / 1000))
        }
        return fractional.string(from: Date(timeIntervalSince1970: ms / 1000))
    }
}
