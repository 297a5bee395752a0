import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Logging

/// Receiving (greenbox-prd.md §4.4, "To receive locations"): Realtime events, decryption and validation, rejoins and backfill.
extension VirtualDevice {
    func handle(_ event: RealtimeClient.Event) async {
        switch event {
        case .connected(let attempt):
            if attempt > 0 { metrics.count("reconnects") }
        case .disconnected:
            metrics.count("disconnects")
            if lostAt == nil { lostAt = context.clock.wallNow() }
        case .subscribed:
            if !subscribed {
                subscribed = true
                if case .online(let since) = life {
                    metrics.record("subscribe", seconds: context.clock.now() - since)
                    context.presence.set(index, online: true)
                    ledger.online.append(.init(from: context.clock.wallNow()))
                }
            } else if let since = lostAt {
                // Back after a reconnect or a rejoin: fetch what Realtime could not deliver meanwhile,
                // in a task of its own so that live changes are not held up behind it.
                lostAt = nil
                Task { [weak self] in await self?.backfill(since: since) }
            }
        case .joinFailed(let topic, let reason):
            metrics.count("realtime_join_failures")
            context.logger.debug("device \(index): join refused: \(reason)")
            await rejoin(topic)
        case .channelClosed(let topic, let reason):
            metrics.count("realtime_channel_closed")
            context.logger.debug("device \(index): channel closed: \(reason)")
            if lostAt == nil { lostAt = context.clock.wallNow() }
            await rejoin(topic)
        case .change(_, let change):
            spendReceived(bytes: change.bytes)
            receive(change.record, commitTimestamp: change.commitTimestamp, arrived: change.receivedAt)
        case .heartbeat(let roundTrip):
            spendHeartbeat()
            metrics.record("realtime_heartbeat", seconds: roundTrip)
        }
    }

    /// Joins again after the server refused or closed the channel: with a fresh
    /// token when this one is (nearly) expired, after a second so a refusing
    /// server is not hammered.
    func rejoin(_ topic: String) async {
        switch life {
        case .online, .leaving: break
        case .waiting, .gone: return
        }
        if account.session.expiresAt - refreshMargin <= context.clock.wallNow() { await refresh() }
        context.scheduler.at(context.clock.now() + 1) { [weak self] _ in await self?.joinAgain(topic) }
    }

    func joinAgain(_ topic: String) {
        guard let realtime, !isGone else { return }
        metrics.count("realtime_rejoins")
        realtime.join(topic, bindings: [binding])
    }

