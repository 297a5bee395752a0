import Foundation

/// A pass/fail rule on a run's results, as a scenario writes it:
///
///     e2e_latency.p99 < 500ms      a histogram statistic (p50 … p99.9, min, max, mean) with a time unit (us, ms, s)
///     delivery.loss < 0.1%         a ratio of counters, in percent (or as a fraction: < 0.001)
///     decrypt_failures == 0        a counter
///
/// Operators: `<`, `<=`, `>`, `>=`, `==`, `!=`.
public struct Threshold: Sendable, Equatable, CustomStringConvertible {
    public enum Subject: Sendable, Equatable {
        case statistic(histogram: String, stat: String)
        case ratio(String)
        case counter(String)
    }

    public enum Comparison: String, Sendable, CaseIterable {
        case lessOrEqual = "<=", greaterOrEqual = ">=", equal = "==", notEqual = "!=", less = "<", greater = ">"

        func holds(_ a: Double, _ b: Double) -> Bool {
            switch self {
            case .less: a < b
            case .lessOrEqual: a <= b
            case .greater: a > b
            case .greaterOrEqual: a >= b
            case .equal: a == b
            case .notEqual: a != b
            }
        }
    }

    public let text: String
    public let subject: Subject
    public let comparison: Comparison
    /// In the subject's unit: microseconds, a fraction, or a count.
    public let limit: Double

    public var description: String { text }

