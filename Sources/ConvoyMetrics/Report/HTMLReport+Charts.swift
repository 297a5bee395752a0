import Foundation
import Histogram

/// report.html's charts, each drawn from metrics.csv's seconds or the histograms.
extension HTMLReport {
    static func column(_ input: ReportInput, _ name: String) -> [(x: Double, y: Double?)] {
        input.series.compactMap { row in
            guard let t = row[MetricsCSV.time].flatMap(Double.init) else { return nil }
            return (t, row[name].flatMap(Double.init))
        }
    }

    static func latencyOverTime(_ input: ReportInput) -> String {
        let p = SVGChart.palette
        if input.summary.mailbox != nil {
            return SVGChart.line([
                .init(name: "message p50", color: p[0], points: column(input, MetricsCSV.messageP50)),
                .init(name: "message p99", color: p[1], points: column(input, MetricsCSV.messageP99)),
            ], xLabel: "seconds since the first arrival", yLabel: "ms")
        }
        return SVGChart.line([
            .init(name: "e2e p50", color: p[0], points: column(input, MetricsCSV.e2eP50)),
            .init(name: "e2e p99", color: p[1], points: column(input, MetricsCSV.e2eP99)),
            .init(name: "insert p99", color: p[3], points: column(input, MetricsCSV.postP99), dashed: true),
        ], xLabel: "seconds since the first arrival", yLabel: "ms")
    }

    static let spectrum: [Double] = [0, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.75, 99.9, 99.95, 99.975, 99.99]

    static func distribution(_ input: ReportInput) -> String {
        guard let h = input.histograms else { return "<p class=\"note\">histograms.json is missing.</p>" }
        let names = [HistogramName.e2eLatency, .commitToReceipt, .post, .mailboxLatency, .mailboxPollWait, .mailboxTransfer, .schedulerLag].map(\.name).filter { (h.histograms[$0]?.totalCount ?? 0) > 0 }
        let series = names.enumerated().map { i, name in
            (name: name, color: SVGChart.palette[i], points: spectrum.map { p in (percentile: p, value: Double(h.histograms[name]!.valueAtPercentile(p)) / 1000) })
        }
        return SVGChart.percentiles(series, unit: "ms")
            + "<p class=\"note\">Each line is a histogram's value at a percentile; the x axis stretches the tail (50, 90, 99, 99.9 …) as HdrHistogram plots do.</p>"
    }

    static func throughput(_ input: ReportInput) -> String {
        let p = SVGChart.palette
        if input.summary.mailbox != nil {
            return SVGChart.line([
                .init(name: "messages sent/s", color: p[0], points: column(input, MetricsCSV.messagesSent)),
                .init(name: "opened/s", color: p[2], points: column(input, MetricsCSV.messagesReceived)),
                .init(name: "devices online", color: p[7], points: column(input, MetricsCSV.devicesOnline), dashed: true),
            ], xLabel: "seconds since the first arrival", yLabel: "per second")
        }
        return SVGChart.line([
            .init(name: "sent/s", color: p[0], points: column(input, MetricsCSV.sent)),
            .init(name: "received/s", color: p[2], points: column(input, MetricsCSV.received)),
            .init(name: "inserts/s", color: p[3], points: column(input, MetricsCSV.updates)),
            .init(name: "devices online", color: p[7], points: column(input, MetricsCSV.devicesOnline), dashed: true),
        ], xLabel: "seconds since the first arrival", yLabel: "per second")
    }

    static func errors(_ input: ReportInput) -> String {
        let names = [MetricsCSV.httpErrors, MetricsCSV.decryptFailures, MetricsCSV.staleRejected, MetricsCSV.duplicates, MetricsCSV.reconnects]
        let series = names.enumerated().map { i, n in SVGChart.Series(name: n, color: SVGChart.palette[(i + 4) % SVGChart.palette.count], points: column(input, n)) }
        let any = series.contains { $0.points.contains { ($0.y ?? 0) > 0 } }
        return any ? SVGChart.line(series, xLabel: "seconds since the first arrival", yLabel: "per second")
            : "<p class=\"note\">No HTTP errors, decrypt failures, stale updates, duplicates or reconnects in any second.</p>"
    }

    static func battery(_ b: BatteryReport) -> String {
        let rows = b.groups.map { g in (label: "\(g.name) (\(g.network))", parts: [g.milliwatts.radio, g.milliwatts.gps, g.milliwatts.cpu]) }
        var out = SVGChart.stackedBars(rows, components: ["radio", "GPS", "CPU"], unit: "average mW per device")
        out += table(["group", "devices", "device-hours", "radio mW", "of it tail", "GPS mW", "CPU mW", "mAh/h",
                      "% of \(String(format: "%.0f", b.capacityMah)) mAh per hour", "per device p50 / p90 / max"],
                     b.groups.map { g in
                         let mw = g.milliwatts
                         let tail = g.radioJoules > 0 ? String(format: "%.0f %%", g.radioTailJoules / g.radioJoules * 100) : "–"
                         let spread = g.percentPerHourByDevice.map { String(format: "%.2f / %.2f / %.2f", $0.p50, $0.p90, $0.max) } ?? "–"
                         return [e(g.name), Markup.count(g.devices), String(format: "%.2f", g.deviceHours), SVGChart.format(mw.radio), tail,
                                 SVGChart.format(mw.gps), SVGChart.format(mw.cpu), String(format: "%.1f", g.mAhPerHour), String(format: "%.2f", g.percentPerHour),
                                 spread]
                     }, numeric: Array(1...9))
        return out + "<p class=\"note\">Modelled from each device's own events (bytes sent and received, heartbeats, GPS on-time, crypto CPU) on its network's radio state machine: docs/battery.md.</p>"
    }

