import ConvoyWire
import ConvoyMetrics

/// Mailbox apps at the end of a run: the messages' accounting closed into the counters (`mailbox_delivered`,
/// `mailbox_lost.<reason>`) and the summary's `mailbox` section, with the backend's ACK checks.
extension FleetRun {
    func closeMailbox(_ ledger: MailboxLedger, purgeLimit: Double) -> MailboxReport {
        let closed = ledger.close(purgeLimit: purgeLimit)
        var report = MailboxReport()
        (report.sent, report.delivered, report.lost, report.held) = (closed.sent, closed.delivered, closed.lost, closed.held)
        (report.afterAck, report.ackGone) = (closed.afterAck, closed.ackGone)
        let c = metrics.snapshot().counters
        (report.polls, report.emptyPolls, report.pollFailures) = (c[.mailboxPolls], c[.mailboxPollsEmpty], c[.mailboxPollFailures])
        (report.bytesUp, report.bytesDown) = (c[.mailboxBytesUp], c[.mailboxBytesDown])
        if c[.listenConnections] + c[.listenFailures] > 0 {
            var l = MailboxReport.Listeners()
            (l.opened, l.failed, l.pushes) = (c[.listenConnections], c[.listenFailures], c[.listenPushes])
            (l.bytesDown, l.bytesUp, l.keepalives) = (c[.listenBytesDown], c[.listenBytesUp], c[.listenKeepalives])
            report.listeners = l
        }
        metrics.count(.mailboxDelivered, by: closed.delivered)
        metrics.count(.mailboxLost, by: report.lostTotal)
        for (reason, n) in closed.lost { metrics.count(.mailboxLost(reason: reason), by: n) }
        return report
    }
}

extension FleetRun {
    /// The notifications the app's backend owed the phones by `end` (Unix seconds), closed into the counters
    /// (`outcome_reminders_due`, `_received`, `_missed.<reason>`); nil for an app whose phones get none.
    func closeNotifications(_ app: any MailboxApp, at end: Double) -> NotificationReport? {
        guard let report = app.notifications(until: end) else { return nil }
        if report.due > 0 {
            metrics.count(.outcomeRemindersDue, by: report.due)
            metrics.count(.outcomeRemindersReceived, by: report.received)
            metrics.count(.outcomeRemindersMissed, by: report.missedTotal)
            for (reason, n) in report.missed { metrics.count(.outcomeRemindersMissed(reason: reason), by: n) }
        }
        return report
    }
}

extension RetentionChecker {
    /// One round of whichever check the app's retention needs: its rows (Green Box), its groups' data after they end
    /// (Survale), or its mailboxes' fallback purge (QuickPic).
    func round(for app: any AppProfile, devices: [VirtualDevice], http: SupabaseHTTP, serviceKey: String?, clock: RunClock, t: Double) async {
        switch app.shaped {
        case .mailbox(let app): await mailboxRound(devices: devices, app: app, http: http, clock: clock, t: t)
        case .group(let app): await groupRound(devices: devices, app: app, http: http, serviceKey: serviceKey, clock: clock, t: t)
        case .pairwise(let app): await round(devices: devices, app: app, http: http, serviceKey: serviceKey, clock: clock, t: t)
        }
    }
}
