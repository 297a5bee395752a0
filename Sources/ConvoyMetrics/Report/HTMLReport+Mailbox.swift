import Foundation

/// report.html for a mailbox app (QuickPic): its messages rather than location updates.
extension HTMLReport {
    /// The header's cards: messages sent, delivered, lost, and their latency split at the server.
    static func mailboxCards(_ m: MailboxReport, _ s: RunSummary) -> [(String, String, Bool)] {
        let latency = s.latencyMs[HistogramName.mailboxLatency.name].map { "\(RunSummary.ms($0.p50)) / \(RunSummary.ms($0.p99)) ms" } ?? "–"
        return [("messages sent", Markup.count(m.sent), false), ("delivered", Markup.count(m.delivered), false),
                ("lost (mailbox.loss)", m.sent == 0 ? "not tested: nothing sent" : "\(Markup.count(m.lostByBackend)) (\(String(format: "%.2f", m.lossPercent)) %)",
                 m.lostByBackend > 0),
                ("e2e p50 / p99", latency, false),
                m.acknowledgeDeletes ? ("served after ACK", Markup.count(m.afterAck), m.afterAck > 0) : ("awaiting the partner", Markup.count(m.held), false)]
    }

    /// The "Mailbox" section: accounting with its reasons, ACK-then-delete, what polling cost, the latency split.
    static func mailbox(_ m: MailboxReport, _ s: RunSummary) -> String {
        var out = "<p>\(e(m.verdict)).</p>"
        var rows = [["sent", Markup.count(m.sent)], ["delivered (opened, shown, acknowledged)", Markup.count(m.delivered)]]
        rows += m.lost.sorted { $0.key < $1.key }.map { [$0.key == "not_fetched" ? "lost by the backend (mailbox.loss): not_fetched" : "not delivered: \($0.key)", "\($0.value)"] }
        if m.held > 0 || !m.acknowledgeDeletes { rows.append(["held: awaiting the partner's answer at the end", Markup.count(m.held)]) }
        if m.acknowledgeDeletes { rows += [["served again after its ACK succeeded", Markup.count(m.afterAck)], ["gone before its ACK", Markup.count(m.ackGone)]] }
        rows += [["polls (empty, failed)", "\(Markup.count(m.polls)) (\(Markup.count(m.emptyPolls)), \(Markup.count(m.pollFailures)))"],
                 ["MB up / down", String(format: "%.1f / %.1f", Double(m.bytesUp) / 1e6, Double(m.bytesDown) / 1e6)]]
        if let n = m.notifications {
            rows.append(["outcome reminders owed / received / missed",
                         n.notTested.map { "not tested (\($0))" } ?? "\(n.due) / \(n.received) / \(n.missedTotal)"])
            for (kind, count) in n.receivedByKind.sorted(by: { $0.key < $1.key }) { rows.append(["notifications received: \(kind)", Markup.count(count)]) }
        }
        if let l = m.listeners {
            rows += [["listeners: held connections opened (failed)", "\(l.opened) (\(l.failed))"],
                     ["listeners: pushes (MB down)", String(format: "%d (%.2f)", l.pushes, Double(l.bytesDown) / 1e6)]]
        }
        out += table(["messages", "count"], rows, numeric: [1])
        let split = [HistogramName.mailboxLatency, .mailboxPollWait, .mailboxTransfer].compactMap { h in
            s.latencyMs[h.name].map { [h.name, RunSummary.ms($0.p50), RunSummary.ms($0.p99)] }
        }
        if !split.isEmpty {
            out += table(["latency (ms)", "p50", "p99"], split, numeric: [1, 2])
            out += "<p class=\"note\">Intended send → decrypted = poll wait (stored → the poll that found it began) + transfer (the rest).</p>"
        }
        return out
    }
}