    static func retention(_ r: RetentionReport) -> String {
        let points = r.timeline.map { (x: $0.t, y: $0.oldestAgeSeconds) }
        var out = SVGChart.line([.init(name: r.afterGroupEnd ? "longest since its group ended, of what is readable" : "oldest readable row",
                                       color: SVGChart.palette[0], points: points)],
                                xLabel: "seconds since the first arrival", yLabel: r.afterGroupEnd ? "since the end, s" : "age, s",
                                references: [.init(label: "limit \(SVGChart.format(r.limitSeconds)) s", y: r.limitSeconds, color: "#dc2626"),
                                             .init(label: "window \(SVGChart.format(r.windowSeconds)) s", y: r.windowSeconds, color: "#9ca3af")])
        out += "<p>\(r.holds ? "" : "<strong>")\(e(r.verdict.prefix(1).uppercased() + r.verdict.dropFirst()))\(r.holds ? "" : "</strong>").</p>"
        if !r.findings.isEmpty {
            let heads = r.afterGroupEnd ? ["finding", "what", "ended_at", "since the end", "past the window", "found by"]
                : ["finding", "row", "created_at", "age", "past the window", "found by"]
            out += table(heads, r.findings.map { f in
                [e(f.kind), e(f.item ?? String(f.rowID)), e(f.createdAt), String(format: "%.1f s", f.ageSeconds), String(format: "%.1f s", f.overageSeconds), e(f.foundBy)]
            }, numeric: [1, 3, 4])
        }
        return out
    }

    static func groups(_ g: GroupsReport) -> String {
        var out = "<p>\(g.groups) groups; \(g.endedByOwner) ended by their owner; \(g.abandoned) abandoned to auto-end after "
            + "\(SVGChart.format(g.autoEndSeconds)) s (grace \(SVGChart.format(g.graceSeconds)) s), \(g.autoEnded) ended in time.</p>"
        out += "<p>\(g.holds ? "" : "<strong>")\(e(g.verdict.prefix(1).uppercased() + g.verdict.dropFirst()))\(g.holds ? "" : "</strong>").</p>"
        if let m = g.messages { out += "<p>\(e("Chat: " + m.line(expecting: "receipts"))).</p>" }
        if let m = g.media { out += "<p>\(e("Media: " + m.line)).</p>" }
        if let d = g.direct { out += "<p>\(e(d.directLine)).</p>" }
        if let r = g.replay {
            out += "<p>\(r.holds ? "" : "<strong>")\(e(r.verdict.prefix(1).uppercased() + r.verdict.dropFirst()))\(r.holds ? "" : "</strong>").</p>"
        }
        if !g.findings.isEmpty {
            out += table(["group", "finding", "detail"], g.findings.map { [String($0.group), e($0.kind), e($0.detail)] }, numeric: [0])
        }
        return out
    }

    static func probes(_ p: ProbeSummary) -> String {
        var out = "<p>\(p.hostileDevices) hostile device\(p.hostileDevices == 1 ? "" : "s") ran \(e(p.catalogue)): \(p.tried) tries, \(p.leaks) leaked, \(p.findings) findings.</p>"
        let sections = p.probes.contains { $0.section != nil }
        out += table(["probe", "category"] + (sections ? ["section"] : []) + ["tried", "denied", "leaked", "findings"], p.probes.map { x in
            ["<span title=\"\(e(x.description))\"><code>\(e(x.id))</code></span>", e(x.category)] + (sections ? [e(x.section ?? "")] : [])
                + [Markup.count(x.tried), Markup.count(x.denied), x.leaked > 0 ? "<span class=\"badge fail\">\(x.leaked)</span>" : "0", String(x.findings)]
        }, numeric: sections ? [3, 4, 5, 6] : [2, 3, 4, 5])
        for x in p.probes where !(x.measurements ?? []).isEmpty {
            out += "<details><summary>measured: <code>\(e(x.id))</code>\(x.section.map { " (\(e($0)))" } ?? "")</summary>"
            out += "<pre>\(e(x.measurements!.joined(separator: "\n")))</pre></details>"
        }
        for x in p.probes where !x.evidence.isEmpty {
            for ev in x.evidence.prefix(3) {
                out += "<details\(ev.kind == "leak" ? " open" : "")><summary>\(e(ev.kind)): <code>\(e(x.id))</code>\(x.section.map { " (\(e($0)))" } ?? "") — \(e(ev.note))</summary>"
                out += "<pre>\(e(ev.request))\n→ \(ev.status)\n\(e(ev.response))</pre></details>"
            }
        }
        return out
    }
}
