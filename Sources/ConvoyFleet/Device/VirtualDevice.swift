import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
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
    private var lastRowID: Int64 = 0
    private var subscribed = false
    private var backfilling = false
    private var refreshing = false
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
    public func arrive(at intended: Double) {
        guard case .waiting = life else { return }
        life = .online(since: intended)
        let options = context.options
        let client = RealtimeClient(url: context.target.realtimeURL, accessToken: account.session.accessToken, logger: context.logger,
                                    heartbeatWait: { try await Task.sleep(for: .seconds(options.heartbeat)) })
        client.join(topic, bindings: [.init(event: "INSERT", table: "encrypted_locations", filter: "recipient_id=eq.\(account.userID)")])
        realtime = client
        tasks.append(Task { await client.run() })
        tasks.append(Task { [weak self] in
            for await event in client.events { await self?.handle(event) }
        })
        scheduleRefresh()
        let first = intended + rng.uniform(0, profile.cadence.upperBound)
        context.scheduler.at(first) { [weak self] t in await self?.share(intended: t) }
    }

    /// Stops sharing and counts as offline; keeps receiving until `disconnect`.
    public func leave() {
        if case .online = life { life = .leaving }
        context.presence.set(index, online: false)
    }

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
        case .subscribed:
            if !subscribed {
                subscribed = true
                if case .online(let since) = life {
                    metrics.record("subscribe", seconds: context.clock.now() - since)
                    context.presence.set(index, online: true)
                }
            } else {
                // Back after a reconnect or a rejoin: fetch what Realtime could not deliver meanwhile.
                await backfill()
            }
        case .joinFailed(_, let reason):
            metrics.count("realtime_join_failures")
            context.logger.debug("device \(index): join refused: \(reason)")
        case .channelClosed(let topic, let reason):
            metrics.count("realtime_channel_closed")
            context.logger.debug("device \(index): channel closed: \(reason)")
            if case .gone = life { return }
            if account.session.expiresAt <= context.clock.wallNow() + 1 { await refresh() }
            realtime?.join(topic, bindings: [.init(event: "INSERT", table: "encrypted_locations", filter: "recipient_id=eq.\(account.userID)")])
        case .change(_, let change):
            receive(change.record, commitTimestamp: change.commitTimestamp)
        case .heartbeat(let roundTrip):
            metrics.record("realtime_heartbeat", seconds: roundTrip)
        }
    }

    /// One `encrypted_locations` row for this device (PRD §4.4, "To receive locations").
    func receive(_ record: [String: String], commitTimestamp: String?) {
        let clock = context.clock
        let arrived = clock.wallNow()
        guard let senderID = record["sender_id"], let payload = record["payload"] else {
            metrics.count("malformed_rows")
            return
        }
        if let id = record["id"].flatMap({ Int64($0) }) { lastRowID = max(lastRowID, id) }
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
        if let sent = update.sentNanos { metrics.record("e2e_latency", seconds: arrived - Double(sent) / 1e9) }
        // PRD §4.4 d: an update too old, or older than the one shown, is not shown.
        if arrived - update.ts > context.options.staleAfter || (shown[sender].map { update.ts < $0.ts } ?? false) {
            ledger.stale[sender, default: []].insert(seq)
            metrics.count("stale_rejected")
            return
        }
        let dot = update.acc <= context.options.dotAccuracy
        shown[sender] = Shown(lat: update.lat, lon: update.lon, ts: update.ts, dot: dot)
        metrics.count(dot ? "render.dot" : "render.circle")
        metrics.count("received")
    }

    /// Fetches this device's rows newer than the last one seen, page by page (after a reconnect).
    func backfill() async {
        guard !backfilling else { return }
        backfilling = true
        defer { backfilling = false }
        metrics.count("backfills")
        var after = lastRowID
        let page = context.options.backfillPage
        while !isGone {
            let rows: [[String: Any]]
            do {
                rows = try await rest.select("encrypted_locations",
                                             query: "select=id,sender_id,payload&recipient_id=eq.\(account.userID)&id=gt.\(after)&order=id.asc&limit=\(page)",
                                             token: account.session.accessToken)
                metrics.count("http_requests")
            } catch {
                metrics.count("http_requests")
                _ = countFailure(error)
                return
            }
            for row in rows {
                var record: [String: String] = [:]
                if let id = row["id"] as? Int { record["id"] = String(id); after = max(after, Int64(id)) }
                record["sender_id"] = row["sender_id"] as? String
                record["payload"] = row["payload"] as? String
                metrics.count("backfilled")
                receive(record, commitTimestamp: nil)
            }
            if rows.count < page { return }
        }
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
        account = DeviceAccount(index: account.index, email: account.email, password: account.password, session: account.session, keys: keys)
        migratedAt = intended
        metrics.count("migration_reinstalls")
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
        for friend in friends where friend.active {
            awaitingNewKey.insert(Int32(friend.index))
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

    /// Refreshes the access token `refreshMargin` before it expires (at most a fifth of its lifetime before).
    private func scheduleRefresh() {
        let clock = context.clock
        let expires = account.session.expiresAt
        let lifetime = max(0, expires - clock.wallNow())
        let at = clock.monotonic(ofWall: expires - min(context.options.refreshMargin, lifetime / 5))
        context.scheduler.at(at) { [weak self] _ in await self?.refresh() }
    }

    /// A new session from the refresh token (which rotates), pushed to the Realtime channel.
    func refresh() async {
        if case .gone = life { return }
        guard !refreshing else { return }
        refreshing = true
        defer { refreshing = false }
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
            context.scheduler.at(context.clock.now() + 5) { [weak self] _ in await self?.refresh() }
        }
    }

    /// The account as it is now (its session rotates), for the roster.
    var currentAccount: DeviceAccount { account }
}
