import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Logging

/// Receiving (greenbox-prd.md §4.4, "To receive locations"): Realtime events, the app's updates decrypted
/// and validated, rejoins, and catching up after a gap.
extension VirtualDevice {
    func handle(_ event: RealtimeClient.Event) async {
        if shapeHandled(event) { return }
        switch event {
        case .connected(let attempt):
            if attempt > 0 {
                metrics.count(.reconnects)
                reconnectCount += 1
                // A websocket upgrade: request and response headers, with TCP and TLS set-up, through the radio.
                spendHTTP(body: 0, response: 0)
            }
            context.health.connected(index)
            context.logger.debug("device \(index): Realtime connected (attempt \(attempt))")
        case .disconnected(let reason):
            metrics.count(.disconnects)
            offChannels()
            context.logger.debug("device \(index): Realtime connection ended: \(reason)")
            // What was lost may have been on its way since the last message heard (a busy phone hears of the loss late).
            let now = context.clock.wallNow()
            if ledger.gaps.last.map({ $0.to.isFinite }) ?? true { ledger.gaps.append(.init(from: min(now, lastHeard ?? now))) }
            life.lost(at: min(now, lastHeard ?? now))
            shapeLost(at: min(now, lastHeard ?? now))
            context.health.disconnected(index, at: now)
        case .subscribed(let topic):
            context.logger.debug("device \(index): subscribed")
            shapeSubscribed(topic)
            switch life.subscription() {
            case .first(let arrivedAt?):
                // One that joined by request waited to be let in: its own figure, not the subscription's.
                if !shapeTimedFirstSubscription() { metrics.record(.subscribe, seconds: context.clock.now() - arrivedAt) }
                context.presence.set(index, online: true)
                ledger.online.append(.init(from: context.clock.wallNow()))
                // Requests made while it was away (the PRD's "has invited you!" right after onboarding).
                if pairing.plan != nil { Task { [weak self] in await self?.catchUpPairing() } }
            case .back(let since):
                if let last = ledger.gaps.last, !last.to.isFinite { ledger.gaps[ledger.gaps.count - 1].to = context.clock.wallNow() }
                // Back after a reconnect or a rejoin: fetch what Realtime could not deliver meanwhile,
                // in a task of its own so that live changes are not held up behind it.
                // Friends made meanwhile first, so that their rows in the backfill are not strangers'.
                // Live changes meanwhile wait for it (`held`): the catch-up's older rows are shown first, as the app
                // would draw them, rather than turned away as older than what a live change had just drawn.
                let pairs = pairing.plan != nil
                held.catchingUp = true
                Task { [weak self] in
                    if pairs { await self?.catchUpPairing() }
                    await self?.shapeCatchUp(since: since)
                    await self?.releaseHeldLive()
                }
            case .first(nil), .unchanged: break
            }
        case .joinFailed(let topic, let reason):
            metrics.count(.realtimeJoinFailures)
            context.logger.debug("device \(index): join refused: \(reason)")
            if joinRefusalEnds(reason) { return }
            // A token the backend no longer takes (it was restarted with another secret, say): renew it first.
            if Self.refusesToken(reason) { await renewAfterRefusal() }
            await rejoin(topic)
        case .channelClosed(let topic, let reason):
            metrics.count(.realtimeChannelClosed)
            offChannels()
            context.logger.debug("device \(index): channel closed: \(reason)")
            life.lost(at: context.clock.wallNow())
            shapeLost(at: context.clock.wallNow(), topic: topic)
            await rejoin(topic)
        case .change(_, let change):
            lastHeard = change.receivedAt
            spendReceived(bytes: change.bytes)
            let incoming = locationApp.incoming(change)
            switch incoming {
            case .update(let update):
                if let committed = CommitTimestamp.parse(change.commitTimestamp) {
                    metrics.record(.commitToReceipt, seconds: change.receivedAt - committed)
                }
                if held.catchingUp { held.updates.append(update) } else { receive(update) }
            case .pairing(let event): pairingEvent(event)
            case .groupEnded, .groupMessage, .joinRequest: shapeHeard(incoming, at: change.receivedAt)
            case .directMessage: metrics.count(.realtimeOtherChanges)
            case .malformed: metrics.count(.malformedRows)
            case .notMine: metrics.count(.realtimeOtherChanges)
            }
        case .heartbeat(let roundTrip):
            lastHeard = context.clock.wallNow()
            spendHeartbeat()
            metrics.record(.realtimeHeartbeat, seconds: roundTrip)
        case .broadcast, .presence, .pushReply:
            shapeEvent(event)
        }
    }

    /// Joins again after the server refused or closed the channel: with a fresh
    /// token when this one is (nearly) expired, after a second so a refusing
    /// server is not hammered.
    func rejoin(_ topic: String) async {
        guard life.isReceiving else { return }
        if account.session.expiresAt - refreshMargin <= context.clock.wallNow() { await refresh() }
        context.scheduler.at(context.clock.now() + 1) { [weak self] _ in await self?.joinAgain(topic) }
    }

    func joinAgain(_ topic: String) {
        guard let realtime, !isGone else { return }
        metrics.count(.realtimeRejoins)
        guard let subscription = channels.first(where: { $0.topic == topic }) else { return }
        realtime.join(topic, bindings: subscription.bindings, options: subscription.options)
    }

