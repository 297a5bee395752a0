import Foundation
import Testing
@testable import ConvoyServer

/// `Timestamps.format` is written by hand from the Gregorian reform on; Foundation's
/// ISO 8601 formatter (Julian before it, as `Timestamps.parse` reads) is its oracle.
@Suite struct TimestampsTests {
    /// What Foundation writes for `date` in PostgreSQL's shape (the formatter the hand-written one replaced).
    static func foundation(_ date: Date) -> String {
        let t = min(max(date.timeIntervalSince1970, Timestamps.range.lowerBound), Timestamps.range.upperBound)
        let micros = Int64((t * 1_000_000).rounded(.down))
        var seconds = micros / 1_000_000, fraction = micros % 1_000_000
        if fraction < 0 {
            fraction += 1_000_000
            seconds -= 1
        }
        let base = Date(timeIntervalSince1970: Double(seconds)).formatted(Date.ISO8601FormatStyle()).dropLast()
        let text = String(fraction)
        return "\(base).\(String(repeating: "0", count: 6 - text.count))\(text)+00:00"
    }

    @Test(arguments: [
        "0001-01-01T00:00:00Z", "1582-10-04T23:59:59Z", "1582-10-15T00:00:00Z", "1600-02-29T12:00:00Z", "1899-12-31T23:59:59Z", "1900-03-01T00:00:00Z",
        "1969-12-31T23:59:59Z", "1970-01-01T00:00:00Z", "2000-02-29T23:59:59Z", "2024-12-31T23:59:59Z",
        "2100-02-28T00:00:00Z", "2100-03-01T00:00:00Z", "9999-12-31T23:59:59Z",
    ])
    func calendarEdgesMatchFoundation(_ text: String) throws {
        let date = try Date.ISO8601FormatStyle().parse(text)
        for offset in [0, 0.25, 0.999_999, -0.000_001] {
            let d = date.addingTimeInterval(offset)
            #expect(Timestamps.format(d) == Self.foundation(d), "\(text) + \(offset)")
        }
    }

    /// 2,000 instants spread over the whole range, each at another time of day and fraction.
    @Test func instantsAcrossTheRangeMatchFoundation() {
        let first = Int64(Timestamps.range.lowerBound) * 1_000_000, last = Int64(Timestamps.range.upperBound) * 1_000_000
        let step = (last - first) / 2_000
        for i in Int64(0)..<2_000 {
            let micros = first + i * step + (i * 7_919_113_457) % 86_400_000_000
            let date = Date(timeIntervalSince1970: Double(micros) / 1e6)
            #expect(Timestamps.format(date) == Self.foundation(date))
        }
    }

    @Test func outOfRangeIsClampedToTheYears0001To9999() {
        let first = Date(timeIntervalSince1970: Timestamps.range.lowerBound)
        #expect(Timestamps.format(Date(timeIntervalSince1970: -1e13)) == Timestamps.format(first))
        #expect(Timestamps.format(Date(timeIntervalSince1970: 1e15)).hasPrefix("9999-12-31T23:59:59."))
    }
    /// PostgreSQL's special words against a given clock, and a bare date as its UTC midnight.
    @Test func wordsAndBareDatesAreReadAsTimestamptzInReadsThem() {
        let now = Date(timeIntervalSince1970: 1_796_400_000.25)  // 2026-12-04T16:00:00.25Z
        let midnight = Date(timeIntervalSince1970: 1_796_342_400)
        #expect(Timestamps.parse("now", now: now) == now && Timestamps.parse(" NOW\n", now: now) == now)
        #expect(Timestamps.parse("today", now: now) == midnight)
        #expect(Timestamps.parse("tomorrow", now: now) == midnight.addingTimeInterval(86_400))
        #expect(Timestamps.parse("yesterday", now: now) == midnight.addingTimeInterval(-86_400))
        #expect(Timestamps.parse("epoch", now: now) == Date(timeIntervalSince1970: 0))
        #expect(Timestamps.parse("2026-12-04") == midnight)
        for text in ["infinity", "-infinity", "2026-12", "2026-1-04", "nowish", "2026-13-01"] { #expect(Timestamps.parse(text, now: now) == nil, "\(text)") }
    }
}
