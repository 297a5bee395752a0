import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation

/// Sharing (greenbox-prd.md §4.3–4.4, "To send a location"): a tick per cadence, one sealed row per active friend, one bulk insert.
extension VirtualDevice {
    /// One sharing tick at its intended time (PRD §4.4, "To send a location").
    func share(intended: Double) async {
        guard case .online(let since) = life else { return }
        let clock = context.clock
        let options = context.options
        let next = intended + rng.uniform(profile.cadence.lowerBound, profile.cadence.upperBound)
        if options.workload == .open {
            context.scheduler.at(next) { [weak self] t in await self?.share(intended: t) }
        }
        defer {
            if options.workload == .closed {
                context.scheduler.at(max(next, clock.now())) { [weak self] t in await self?.share(intended: t) }
            }
        }
        let measured: (position: GeoPoint, accuracy: Double)
        if let feed = profile.live {
            // A live receiver: its newest fix, as it is.
            guard let fix = feed.current(now: clock.wall(intended)) else {
                metrics.count("live_no_fix")
                return
            }
            metrics.count("live_shared")
            measured = (fix.position, fix.accuracy)
        } else {
            let t = intended - since
            let fix = replayer.fix(at: t)
            guard let noisy = noise.apply(to: fix.position, at: t, hdop: fix.hdop) else {
                metrics.count("gps_dropouts")
                return
            }
            measured = (noisy.position, noisy.accuracy)
        }
        if profile.background, let last = lastShare,
           intended - last.time < options.significantInterval || measured.position.distance(to: last.position) < options.significantDistance {
            metrics.count("background_skipped")
            return
        }
        let active = friends.filter(\.active)
        guard !active.isEmpty else { return }
        seq += 1
        let tick = seq
        let wall = clock.wall(intended)
        let online = context.presence.areOnline(active.map(\.index))
        var body = "["
        var expected: [Int32] = []
        var remote: [Int32] = []
        var offline = 0
        for (i, friend) in active.enumerated() {
            let rule: PrivacyFuzz = friend.iShare == "general" ? .general : .precise
            let seen = rule.apply(to: measured.position, accuracy: measured.accuracy, using: &rng)
            let payload = LocationPayload(lat: (seen.position.lat * 1e7).rounded() / 1e7, lon: (seen.position.lon * 1e7).rounded() / 1e7,
                                          ts: (wall * 1000).rounded() / 1000, acc: (seen.accuracy * 10).rounded() / 10,
                                          seq: tick, sentNanos: Int64(wall * 1e9))
            let started = clock.now()
            let sealed: String
            do {
                sealed = try GreenBoxEnvelope.seal(payload, to: friend.publicKey)
            } catch {
                metrics.count("seal_failures")
                continue
            }
            let sealing = clock.now() - started
            metrics.record("seal", seconds: sealing)
            spendCPU(seconds: sealing)
            if !expected.isEmpty || !remote.isEmpty || offline > 0 { body += "," }
            body += "{\"sender_id\":\"\(account.userID)\",\"recipient_id\":\"\(friend.userID)\",\"payload\":\"\(sealed)\"}"
            if let shard = context.shard, !shard.owns(friend.index) {
                remote.append(Int32(friend.index))
            } else if online[i] {
                expected.append(Int32(friend.index))
            } else {
                offline += 1
            }
        }
        body += "]"
        guard !expected.isEmpty || !remote.isEmpty || offline > 0 else { return }
        lastShare = (intended, measured.position)
        let started = clock.now()
        var failure: String?
        do {
            try await rest.insert("encrypted_locations", json: Array(body.utf8), token: account.session.accessToken)
            metrics.record("post", seconds: clock.now() - started)
        } catch {
            // Failed round trips (a timeout's included) are their own histogram: `post` stays the successful ones.
            metrics.record("post_failed", seconds: clock.now() - started)
            failure = countFailure(error)
        }
        spendHTTP(body: body.utf8.count)
        metrics.count("http_requests")
        metrics.count("updates")
        metrics.count("sent", by: expected.count)
        metrics.count("sent_offline", by: offline)
        if !remote.isEmpty { metrics.count("sent_other_shards", by: remote.count) }
        sentOffline += offline
        ledger.sent.append(.init(seq: tick, recipients: expected, failure: failure, wall: wall, remote: remote))
    }

    /// Counts a failed request; returns the reason its updates were lost.
    func countFailure(_ error: SupabaseError) -> String {
        metrics.count("http_errors")
        if let status = error.status {
            metrics.count("http_errors.\(status)")
            return "http_\(status)"
        }
        if case .wire(let kind) = error.kind {
            let name = "\(kind)"
            metrics.count("transport_errors.\(name)")
            return name
        }
        return "unexpected_response"
    }
}
