import ConvoyMetrics

/// Group apps' chat at the end of a run (Survale's operation chat): every line and every photo or video a
/// member should have is delivered (live, or loaded after a gap) or lost with a reason (`ChatLedger`).
extension FleetRun {
    /// Closes the chat media's accounting into the counters `media_lost` and `media_lost.<reason>`; nil when no
    /// media was sent.
    func closeMedia(_ ledger: ChatLedger) -> MediaReport? {
        let c = metrics.snapshot().counters
        guard c[.mediaSent] + c[.mediaFailed] > 0 else { return nil }
        var report = Self.chatReport(ledger.close(), counters: c, sent: .mediaSent, failed: .mediaFailed, retried: .mediaRetried)
        (report.bytesUp, report.bytesDown) = (c[.mediaBytesUp], c[.mediaBytesDown])
        metrics.count(.mediaLost, by: report.lostTotal)
        for (reason, n) in report.lost { metrics.count(.mediaLost(reason: reason), by: n) }
        return report
    }

    /// Closes the chat lines' accounting into the counters `messages_lost` and `messages_lost.<reason>`; nil when
    /// no line was posted.
    func closeMessages(_ ledger: ChatLedger) -> MediaReport? {
        let c = metrics.snapshot().counters
        guard c[.messagesSent] + c[.messagesFailed] > 0 else { return nil }
        let report = Self.chatReport(ledger.close(), counters: c, sent: .messagesSent, failed: .messagesFailed, retried: .messagesRetried)
        metrics.count(.messagesLost, by: report.lostTotal)
        for (reason, n) in report.lost { metrics.count(.messagesLost(reason: reason), by: n) }
        return report
    }

    static func chatReport(_ closed: ChatLedger.Closed, counters c: [String: Int], sent: CounterName, failed: CounterName,
                           retried: CounterName) -> MediaReport {
        var report = MediaReport()
        (report.sent, report.retried) = (c[sent], c[retried])
        let prefix = failed.name + "."
        for (name, n) in c where name.hasPrefix(prefix) { report.failed[String(name.dropFirst(prefix.count))] = n }
        (report.expected, report.delivered, report.caughtUp) = (closed.expected, closed.delivered, closed.caughtUp)
        (report.lost, report.unexpected) = (closed.lost, closed.unexpected)
        return report
    }
}