    /// One `encrypted_locations` row for this device (PRD §4.4, "To receive
    /// locations"). `arrived`: when it came off the socket (Unix seconds).
    func receive(_ record: [String: String], commitTimestamp: String?, arrived: Double, backfilled: Bool = false) {
        let clock = context.clock
        guard let senderID = record["sender_id"], let payload = record["payload"] else {
            metrics.count("malformed_rows")
            return
        }
        let rowID = record["id"].flatMap { Int64($0) }
        let created = record["created_at"].flatMap(CommitTimestamp.parse)
        if let rowID, let created { remember(row: rowID, createdAt: created) }
        if let text = commitTimestamp, let committed = CommitTimestamp.parse(text) {
            metrics.record("commit_to_receipt", seconds: arrived - committed)
        }
        guard let sender = friendIndex[senderID] else {
            metrics.count("received_from_strangers")
            return
        }
        let started = clock.now()
        let update: LocationPayload
        do {
            update = try GreenBoxEnvelope.open(payload, with: account.keys)
        } catch {
            // A row that arrives twice (Realtime, then a backfill) fails once.
            guard rowID.map({ undecryptableRows.insert($0).inserted }) ?? true else {
                metrics.count("duplicate")
                duplicates += 1
                return
            }
            metrics.count("decrypt_failures")
            metrics.count("decrypt_failures.\(error.reason)")
            if awaitingNewKey.contains(sender) { metrics.count("migration_undecryptable") }
            ledger.decryptFailures[sender, default: 0] += 1
            return
        }
        let opening = clock.now() - started
        // A hostile device's probe, not a friend's update: counted apart, before anything a friend's update counts for.
        if let seq = update.seq, seq >= ProbeTraffic.seqBase {
            metrics.count("probe_rows_received")
            return
        }
        metrics.record("open", seconds: opening)
        spendCPU(seconds: opening)
        if awaitingNewKey.remove(sender) != nil, let migratedAt {
            metrics.record("migration_restore", seconds: clock.now() - migratedAt)
        }
        guard let seq = update.seq else {
            metrics.count("received_without_seq")
            return
        }
        guard ledger.received[sender, default: []].insert(seq).inserted else {
            duplicates += 1
            metrics.count("duplicate")
            return
        }
        // End to end: the intended send time to decrypted here.
        let decrypted = clock.wallNow()
        if let sent = update.sentNanos { metrics.record("e2e_latency", seconds: decrypted - Double(sent) / 1e9) }
        // Older than the retention policy allows (window + purge interval + grace, from the row's creation,
        // else from when it was sent), the row should not have existed to be read: lost, whatever it shows.
        let born = created ?? update.sentNanos.map { Double($0) / 1e9 } ?? update.ts
        if decrypted - born > context.options.retentionLimit {
            ledger.expired[sender, default: []].insert(seq)
            metrics.count("received_after_retention")
            return
        }
        if backfilled { ledger.backfilled[sender, default: []].insert(seq) }
        // PRD §4.4 d: an update too old, or older than the one shown, is not shown.
        if decrypted - update.ts > context.options.staleAfter || (shown[sender].map { update.ts < $0.ts } ?? false) {
            ledger.stale[sender, default: []].insert(seq)
            metrics.count("stale_rejected")
            return
        }
        let dot = update.acc <= context.options.dotAccuracy
        shown[sender] = Shown(lat: update.lat, lon: update.lon, ts: update.ts, dot: dot)
        metrics.count(dot ? "render.dot" : "render.circle")
        metrics.count("received")
    }

    /// Fetches this device's rows created since `since` (Unix seconds, minus
    /// a lookback for clock skew and commit order), page by page, after a
    /// reconnect. Rows it already has are duplicates and are dropped by `seq`.
    func backfill(since: Double) async {
        guard !backfilling else { return }
        backfilling = true
        defer { backfilling = false }
        metrics.count("backfills")
        let from = Self.timestamp(since - context.options.backfillLookback)
        var after: Int64 = 0
        let page = context.options.backfillPage
        while !isGone {
            let rows: [[String: Any]]
            do {
                rows = try await rest.select("encrypted_locations",
                                             query: "select=id,sender_id,payload,created_at&recipient_id=eq.\(account.userID)&created_at=gte.\(from)&id=gt.\(after)&order=id.asc&limit=\(page)",
                                             token: account.session.accessToken)
                metrics.count("http_requests")
            } catch {
                metrics.count("http_requests")
                spendHTTP(body: 0)
                _ = countFailure(error)
                return
            }
            spendHTTP(body: 0, response: rows.reduce(0) { $0 + (($1["payload"] as? String)?.utf8.count ?? 0) + 120 })
            let arrived = context.clock.wallNow()
            let before = after
            for row in rows {
                var record: [String: String] = [:]
                if let id = (row["id"] as? NSNumber)?.int64Value {
                    record["id"] = String(id)
                    after = max(after, id)
                }
                record["sender_id"] = row["sender_id"] as? String
                record["payload"] = row["payload"] as? String
                record["created_at"] = row["created_at"] as? String
                metrics.count("backfilled")
                receive(record, commitTimestamp: nil, arrived: arrived, backfilled: true)
            }
            // A short page is the last; a page whose ids did not move the cursor would repeat.
            if rows.count < page || after == before { return }
        }
    }

    /// Keeps the last few rows received (id, server creation time) for the retention checker's "deleted early" check.
    func remember(row: Int64, createdAt: Double) {
        if recentRows.count >= Self.recentRowsKept { recentRows.removeFirst() }
        recentRows.append((row, createdAt))
    }

    static let recentRowsKept = 8

    /// `2026-01-05T08:00:00.123456Z`, for a `created_at` filter.
    static func timestamp(_ unix: Double) -> String {
        let seconds = unix.rounded(.down)
        let micros = Int((unix - seconds) * 1e6)
        let base = Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle()).dropLast()
        return "\(base).\(String(format: "%06d", micros))Z"
    }
}
