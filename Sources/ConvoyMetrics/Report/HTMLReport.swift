import Foundation

/// `report.html`: one self-contained page (inline CSS and SVG, nothing
/// fetched) that says at the top whether the run passed and why not, then
/// shows latency over time and its distribution, throughput, errors,
/// delivery accounting, battery, retention and the probes.
public enum HTMLReport {
    public static func render(_ input: ReportInput) -> String {
        let s = input.summary
        var body = header(s)
        body += section("Thresholds", thresholds(s))
        body += section("End-to-end latency over time", latencyOverTime(input),
                        note: "Intended send time to decrypted at the friend, per second of the run (open workload: no coordinated omission).")
        body += section("Latency distribution", distribution(input))
        body += section("Throughput", throughput(input), note: s.mailbox == nil
                        ? "Updates sealed and sent to friends, and decrypted by them, per second; devices online (dashed)."
                        : "Messages stored by the backend, and opened by their recipients, per second; devices online (dashed).")
        body += section("Errors", errors(input))
        // A mailbox app's delivery is its Mailbox section (messages, not updates).
        if s.mailbox == nil, s.showsLocations { body += section("Delivery", delivery(s)) }
        if let map = input.map, s.showsLocations { body += section("Fleet map", SVGMap.render(map)) }
        if let n = s.network, !n.isEmpty {
            let rows = n.map { g in
                [e(g.group), e(g.summary), String(g.tunnels), String(g.cuts), g.offlineShare.map { String(format: "%.1f %%", $0 * 100) } ?? "–",
                 g.offRealtimeShare.map { String(format: "%.1f %%", $0 * 100) } ?? "–"]
            }
            let notes = n.compactMap(\.drawNote).map { "<p class=\"note\"><strong>Not tested at this size:</strong> \(e($0)).</p>" }.joined()
            body += section("Network conditions", table(["group", "conditions", "tunnels", "cut", "offline", "off Realtime"], rows, numeric: [2, 3, 4, 5]) + notes,
                            note: "Every byte of these groups' phones went through their links; cut: times a phone's connections were closed by an offline "
                                + "window or a reset; offline: the share of the phones' time, from arrival to the end, their offline windows took in this run; "
                                + "off Realtime: the share their Realtime connection was down, the windows and the reconnect after each.")
        }
        if let b = s.battery { body += section("Battery", battery(b)) }
        if let r = s.retention { body += section("Retention", retention(r)) }
        if let g = s.groups { body += section("Groups and auto-end", groups(g)) }
        if let m = s.mailbox { body += section("Mailbox", mailbox(m, s)) }
        if let pairing = pairing(s) {
            body += section("Pairing during the run", pairing,
                            note: "Requests made and accepted on the phones, measured: the request's round trip, and request → accepted as the asking phone sees it.")
        }
        if let p = s.probes { body += section("Hostile-device probes", probes(p)) }
        body += section("All latencies (ms)", latencyTable(s))
        if let r = s.resources { body += section("Harness", harness(r, embedded: s.target.kind == "embedded")) }
        body += "<footer>convoy.run.summary v\(s.version) · drawn from summary.json, metrics.csv, histograms.json and map.json; <code>convoy report DIR</code> draws it again.</footer>"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(e(s.scenario)): \(s.passed ? "passed" : "FAILED") — Convoy</title>
            <style>\(css)</style></head>
            <body><main>
            \(body)
            </main></body></html>

            """
    }

    static let css = """
        body{margin:0;background:#f9fafb;color:#111827;font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif}
        main{max-width:820px;margin:0 auto;padding:24px 20px 48px}
        h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}
        .badge{display:inline-block;padding:2px 10px;border-radius:12px;font-size:13px;font-weight:600;vertical-align:middle;margin-left:8px}
        .pass{background:#dcfce7;color:#166534}.fail{background:#fee2e2;color:#991b1b}.warn{background:#fef3c7;color:#92400e}
        .meta{color:#4b5563;margin:0 0 14px}
        .cards{display:grid;grid-template-columns:repeat(4,1fr);gap:8px}
        .card{background:#fff;border:1px solid #e5e7eb;border-radius:8px;padding:8px 10px}
        .card .v{font-size:20px;font-weight:600}.card .k{color:#6b7280;font-size:12px}
        .card.bad{border-color:#fca5a5;background:#fef2f2}
        .why{background:#fef2f2;border:1px solid #fca5a5;border-radius:8px;padding:8px 14px;margin:14px 0}
        .why li{margin:2px 0}
        table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
        th,td{border-bottom:1px solid #e5e7eb;padding:4px 8px;text-align:left}
        td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
        .note{color:#6b7280;font-size:12px;margin:4px 0}
        svg.chart{max-width:100%;height:auto;background:#fff;border:1px solid #e5e7eb;border-radius:6px}
        svg .axis{fill:#6b7280}
        svg.fleet-map{width:100%;height:auto;border:1px solid #e5e7eb;border-radius:6px}svg.fleet-map text{font-size:10px;fill:#64748b}
        svg.fleet-map text.count{fill:#fff;font-size:9px}.legend span{margin-right:14px;font-size:12px}
        .legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px;vertical-align:-1px}
        details{margin:4px 0}pre{white-space:pre-wrap;word-break:break-all;background:#f3f4f6;padding:6px;border-radius:4px;font-size:12px}
        footer{margin-top:32px;color:#9ca3af;font-size:12px}code{font-size:12px}
        """

    // MARK: Header

    static func header(_ s: RunSummary) -> String {
        let verdict = !s.complete ? "<span class=\"badge warn\">INTERRUPTED</span>" : s.passed ? "<span class=\"badge pass\">PASSED</span>" : "<span class=\"badge fail\">FAILED</span>"
        var out = "<h1>\(e(s.scenario))\(verdict)</h1>"
        out += "<p class=\"meta\">\(Markup.count(s.devices)) devices against \(e(s.target.url)) (\(e(s.target.kind))) · seed \(s.seed) · "
        out += "\(RunSummary.seconds(s.durationSeconds)) from the first arrival · started \(s.startedAt.formatted(Date.ISO8601FormatStyle())) · exit \(s.exitCode)</p>"

        let why = s.failureReasons(code: { "<code>\(e($0))</code>" }, text: e)
        if !why.isEmpty {
            let title = !s.complete ? "Why it is incomplete" : s.passed ? "Warnings" : "Why it failed"
            out += "<div class=\"why\"><strong>\(title):</strong><ul>" + why.map { "<li>\($0)</li>" }.joined() + "</ul></div>"
        }

        let a = s.accounting
        let loss = a.sent > 0 ? Double(a.lostTotal) / Double(a.sent) * 100 : 0
        var cards: [(String, String, Bool)] = [
            ("updates sent", Markup.count(a.sent), false),
            ("delivered", Markup.count(a.delivered), false),
            ("lost", "\(Markup.count(a.lostTotal)) (\(String(format: "%.2f", loss)) %)", a.lostTotal > 0),
            ("e2e p50 / p99", s.latencyMs[HistogramName.e2eLatency.name].map { "\(RunSummary.ms($0.p50)) / \(RunSummary.ms($0.p99)) ms" } ?? "–", false),
            ("HTTP errors", Markup.count(s.counters[.httpErrors]), s.counters[.httpErrors] > 0),
            ("decrypt failures", Markup.count(s.counters[.decryptFailures]), s.counters[.decryptFailures] > 0),
        ]
        if let m = s.mailbox {
            cards = mailboxCards(m, s) + cards.suffix(2)
        } else if !s.showsLocations {
            cards = [cards[4]]  // no location updates (Closer's pairing): its HTTP errors; its pairing is in the latency table
        }
        if let r = s.retention {
            let held = r.checks + r.scans == 0 ? "not checked" : r.keptTooLongTestable ? "held" : "not testable in this run"
            cards.append(("retention", r.holds ? held : "\(r.violations + r.deletedEarly) findings", !r.holds))
        }
        if let p = s.probes { cards.append(("probe leaks", "\(Markup.count(p.leaks)) of \(Markup.count(p.tried)) tries", p.leaks > 0)) }
        if let b = s.battery, let worst = b.groups.max(by: { $0.percentPerHour < $1.percentPerHour }) {
            cards.append(("battery (worst group)", String(format: "%.1f %%/h", worst.percentPerHour), false))
        }
        out += "<div class=\"cards\">" + cards.map { k, v, bad in "<div class=\"card\(bad ? " bad" : "")\"><div class=\"v\">\(e(v))</div><div class=\"k\">\(e(k))</div></div>" }.joined() + "</div>"
        return out
    }

    // MARK: Tables

    static func thresholds(_ s: RunSummary) -> String {
        guard !s.thresholds.isEmpty else { return "<p class=\"note\">The scenario sets no thresholds.</p>" }
        return table(["threshold", "value", "result"], s.thresholds.map { t in
            ["<code>\(e(t.threshold))</code>", e(RunSummary.value(t)), t.passed ? "<span class=\"badge pass\">pass</span>" : "<span class=\"badge fail\">FAIL</span>"]
        }, numeric: [1])
    }

    static func delivery(_ s: RunSummary) -> String {
        let a = s.accounting
        var out = table(["sent", "delivered", "of which by backfill", "of which after a retry", "lost", "duplicates", "to friends offline"],
                        [[a.sent, a.delivered, a.deliveredByBackfill, a.deliveredAfterRetry, a.lostTotal, a.duplicates, a.sentOffline].map(Markup.count)],
                        numeric: Array(0..<7))
        if !a.lost.isEmpty {
            out += "<p class=\"note\">Lost by reason:</p>" + table(["reason", "updates"], a.lost.sorted { $0.value > $1.value }.map { [e($0.key), Markup.count($0.value)] }, numeric: [1])
        }
        out += "<p class=\"note\">" + (a.sent == 0 ? "No update was sent: the accounting is not tested in this run." : a.closes ? "Every update is accounted for: sent = delivered + lost." : "<strong>The accounting does not close.</strong>") + "</p>"
        return out
    }

    static func latencyTable(_ s: RunSummary) -> String {
        let names = RunSummary.leading.filter { s.latencyMs[$0] != nil } + s.latencyMs.keys.filter { !RunSummary.leading.contains($0) }.sorted()
        return table(["histogram", "count", "p50", "p90", "p99", "p99.9", "max"], names.map { n in
            let x = s.latencyMs[n]!
            return [e(n), Markup.count(x.count)] + [x.p50, x.p90, x.p99, x.p999, x.max].map(RunSummary.ms)
        }, numeric: Array(1...6))
    }

    static func harness(_ r: RunSummary.Resources, embedded: Bool) -> String {
        var out = String(format: "<p>CPU %.1f s during the timeline", r.end.cpuSeconds - r.timelineStart.cpuSeconds)
        if let per = r.cpuPerDeliveredMicroseconds { out += String(format: " (%.0f µs per delivered update)", per) }
        out += String(format: "; peak resident memory %.0f MiB", r.end.maxRSSMiB)
        if let per = r.memoryPerDeviceKiB { out += String(format: " (%.0f KiB per device)", per) }
        return out + (embedded ? ". The embedded backend ran in the same process: its cost is included.</p>" : ".</p>")
    }

    /// Pairing on the phones (`pairing_*`), when the run had any: what was asked, accepted, left, accepted later
    /// or refused as gone, and how long it took.
    static func pairing(_ s: RunSummary) -> String? {
        let c = s.counters
        // Shown when anything was tried: a run whose every request failed says so here too.
        let requests = c["pairing_requests"] ?? 0
        guard requests + (c["pairing_failures"] ?? 0) > 0 else { return nil }
        let rows: [(String, Int?)] = [
            ("requests made", requests), ("accepted", c["pairing_accepted"]), ("left at decide later", c["pairing_decided_later"]),
            ("declined", c["pairing_declined"]), ("accepted later: tried", c["pairing_accepted_later"]), ("accepted later: went through", c["pairing_accepted_later_succeeded"]),
            ("accepted later: refused as gone (expired)", c["pairing_requests_gone"]), ("failures", c["pairing_failures"]),
        ]
        var out = table(["", "count"], rows.map { [e($0.0), Markup.count($0.1 ?? 0)] }, numeric: [1])
        let latencies = ["pairing_lookup", "pairing_request", "pairing_accept", "pairing_accept_later", "pairing_first_update"].compactMap { name in
            s.latencyMs[name].map { (name, $0) }
        }
        if !latencies.isEmpty {
            out += table(["histogram", "count", "p50", "p90", "p99", "max"], latencies.map { name, h in
                [e(name), Markup.count(h.count), SVGChart.format(h.p50), SVGChart.format(h.p90), SVGChart.format(h.p99), SVGChart.format(h.max)]
            }, numeric: [1, 2, 3, 4, 5])
        }
        return out
    }

    static func table(_ head: [String], _ rows: [[String]], numeric: [Int] = []) -> String {
        var out = "<table><thead><tr>" + head.enumerated().map { "<th\(numeric.contains($0) ? " class=\"n\"" : "")>\(e($1))</th>" }.joined() + "</tr></thead><tbody>"
        for row in rows {
            out += "<tr>" + row.enumerated().map { "<td\(numeric.contains($0) ? " class=\"n\"" : "")>\($1)</td>" }.joined() + "</tr>"
        }
        return out + "</tbody></table>"
    }

    static func section(_ title: String, _ content: String, note: String? = nil) -> String {
        "<section><h2>\(e(title))</h2>\(note.map { "<p class=\"note\">\(e($0))</p>" } ?? "")\(content)</section>"
    }

    static func e(_ s: String) -> String { SVGChart.escape(s) }
}