    /// Ratios of counters that thresholds may name.
    public static let ratios: [String: (numerator: String, denominator: String)] = [
        "delivery.loss": (CounterName.lost.name, CounterName.sent.name),
        "delivery.duplicates": (CounterName.duplicate.name, CounterName.sent.name),
        "delivery.stale": (CounterName.staleRejected.name, CounterName.sent.name),
        "http.errors": (CounterName.httpErrors.name, CounterName.httpRequests.name),
        "media.loss": (CounterName.mediaLost.name, CounterName.mediaExpected.name),
        "messages.loss": (CounterName.messagesLost.name, CounterName.messagesExpected.name),
        // Mailbox apps: messages a recipient polling in time never got (the backend's loss), of those sent; polls that found nothing.
        "mailbox.loss": (CounterName.mailboxLost(reason: "not_fetched").name, CounterName.mailboxSent.name),
        "mailbox.empty_polls": (CounterName.mailboxPollsEmpty.name, CounterName.mailboxPolls.name),
    ]

    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public init(_ text: String) throws(ParseError) {
        self.text = text
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let op = Comparison.allCases.lazy.compactMap({ c in trimmed.range(of: " \(c.rawValue) ").map { (c, $0) } }).first
            ?? Comparison.allCases.lazy.compactMap({ c in trimmed.range(of: c.rawValue).map { (c, $0) } }).first
        else {
            throw ParseError(description: "threshold \"\(text)\": no comparison; write e.g. e2e_latency.p99 < 500ms")
        }
        comparison = op.0
        let left = trimmed[..<op.1.lowerBound].trimmingCharacters(in: .whitespaces)
        let right = trimmed[op.1.upperBound...].trimmingCharacters(in: .whitespaces).lowercased()
        guard !left.isEmpty, !right.isEmpty else {
            throw ParseError(description: "threshold \"\(text)\": a metric and a value go on either side of \(op.0.rawValue)")
        }
        if Self.ratios[left] != nil {
            subject = .ratio(left)
            if right.hasSuffix("%"), let v = Self.number(String(right.dropLast())) {
                limit = v / 100
            } else if let v = Self.number(right) {
                limit = v
            } else {
                throw ParseError(description: "threshold \"\(text)\": \(left) is a ratio; give a percentage (0.1%) or a fraction (0.001)")
            }
            return
        }
        // The statistic follows the histogram's name: the first tail after a dot that is one (p99.9 has a dot of its own).
        if let dot = left.indices.filter({ left[$0] == "." }).first(where: { Self.isStatistic(String(left[left.index(after: $0)...])) }) {
            subject = .statistic(histogram: String(left[..<dot]), stat: String(left[left.index(after: dot)...]))
            guard let us = Self.microseconds(right) else {
                throw ParseError(description: "threshold \"\(text)\": \(right) is not a duration; write e.g. 500ms, 2s or 800us")
            }
            limit = us
            return
        }
        // A counter: a plain name, or a dotted one (`render.dot`, a family's `lost.retry_expired`, `http_errors.503`).
        let parts = left.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } }), let v = Self.number(right) else {
            let known = Self.ratios.keys.sorted().joined(separator: ", ")
            throw ParseError(description: "threshold \"\(text)\": \(left) is neither a histogram statistic (name.p99), a ratio (\(known)) nor a counter with a number")
        }
        subject = .counter(left)
        limit = v
    }

    /// Why the metric named is not one Convoy records (nil when it is), with
    /// the nearest name that is: a misspelt counter would read 0 and pass, a
    /// misspelt histogram would fail only once the run is over.
    public var unknownMetric: String? { unknownMetric(declared: []) }

    /// The same, when the run also records `declared` histograms (a declared app's actions, by name).
    public func unknownMetric(declared: [String]) -> String? {
        switch subject {
        case .ratio: return nil
        case .statistic(let histogram, _):
            if HistogramName.all.contains(where: { $0.name == histogram }) || declared.contains(histogram) { return nil }
            var message = "threshold \"\(text)\": no histogram is named \(histogram)"
            if let guess = Spelling.closest(histogram, among: HistogramName.all.map(\.name) + declared) { message += "; did you mean \(guess)?" }
            return message + (declared.isEmpty ? "" : " (the app's actions: \(declared.joined(separator: ", ")))") + " (histograms: docs/results.md)"
        case .counter(let counter):
            // An action's counters name one of the app's actions (`actions.ride_claim`), or a misspelling would read 0 and pass.
            if let family = CounterName.actionFamilies.first(where: { counter.hasPrefix($0 + ".") }) {
                let action = String(counter.dropFirst(family.count + 1))
                if declared.contains(action) { return nil }
                var message = "threshold \"\(text)\": \(action) is not one of the app's actions"
                if let guess = Spelling.closest(action, among: declared) { message += "; did you mean \(family).\(guess)?" }
                return message + (declared.isEmpty ? " (it declares none)" : " (\(declared.joined(separator: ", ")))")
            }
            if CounterName.isKnown(counter) { return nil }
            var message = "threshold \"\(text)\": no counter is named \(counter)"
            if let guess = Spelling.closest(counter, among: CounterName.all.map(\.name) + Array(Self.ratios.keys)) {
                message += "; did you mean \(guess)?"
            }
            return message + " (counters: docs/results.md)"
        }
    }

    static func isStatistic(_ s: String) -> Bool {
        ["min", "max", "mean"].contains(s) || (s.hasPrefix("p") && Double(s.dropFirst()).map { $0 >= 0 && $0 <= 100 } == true)
    }

    /// A duration with its unit (`500ms`, `2s`, `800us`, `1m`), in the grammar keys and flags share; a bare number is a count, not a duration.
    static func microseconds(_ s: String) -> Double? {
        guard PlainNumber.parse(s) == nil else { return nil }
        return DurationText.microseconds(s)
    }

    static func number(_ text: String) -> Double? { PlainNumber.parse(text) }

    /// The subject's value in `snapshot` (nil: nothing was recorded for it).
    public func value(in snapshot: MetricsSnapshot) -> Double? {
        switch subject {
        case .statistic(let h, let stat): return snapshot.statistic(h, stat)
        case .counter(let c): return untested(in: snapshot) != nil ? nil : Double(snapshot.counters[c] ?? 0)
        case .ratio(let r):
            guard let (n, d) = Self.ratios[r] else { return nil }
            let denominator = Double(snapshot.counters[d] ?? 0)
            return denominator == 0 ? nil : Double(snapshot.counters[n] ?? 0) / denominator
        }
    }

    /// Why the run gave this threshold nothing to judge (nil when it did): a histogram that recorded nothing, a
    /// ratio over nothing, a count of failures with no chance to fail (`Opportunity`), a retention check too short.
    public func untested(in snapshot: MetricsSnapshot) -> String? {
        switch subject {
        case .statistic(let h, let stat):
            return snapshot.statistic(h, stat) == nil ? "\(h) recorded nothing" : nil
        case .counter(let c):
            if snapshot.unmeasured?.contains(c) == true { return Opportunity.unmeasured(c) }
            return Opportunity.untested(c, in: snapshot.counters)
        case .ratio(let r):
            guard let (_, d) = Self.ratios[r] else { return "no such ratio" }
            return (snapshot.counters[d] ?? 0) == 0 ? "its denominator, \(d), counted nothing" : nil
        }
    }

    public struct Outcome: Sendable {
        public let threshold: Threshold
        public let value: Double?
        /// Why it had nothing to judge, when it had not.
        public var untested: String?
        /// A threshold on something never measured fails: a run that sent nothing has not shown its latency is low.
        public var passed: Bool { value.map { threshold.comparison.holds($0, threshold.limit) } ?? false }
    }

    /// `statistic`: where a histogram's statistic is read instead of the snapshot's histograms (the same figures,
    /// sooner: the live dashboard's buckets).
    public func evaluate(_ snapshot: MetricsSnapshot, statistic: ((String, String) -> Double?)? = nil) -> Outcome {
        let value: Double?
        if case .statistic(let h, let stat) = subject, let statistic { value = statistic(h, stat) } else { value = self.value(in: snapshot) }
        return Outcome(threshold: self, value: value, untested: value == nil ? untested(in: snapshot) ?? "nothing recorded for it" : nil)
    }
}

/// A plain decimal number ≥ 0 as people write them in scenarios and
/// thresholds: digits and at most one point; no sign, exponent, hex, `inf` or
/// `nan` (which `Double("…")` would take).
public enum PlainNumber {
    public static func parse(_ text: String) -> Double? {
        let s = text.trimmingCharacters(in: .whitespaces)
        guard !s.isEmpty, s.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), s.filter({ $0 == "." }).count <= 1,
              let v = Double(s), v.isFinite
        else { return nil }
        return v
    }
}
