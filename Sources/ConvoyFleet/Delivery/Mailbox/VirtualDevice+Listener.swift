import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// A listener app's phone (Closer): its held connection opened when it comes online and again after it closes (the
/// SDKs' backoff), each message pushed down it charged to the radio and, when it changed what the phone reads, a look
/// at once; a keepalive on a quiet connection (docs/battery.md, "Listeners and polls").
extension VirtualDevice {
    /// Opens the app's held connection, if it has one; each message the backend pushes down it is charged to the
    /// radio when it comes, and one that changed what the phone reads has it look at once.
    func openListener() async {
        guard !life.isGone, !mailbox.pollsOnly, !mailbox.listenOpening, mailbox.listener?.isOpen != true,
              context.clock.now() >= mailbox.listenRetryAt else { return }
        mailbox.listenOpening = true
        defer { mailbox.listenOpening = false }
        let clock = context.clock
        let started = clock.now()
        let scheduler = context.scheduler
        do {
            let opened = try await mailboxApp.openListener(session: account.session, via: http, proxy: profile.tunnel) { [weak self] push in
                let at = clock.wallNow()
                scheduler.at(clock.now()) { [weak self] _ in await self?.heard(push, at: at) }
            }
            guard let opened else {
                mailbox.pollsOnly = true
                return
            }
            metrics.record(.listenOpen, seconds: clock.now() - started)
            metrics.count(.listenConnections)
            spendExchange(up: 600, down: 300, since: started)  // the upgrade: the ID token and headers up, the 101 down
            if life.isGone { opened.close() }
            mailbox.listener = opened
            mailbox.listenFailures = 0
            mailbox.listenTraffic = clock.now()
            context.scheduler.at(clock.now() + MailboxState.keepalive) { [weak self] t in await self?.keepAlive(intended: t) }
        } catch {
            metrics.count(.listenFailures)
            _ = countFailure(error)
            mailbox.listenFailures += 1
            mailbox.listenRetryAt = clock.now() + MailboxState.listenBackoff(failures: mailbox.listenFailures)
        }
    }

    /// A keepalive ping on the held connection if it has been quiet for `MailboxState.keepalive` seconds: a radio wake
    /// of its own (about 40 bytes each way with TLS), as the SDKs' gRPC channel makes one.
    fileprivate func keepAlive(intended: Double) async {
        guard !life.isGone, let listener = mailbox.listener, listener.isOpen else { return }
        let now = context.clock.now()
        if now - mailbox.listenTraffic >= MailboxState.keepalive - 0.001 {
            listener.ping()
            metrics.count(.listenKeepalives)
            spendExchange(up: 40, down: 40, since: now)
            mailbox.listenTraffic = now
        }
        context.scheduler.at(mailbox.listenTraffic + MailboxState.keepalive) { [weak self] t in await self?.keepAlive(intended: t) }
    }

    /// A message pushed down a held connection (received at `at`, Unix seconds): the radio wakes for it; a notification
    /// is counted, and one the backend owed at a time is timed from then; a change has the phone look now.
    fileprivate func heard(_ push: MailboxPush, at: Double) async {
        metrics.count(.listenPushes)
        metrics.count(.listenBytesDown, by: push.bytes)
        spendExchange(up: 0, down: push.bytes, since: context.clock.now())
        mailbox.listenTraffic = context.clock.now()
        if let kind = push.notification {
            metrics.count(.notificationsReceived)
            metrics.count(.notificationsReceived(kind: kind))
            if let due = push.dueAt { metrics.record(.outcomeReminder, seconds: max(0, at - due)) }
        }
        guard push.changed, !life.isGone, life.onlineSince != nil else { return }
        if mailbox.polling {
            mailbox.lookAgain = true
            return
        }
        await look()
    }

    /// One look outside the poll timer (a push): as a poll, without scheduling the next.
    func look() async {
        guard mailbox.startPoll() else { return }
        defer { mailbox.endPoll() }
        repeat {
            mailbox.lookAgain = false
            await pollOnce()
        } while mailbox.lookAgain && !life.isGone
        if pairing.plan != nil, !life.isGone { await catchUpPairing() }
    }

    /// The held connection closes with the phone.
    func closeListener() {
        mailbox.listener?.close()
        if let bytes = mailbox.listener?.bytes { metrics.count(.listenBytesUp, by: bytes.up) }
        mailbox.listener = nil
    }
}
