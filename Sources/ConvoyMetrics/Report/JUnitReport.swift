import Foundation

/// `junit.xml` for CI: each threshold a test case, each probe category a test
/// case (failed by any leak), retention and the accounting one each, so a
/// CI's test view shows which rule a nightly load run broke.
public enum JUnitReport {
    public static func render(_ s: RunSummary) -> String {
        var suites: [(name: String, cases: [Case])] = []
        suites.append(("thresholds", s.thresholds.map { t in
            Case(name: t.threshold, failure: t.passed ? nil : "\(t.threshold): \(t.value == nil ? "" : "measured ")\(RunSummary.value(t))")
        }))
        // A run that sent no location update has no location accounting to judge: no case (the summary says so).
        var correctness = s.accounting.sent == 0 && s.accounting.closes ? [] : [Case(name: "accounting closes (sent = delivered + lost)",
                                failure: s.accounting.closes ? nil : "sent \(s.accounting.sent) ≠ delivered \(s.accounting.delivered) + lost \(s.accounting.lostTotal)")]
        if let r = s.retention {
            correctness.append(Case(name: "retention: nothing kept past \(SVGChart.format(r.limitSeconds)) s", failure: r.violations > 0 ? r.verdict : nil))
            correctness.append(Case(name: "retention: nothing deleted before \(SVGChart.format(r.windowSeconds)) s", failure: r.deletedEarly > 0 ? r.verdict : nil))
        }
        if let g = s.groups {
            correctness.append(Case(name: "auto-end: abandoned groups end \(SVGChart.format(g.autoEndSeconds)) s (+ \(SVGChart.format(g.graceSeconds)) s) after their last member left",
                                    failure: g.autoEndLate + g.endedEarly > 0 ? g.verdict : nil))
            correctness.append(Case(name: "auto-end: never while a member is on the group", failure: g.endedWhileConnected > 0 ? g.verdict : nil))
            if let m = g.messages {
                correctness.append(Case(name: "chat accounting closes (expected = delivered + lost)",
                                        failure: m.closes ? nil : "expected \(m.expected) ≠ delivered \(m.delivered) + lost \(m.lostTotal)"))
            }
            if let m = g.media {
                correctness.append(Case(name: "media accounting closes (expected = delivered + lost)",
                                        failure: m.closes ? nil : "expected \(m.expected) ≠ delivered \(m.delivered) + lost \(m.lostTotal)"))
            }
            if let m = g.direct {
                correctness.append(Case(name: "direct messages accounting closes (expected = delivered + lost)",
                                        failure: m.closes ? nil : "expected \(m.expected) ≠ delivered \(m.delivered) + lost \(m.lostTotal)"))
            }
            // Not read back (nothing ended by its owner, or nothing stored): no case, rather than a pass.
            if let r = g.replay, r.groups > 0 {
                correctness.append(Case(name: "replay: every archived position and chat line read back after the end",
                                        failure: r.holds ? nil : r.verdict, output: r.holds ? r.verdict : nil))
            }
        }
        if let m = s.mailbox {
            correctness.append(Case(name: "mailbox accounting closes (sent = delivered + lost + held)",
                                    failure: m.closes ? nil : "sent \(m.sent) ≠ delivered \(m.delivered) + lost \(m.lostTotal) + held \(m.held)"))
            if m.acknowledgeDeletes {
                correctness.append(Case(name: "ACK-then-delete: nothing served again after its ACK", failure: m.afterAck > 0 ? m.verdict : nil))
                correctness.append(Case(name: "ACK-then-delete: nothing gone before its ACK", failure: m.ackGone > 0 ? m.verdict : nil))
            }
        }
        if !s.complete { correctness.append(Case(name: "run completed", failure: "interrupted: the figures cover what ran")) }
        suites.append(("correctness", correctness))
        if let p = s.probes { suites.append(("probes", probeCases(p))) }
        return xml(name: s.scenario, suites: suites, seconds: s.durationSeconds, started: s.startedAt)
    }

    /// `convoy probe`'s junit.xml: one suite, a case per probe category.
    public static func render(probes p: ProbeSummary, name: String, seconds: Double, started: Date) -> String {
        xml(name: name, suites: [("probes", probeCases(p))], seconds: seconds, started: started)
    }

    static func probeCases(_ p: ProbeSummary) -> [Case] {
        var order: [String] = []
        for probe in p.probes where !order.contains(probe.category) { order.append(probe.category) }
        return order.map { category in
            let probes = p.probes.filter { $0.category == category }
            let leaked = probes.filter { $0.leaked > 0 }
            let message = leaked.map { x in
                "\(x.id)\(x.section.map { " (\($0))" } ?? ""): leaked \(x.leaked) of \(x.tried)" + (x.evidence.first { $0.kind == "leak" }.map { "\n\($0.request) → \($0.status)\n\($0.response)" } ?? "")
            }.joined(separator: "\n\n")
            let tried = probes.reduce(0) { $0 + $1.tried }, denied = probes.reduce(0) { $0 + $1.denied }
            // Findings and measurements (a limit found, a brute-force estimate) as the case's output.
            let output = probes.compactMap { x -> String? in
                let findings = x.evidence.filter { $0.kind == "finding" }.map { "finding: \($0.note)" }
                let lines = findings + (x.measurements ?? [])
                return lines.isEmpty ? nil : "\(x.id)\(x.section.map { " (\($0))" } ?? ""):\n  " + lines.joined(separator: "\n  ")
            }.joined(separator: "\n")
            var c = Case(name: "\(category) (\(probes.count) probes, \(tried) tries, \(denied) denied)", failure: leaked.isEmpty ? nil : message)
            c.output = output.isEmpty ? nil : output
            return c
        }
    }

    static func xml(name: String, suites: [(name: String, cases: [Case])], seconds: Double, started: Date) -> String {
        let all = suites.flatMap(\.cases)
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuites name=\"convoy \(x(name))\" tests=\"\(all.count)\" failures=\"\(all.filter { $0.failure != nil }.count)\" time=\"\(String(format: "%.3f", seconds))\">\n"
        for suite in suites {
            let failures = suite.cases.filter { $0.failure != nil }.count
            xml += "  <testsuite name=\"\(x(name)).\(suite.name)\" tests=\"\(suite.cases.count)\" failures=\"\(failures)\" errors=\"0\" skipped=\"0\" timestamp=\"\(started.formatted(Date.ISO8601FormatStyle()))\">\n"
            for c in suite.cases {
                xml += "    <testcase classname=\"convoy.\(x(name)).\(suite.name)\" name=\"\(x(c.name))\""
                if c.failure != nil || c.output != nil {
                    xml += ">\n"
                    if let failure = c.failure {
                        xml += "      <failure message=\"\(x(String(failure.prefix(while: { $0 != "\n" }))))\">\(x(failure))</failure>\n"
                    }
                    if let output = c.output { xml += "      <system-out>\(x(output))</system-out>\n" }
                    xml += "    </testcase>\n"
                } else {
                    xml += "/>\n"
                }
            }
            xml += "  </testsuite>\n"
        }
        return xml + "</testsuites>\n"
    }

    struct Case {
        var name: String
        var failure: String?
        /// `<system-out>`: what a passing case still has to say (findings, measurements).
        var output: String? = nil
    }

    static func x(_ s: String) -> String { Markup.escape(s) }
}
