import ConvoyMetrics
import ConvoyWire
import Foundation
import Synchronization

/// Mailbox apps' fallback purge (QuickPic: undelivered messages deleted after 7 days): phones that never poll
/// (`poll_every: never`) keep everything sent to them on the backend, so each round a sample of them reads its
/// own mailbox, as the app would, without acknowledging anything. A message readable past window + purge
/// interval + grace after it was stored is `kept_too_long`; one sent to it, younger than window − grace and
/// not in the mailbox while older ones still are, is `deleted_early`.
extension RetentionChecker {
    func mailboxRound(devices: [VirtualDevice], app: any MailboxApp, http: SupabaseHTTP, clock: RunClock, t: Double) async {
        var parked: [(VirtualDevice, Session)] = []
        for d in devices { if let session = await d.parkedMailboxView() { parked.append((d, session)) } }
        let picked: [(VirtualDevice, Session)] = state.withLock { s in
            guard !parked.isEmpty else { return [] }
            let n = min(policy.sample, parked.count)
            defer { s.cursor = (s.cursor + n) % parked.count }
            return (0..<n).map { parked[(s.cursor + $0) % parked.count] }
        }
        let ages = await withTaskGroup(of: Double?.self) { group in
            for (device, session) in picked {
                group.addTask { await self.checkMailbox(device, session: session, app: app, http: http, clock: clock) }
            }
            var ages: [Double] = []
            for await age in group { if let age { ages.append(age) } }
            return ages
        }
        mark(t: t, oldestAge: ages.max())
    }

    private func checkMailbox(_ device: VirtualDevice, session: Session, app: any MailboxApp, http: SupabaseHTTP, clock: RunClock) async -> Double? {
        let ledger = device.context.mailbox
        let page: MailboxPage
        do {
            // The largest page the API gives: the oldest messages, which are the purge's.
            page = try await app.fetchMailbox(limit: 100, session: session, via: http)
            metrics.count(.retentionHTTPRequests)
        } catch {
            metrics.count(.retentionCheckErrors)
            return nil
        }
        let now = clock.wallNow()
        var rows: [Row] = [], names: [Int64: String] = [:]
        for item in page.items {
            guard let number = ledger.number(of: item.id) else { continue }
            rows.append(Row(id: number, createdAt: item.createdAt, createdText: CommitTimestamp.format(item.createdAt)))
            names[number] = "message \(item.id)"
        }
        let oldest = judge(readable: rows, now: now, foundBy: "recipient", items: names)
        // What was sent to it that the page should hold: all of it, or, when the page is full, what is no newer than its newest.
        let newest = page.items.count >= 100 ? page.items.map(\.createdAt).max() : nil
        let sent = ledger.posted(to: device.index).filter { newest == nil || $0.storedAt <= newest! }
        let present = Set(rows.map(\.id))
        judgeEarly(received: sent.map { ($0.key, $0.storedAt) }, present: present, now: now,
                   items: Dictionary(sent.map { ($0.key, "message \($0.id)") }, uniquingKeysWith: { a, _ in a }))
        return oldest
    }
}

extension VirtualDevice {
    /// A phone that never polls, online: its session, for the fallback purge check to read its mailbox with; nil otherwise.
    func parkedMailboxView() -> Session? {
        guard case .mailbox = shape, profile.pollEvery == nil, life.onlineSince != nil || life.subscribed, !life.isGone else { return nil }
        return account.session
    }
}
