import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// The pairwise shape's tick (greenbox-prd.md §4.4, "To send a location"): one update fuzzed for and
/// sealed to each active friend, sent as the app sends a tick (Green Box: one bulk insert), queued in
/// the outbox behind an earlier one still in flight or waiting (`VirtualDevice+Outbox`).
extension VirtualDevice {
    func shareWithEachFriend(_ measured: Measured, intended: Double) async {
        let clock = context.clock
        let options = context.options
        if keysDue(at: clock.now()) { await readFriendKeys() }
        let active = friends.filter(\.sharedWith)
        guard !active.isEmpty, life.sharing(at: intended) != nil else { return }
        seq += 1
        let tick = seq
        let wall = clock.wall(intended)
        let online = context.presence.areOnline(active.map(\.index))
        var outgoing: [OutgoingUpdate] = []
        outgoing.reserveCapacity(active.count)
        var expected: [Int32] = []
        var remote: [Int32] = []
        var offline = 0
        // The battery level, for an app whose plaintext carries it (the others' leave it out).
        let level = pairwiseApp.carriesBattery ? batteryLevel(at: clock.now()) : nil
        for (i, friend) in active.enumerated() {
            let rule: PrivacyFuzz = friend.iShare == "general" ? profile.general : .precise
            context.map.shares(index, with: friend.index, as: rule)
            let seen = rule.apply(to: measured.position, accuracy: measured.accuracy, using: &rng)
            let sentNanos = Int64(wall * 1e9)
            var update = LocationPayload(lat: (seen.position.lat * 1e7).rounded() / 1e7, lon: (seen.position.lon * 1e7).rounded() / 1e7,
                                         ts: (wall * 1000).rounded() / 1000, acc: (seen.accuracy * 10).rounded() / 10, seq: tick, sentNanos: sentNanos)
            update.battery = level
            let payload = pairwiseApp.plaintext(of: update)
            // A payload without Convoy's seq: the recipient finds its send time by what it decrypts.
            if payload.seq == nil { context.sentUpdates.record(sender: index, recipient: friend.index, payload, seq: tick, sentNanos: sentNanos) }
            guard let key = friend.publicKey, let sealed = sealTimed(payload, to: key) else { continue }
            outgoing.append(OutgoingUpdate(recipient: friend.userID, body: sealed))
            addressee(friend.index, online: online[i], expected: &expected, remote: &remote, offline: &offline)
        }
        guard !outgoing.isEmpty else { return }
        lastShare = (intended, measured.position)
        let entry = recordTick(tick, expected: expected, remote: remote, offline: offline, wall: wall)
        let retrying = options.retry.mode == .retry
        if retrying, pairwise.posting || !pairwise.outbox.isEmpty {
            // An earlier update is in flight or waits to be posted again: this one goes behind it, so that
            // friends get them in order (an older one after a newer is not shown: PRD §4.4 d).
            enqueue(tick: entry, updates: outgoing, wall: wall, failed: nil)
            return
        }
        let started = clock.now()
        var posted = Posted(requests: 1, bytes: 0)
        pairwise.posting = retrying
        defer {
            pairwise.posting = false
            if retrying, !pairwise.flushPending, !pairwise.outbox.isEmpty {
                // Updates that queued behind this one while it was in flight.
                pairwise.flushPending = true
                Task { [weak self] in await self?.flush() }
            }
        }
        do {
            posted = try await pairwiseApp.send(outgoing, from: account.session, via: http)
            metrics.record(.post, seconds: clock.now() - started)
        } catch {
            // Failed round trips (a timeout's included) are their own histogram: `post` stays the successful ones.
            metrics.record(.postFailed, seconds: clock.now() - started)
            let reason = countFailure(error, operation: "share")
            posted.bytes = Self.estimatedBody(outgoing)
            if retrying, RetryPolicy.isRetryable(status: error.status) {
                enqueue(tick: entry, updates: outgoing, wall: wall, failed: reason)
            } else {
                ledger.sent[entry].failure = reason
                context.health.insertFailed(reason, queued: false)
            }
        }
        spendHTTP(body: posted.bytes, requests: posted.requests, since: started)
        metrics.count(.httpRequests, by: posted.requests)
    }
}