    /// One update for this device, from Realtime or a catch-up (greenbox-prd.md §4.4, "To receive locations").
    func receive(_ incoming: IncomingUpdate, backfilled: Bool = false) {
        let clock = context.clock
        let rowID = incoming.id
        let created = incoming.createdAt
        if let rowID, let created { shapeReceivedRow(rowID, createdAt: created) }
        guard let sender = friendIndex[incoming.sender] else {
            metrics.count(.receivedFromStrangers)
            return
        }
        let started = clock.now()
        var update: LocationPayload
        do {
            update = try locationApp.open(incoming, with: account.keys)
        } catch {
            // A row that arrives twice (Realtime, then a backfill) fails once.
            guard firstFailure(ofRow: rowID) else {
                metrics.count(.duplicate)
                duplicates += 1
                return
            }
            metrics.count(.decryptFailures)
            metrics.count(.decryptFailures(reason: error.reason))
            undecryptableAfterMigration(from: sender)
            ledger.decryptFailures[sender, default: 0] += 1
            return
        }
        let opening = clock.now() - started
        // A hostile device's probe, not a friend's update: counted apart, before anything a friend's update counts for.
        if ProbeTraffic.isProbe(update) {
            metrics.count(.probeRowsReceived)
            return
        }
        metrics.record(locationApp.encrypts ? .open : .decode, seconds: opening)
        spendCPU(seconds: opening)
        if update.seq == nil {
            // The app's payload carries no seq (Green Box `payload: prd`): what the sender sealed for this device, found by its plaintext.
            let has = ledger.received[sender] ?? []
            guard let sent = context.sentUpdates.find(sender: Int(sender), recipient: index, update, has: { has.contains($0) }) else {
                metrics.count(.receivedUnmatched)
                return
            }
            update.seq = sent.seq
            update.sentNanos = sent.sentNanos
        }
        restoredAfterMigration(from: sender)
        guard let seq = update.seq else {
            metrics.count(.receivedWithoutSeq)
            return
        }
        guard ledger.received[sender, default: []].insert(seq).inserted else {
            duplicates += 1
            metrics.count(.duplicate)
            return
        }
        // End to end: the intended send time to decrypted here.
        let decrypted = clock.wallNow()
        if let sent = update.sentNanos { metrics.record(.e2eLatency, seconds: decrypted - Double(sent) / 1e9) }
        // Older than the retention policy allows (window + purge interval + grace, from the row's creation,
        // else from when it was sent), the row should not have existed to be read: lost, whatever it shows.
        let born = created ?? update.sentNanos.map { Double($0) / 1e9 } ?? update.ts
        if decrypted - born > context.options.retentionLimit {
            ledger.expired[sender, default: []].insert(seq)
            metrics.count(.receivedAfterRetention)
            return
        }
        if backfilled { ledger.backfilled[sender, default: []].insert(seq) }
        // PRD §4.4 d: an update too old, older than the one shown, or from the future, is not shown.
        let freshness = Freshness.judge(ts: update.ts, now: decrypted, shown: shown[sender]?.ts, maxAge: context.options.staleAfter,
                                        maxSkew: context.options.futureSkew)
        if freshness != .show {
            ledger.stale[sender, default: []].insert(seq)
            metrics.count(.staleRejected)
            if freshness == .future { metrics.count(.futureRejected) }
            return
        }
        let dot = update.acc <= context.options.dotAccuracy
        shown[sender] = Shown(lat: update.lat, lon: update.lon, ts: update.ts, dot: dot)
        showOnShapeMap(sender, update)
        metrics.count(dot ? .renderDot : .renderCircle)
        metrics.count(.received)
        context.tally.received(by: index)
        let sent = update.sentNanos.map { Double($0) / 1e9 }
        context.map.received(by: index, from: Int(sender), sent: sent ?? update.ts, lat: update.lat, lon: update.lon, acc: update.acc,
                             latency: sent.map { decrypted - $0 })
        if update.reduced { metrics.count(.reducedAccuracyReceived) }
        if !pairing.awaitingFirstUpdate.isEmpty { firstUpdate(from: sender) }
    }

    /// The catch-up after a comeback is done: the live changes that came meanwhile, in their order
    /// (those the catch-up already brought are duplicates and dropped by `seq`).
    func releaseHeldLive() {
        held.catchingUp = false
        let updates = held.updates
        held.updates = []
        for update in updates { receive(update) }
    }

}

/// Live updates held back after a comeback until its catch-up is done, to be shown after the older ones
/// the catch-up brings.
struct HeldLive: Sendable {
    var catchingUp = false
    var updates: [IncomingUpdate] = []
}

/// PRD §4.4 step d, as a receiving phone applies it before it shows an update: not older than `maxAge`, not older than
/// the update it shows of that friend, and not timestamped more than `maxSkew` ahead of its own clock (one from the
/// future would stay on the map and make every real update after it look older).
enum Freshness: Equatable {
    case show, stale, future

    static func judge(ts: Double, now: Double, shown: Double?, maxAge: Double, maxSkew: Double) -> Freshness {
        if ts - now > maxSkew { return .future }
        if now - ts > maxAge || (shown.map { ts < $0 } ?? false) { return .stale }
        return .show
    }
}
