import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Logging

/// One virtual Green Box phone after onboarding (greenbox-prd.md §4.3–4.4):
/// it shares its position with each active friend on its cadence (or, in the
/// background, on significant change), sealed to each friend's key in one
/// bulk insert, and receives its friends' updates over its own Realtime
/// connection, decrypting and validating each. Its lifecycle is the private
/// `Life` state; its sends and receipts go to its `DeviceLedger`.
public actor VirtualDevice {
    /// How this device moves and shares.
    public struct Profile: Sendable {
        public var cadence: ClosedRange<Double>
        public var background: Bool
        public var replayer: Replayer
        public var accuracy: AccuracyModel
        public var seed: UInt64

        public init(cadence: ClosedRange<Double>, background: Bool, replayer: Replayer, accuracy: AccuracyModel, seed: UInt64) {
            (self.cadence, self.background, self.replayer, self.accuracy, self.seed) = (cadence, background, replayer, accuracy, seed)
        }
    }

    /// What a friend last showed on this device's map.
    struct Shown: Sendable {
        var lat: Double
        var lon: Double
        var ts: Double
        var dot: Bool
    }

    private enum Life {
        /// Onboarded, not yet arrived.
        case waiting
        /// Arrived: sharing, and receiving once subscribed.
        case online(since: Double)
        /// Stopped sharing, still receiving what is in flight.
        case leaving
        case gone
    }

    public nonisolated let index: Int
    private let context: FleetContext
    private let profile: Profile
    private var account: DeviceAccount
    private var friends: [Friend]
    private var friendIndex: [String: Int32]
    private let rest: SupabaseREST
    private var replayer: Replayer
    private var noise: NoiseGenerator
    private var rng: SeededGenerator
    private var life = Life.waiting
    private var seq: UInt64 = 0
    private var lastShare: (time: Double, position: GeoPoint)?
    private var shown: [Int32: Shown] = [:]
    /// Unix time the connection or channel last went down (the backfill looks back from there).
    private var lostAt: Double?
    private var subscribed = false
    /// It connected to Realtime and asked for its channel (whether or not it got it).
    private var joined = false
    private var backfilling = false
    /// The refresh in flight, which every caller waits for; and the generation of the scheduled one.
    private var refreshing: Task<Void, Never>?
    private var refreshGeneration = 0
    /// Rows that did not open, by id: each counted once however often it arrives.
    private var undecryptableRows: Set<Int64> = []
    private var realtime: RealtimeClient?
    /// When this device reinstalled (PRD §4.1), and the friends whose updates do not open yet.
    private var migratedAt: Double?
    private var awaitingNewKey: Set<Int32> = []
    private var tasks: [Task<Void, Never>] = []
    var ledger = DeviceLedger()
    private(set) var duplicates = 0
    private(set) var sentOffline = 0

    public init(account: DeviceAccount, friends: [Friend], profile: Profile, connection: HTTPConnection?, context: FleetContext) throws {
        index = account.index
        self.account = account
        self.friends = friends
        friendIndex = Dictionary(friends.map { ($0.userID, Int32($0.index)) }, uniquingKeysWith: { a, _ in a })
        self.profile = profile
        self.context = context
        rest = SupabaseREST(SupabaseHTTP(engine: context.engine, target: context.target, connection: connection))
        replayer = profile.replayer
        noise = try NoiseGenerator(model: profile.accuracy, seed: profile.seed)
        rng = SeededGenerator(seed: profile.seed, stream: 0xDE71CE)
    }

    private var topic: String { "realtime:greenbox:\(account.userID)" }
    private var metrics: Metrics { context.metrics }

    // MARK: - Lifecycle

    /// Comes online at `intended`: connects to Realtime, subscribes to its
    /// own rows, and starts sharing at a random phase of its cadence.
    public func arrive(at intended: Double) async {
        guard case .waiting = life else { return }
        life = .online(since: intended)
        // A session from a long onboarding may be (nearly) expired: the join would be refused.
        if account.session.expiresAt - refreshMargin <= context.clock.wallNow() { await refresh() }
        guard case .online = life else { return }
        let options = context.options
        let clock = context.clock
        let client = RealtimeClient(url: context.target.realtimeURL, accessToken: account.session.accessToken, logger: context.logger,
                                    heartbeatWait: { try await Task.sleep(for: .seconds(options.heartbeat)) },
                                    now: { clock.wallNow() })
        client.join(topic, bindings: [binding])
        joined = true
        realtime = client
        tasks.append(Task { await client.run() })
        tasks.append(Task { [weak self] in
            for await event in client.events { await self?.handle(event) }
        })
        scheduleRefresh()
        let first = intended + rng.uniform(0, profile.cadence.upperBound)
        context.scheduler.at(first) { [weak self] t in await self?.share(intended: t) }
    }

    private var binding: RealtimeClient.Binding {
        .init(event: "INSERT", table: "encrypted_locations", filter: "recipient_id=eq.\(account.userID)")
    }

    /// Stops sharing and counts as offline; keeps receiving until `disconnect`.
    /// A device that has not arrived yet never will.
    public func leave() {
        switch life {
        case .online: life = .leaving
        case .waiting: life = .gone
        case .leaving, .gone: break
        }
        context.presence.set(index, online: false)
    }

    /// Whether it arrived and never got its Realtime subscription.
    var neverSubscribed: Bool { joined && !subscribed }

    /// Closes the Realtime connection; nothing more is sent or received.
    public func disconnect() {
        leave()
        life = .gone
        for t in tasks { t.cancel() }
        tasks = []
        realtime = nil
    }

    var isGone: Bool {
        if case .gone = life { return true }
        return false
    }

    // MARK: - Sharing

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
        let t = intended - since
        let fix = replayer.fix(at: t)
        guard let measured = noise.apply(to: fix.position, at: t, hdop: fix.hdop) else {
            metrics.count("gps_dropouts")
            return
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
            metrics.record("seal", seconds: clock.now() - started)
            if !expected.isEmpty || offline > 0 { body += "," }
            body += "{\"sender_id\":\"\(account.userID)\",\"recipient_id\":\"\(friend.userID)\",\"payload\":\"\(sealed)\"}"
            if online[i] { expected.append(Int32(friend.index)) } else { offline += 1 }
        }
        body += "]"
        guard !expected.isEmpty || offline > 0 else { return }
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
        metrics.count("http_requests")
        metrics.count("updates")
        metrics.count("sent", by: expected.count)
        metrics.count("sent_offline", by: offline)
        sentOffline += offline
        ledger.sent.append(.init(seq: tick, recipients: expected, failure: failure))
    }

    /// Counts a failed request; returns the reason its updates were lost.
    private func countFailure(_ error: SupabaseError) -> String {
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

    // MARK: - Receiving

    private func handle(_ event: RealtimeClient.Event) async {
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
            receive(change.record, commitTimestamp: change.commitTimestamp, arrived: change.receivedAt)
        case .heartbeat(let roundTrip):
            metrics.record("realtime_heartbeat", seconds: roundTrip)
        }
    }

    /// Joins again after the server refused or closed the channel: with a fresh
    /// token when this one is (nearly) expired, after a second so a refusing
    /// server is not hammered.
    private func rejoin(_ topic: String) async {
        switch life {
        case .online, .leaving: break
        case .waiting, .gone: return
        }
        if account.session.expiresAt - refreshMargin <= context.clock.wallNow() { await refresh() }
        context.scheduler.at(context.clock.now() + 1) { [weak self] _ in await self?.joinAgain(topic) }
    }

    private func joinAgain(_ topic: String) {
        guard let realtime, !isGone else { return }
        metrics.count("realtime_rejoins")
        realtime.join(topic, bindings: [binding])
    }

    /// One `encrypted_locations` row for this device (PRD §4.4, "To receive
    /// locations"). `arrived`: when it came off the socket (Unix seconds).
    func receive(_ record: [String: String], commitTimestamp: String?, arrived: Double) {
        let clock = context.clock
        guard let senderID = record["sender_id"], let payload = record["payload"] else {
            metrics.count("malformed_rows")
            return
        }
        let rowID = record["id"].flatMap { Int64($0) }
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
        metrics.record("open", seconds: clock.now() - started)
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
                                             query: "select=id,sender_id,payload&recipient_id=eq.\(account.userID)&created_at=gte.\(from)&id=gt.\(after)&order=id.asc&limit=\(page)",
                                             token: account.session.accessToken)
                metrics.count("http_requests")
            } catch {
                metrics.count("http_requests")
                _ = countFailure(error)
                return
            }
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
                metrics.count("backfilled")
                receive(record, commitTimestamp: nil, arrived: arrived)
            }
            // A short page is the last; a page whose ids did not move the cursor would repeat.
            if rows.count < page || after == before { return }
        }
    }

    /// `2026-01-05T08:00:00.123456Z`, for a `created_at` filter.
    static func timestamp(_ unix: Double) -> String {
        let seconds = unix.rounded(.down)
        let micros = Int((unix - seconds) * 1e6)
        let base = Date(timeIntervalSince1970: seconds).formatted(Date.ISO8601FormatStyle()).dropLast()
        return "\(base).\(String(format: "%06d", micros))Z"
    }

    // MARK: - Migration

    /// Reinstalls the app (PRD §4.1): a new key pair, published on the
    /// `users` row, and a new invite for each active friend. Returns the
    /// codes, by friend, for them to accept again.
    func reinstall(at intended: Double) async -> [(friend: Int, code: String)] {
        if case .gone = life { return [] }
        guard let keys = try? BoxKeyPair() else {
            metrics.count("migration_failures")
            return []
        }
        var retired = account.previousKeys
        retired.append(account.keys)
        account = DeviceAccount(index: account.index, email: account.email, password: account.password, session: account.session,
                                keys: keys, previousKeys: retired)
        migratedAt = intended
        metrics.count("migration_reinstalls")
        // From now on what friends seal to the old key does not open, until each accepts again.
        let active = friends.filter(\.active)
        for friend in active { awaitingNewKey.insert(Int32(friend.index)) }
        let token = account.session.accessToken
        let row = "{\"id\":\"\(account.userID)\",\"public_key\":\"\(keys.publicKey.base64)\"}"
        do {
            try await rest.upsert("users", json: Array(row.utf8), onConflict: "id", token: token)
            metrics.count("http_requests")
        } catch {
            metrics.count("http_requests")
            metrics.count("migration_failures")
            _ = countFailure(error)
            return []
        }
        var codes: [(friend: Int, code: String)] = []
        for friend in active {
            do {
                let invite = try await rest.rpc("create_invite", ["preference": friend.iShare], token: token)
                metrics.count("http_requests")
                if let code = (invite as? [String: Any])?["code"] as? String { codes.append((friend.index, code)) }
            } catch {
                metrics.count("http_requests")
                metrics.count("migration_failures")
                _ = countFailure(error)
            }
        }
        return codes
    }

    /// Accepts a reinstalled friend's new invite and switches to their new key.
    func reaccept(code: String, from inviter: Int) async {
        if case .gone = life { return }
        guard let i = friends.firstIndex(where: { $0.index == inviter }) else { return }
        let friend = friends[i]
        do {
            _ = try await rest.rpc("accept_invite", ["code": code, "preference": friend.iShare], token: account.session.accessToken)
            let rows = try await rest.select("users", query: "select=public_key&id=eq.\(friend.userID)", token: account.session.accessToken)
            metrics.count("http_requests", by: 2)
            guard let text = rows.first?["public_key"] as? String, let key = try? PublicKey(base64: text) else {
                metrics.count("migration_failures")
                return
            }
            friends[i] = Friend(index: friend.index, userID: friend.userID, publicKey: key, iShare: friend.iShare, active: true)
            metrics.count("migration_reaccepted")
        } catch {
            metrics.count("http_requests")
            metrics.count("migration_failures")
            _ = countFailure(error)
        }
    }

    // MARK: - Tokens

    /// How long before expiry a token is refreshed: `refreshMargin`, at most a fifth of its lifetime.
    private var refreshMargin: Double {
        let lifetime = max(0, account.session.expiresAt - context.clock.wallNow())
        return min(context.options.refreshMargin, lifetime / 5)
    }

    /// Schedules the next refresh; an earlier schedule (of an older session) lapses.
    private func scheduleRefresh(at time: Double? = nil) {
        refreshGeneration += 1
        let generation = refreshGeneration
        let at = time ?? context.clock.monotonic(ofWall: account.session.expiresAt - refreshMargin)
        context.scheduler.at(at) { [weak self] _ in await self?.scheduledRefresh(generation) }
    }

    private func scheduledRefresh(_ generation: Int) async {
        guard generation == refreshGeneration else { return }
        await refresh()
    }

    /// A new session from the refresh token (which rotates), pushed to the
    /// Realtime channel. Concurrent callers wait for the one refresh in flight.
    func refresh() async {
        if case .gone = life { return }
        if let running = refreshing {
            await running.value
            return
        }
        let task = Task { await self.performRefresh() }
        refreshing = task
        await task.value
        refreshing = nil
    }

    private func performRefresh() async {
        let started = context.clock.now()
        do {
            let session = try await SupabaseAuth(rest.http).refresh(account.session.refreshToken)
            metrics.count("http_requests")
            metrics.record("token_refresh", seconds: context.clock.now() - started)
            metrics.count("token_refreshes")
            account.session = session
            realtime?.setAccessToken(session.accessToken)
            scheduleRefresh()
        } catch {
            metrics.count("http_requests")
            metrics.count("token_refresh_failures")
            _ = countFailure(error)
            scheduleRefresh(at: context.clock.now() + 5)
        }
    }

    /// The account as it is now (its session rotates), for the roster.
    var currentAccount: DeviceAccount { account }
}
