import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyWire
import Foundation
import Logging

/// One virtual phone after onboarding: it shares its position with each
/// active friend on its cadence (or, in the background, on significant
/// change), sealed to each friend's key, and receives its friends' updates
/// over its own Realtime connection, decrypting and validating each (one file
/// per feature: `VirtualDevice+Sharing`, `+Receiving`, `+Migration`,
/// `+Tokens`). What it sends and subscribes to, and how, is its app's
/// (`context.app`, an `AppProfile`): the phone names no table, topic or RPC.
/// Its lifecycle is one state machine (`Lifecycle`); its sends and receipts go to its `DeviceLedger`.
public actor VirtualDevice {
    /// How this device moves and shares.
    public struct Profile: Sendable {
        public var cadence: ClosedRange<Double>
        public var background: Bool
        public var replayer: Replayer
        public var accuracy: AccuracyModel
        public var seed: UInt64
        /// The battery model's profile for its network; nil: not modelled.
        public var battery: BatteryProfile?
        /// How it runs the GPS in the foreground.
        public var locationMode: LocationMode
        /// Where its positions come from instead of its replayer (a live receiver); nil: replay.
        public var live: LiveFeed?
        /// In the background with only "When In Use" granted: it shares nothing.
        public var whenInUseOnly = false
        /// How it shares in the background (with "Always").
        public var backgroundMode: DeviceGroup.BackgroundMode = .significantChange
        /// When it reads its friends' keys, and for how long a read key is used (`cached`).
        public var keyLookup: DeviceGroup.KeyLookup = .once
        public var keyCacheTTL: Double = 300
        /// What its "General location" friends get.
        public var general: PrivacyFuzz = .general
        /// Its network's conditions, and the tunnel its connections take through them; nil: loopback as it is.
        public var link: NetworkLink?
        public var tunnel: TunnelProxy?
        /// Group apps: how often it posts a message to its group, seconds (nil: never).
        public var messageEvery: ClosedRange<Double>?
        /// Group apps with media: the photos and videos it sends to its group; mailbox apps: the photos it sends friends.
        public var media: [MediaPlan] = []
        /// Mailbox apps: how often it polls (nil: never: it does not open the app, what is sent to it waits), and how
        /// often it logs out and in again (nil: never).
        public var pollEvery: ClosedRange<Double>?
        public var reloginEvery: ClosedRange<Double>?

        public init(cadence: ClosedRange<Double>, background: Bool, replayer: Replayer, accuracy: AccuracyModel, seed: UInt64,
                    battery: BatteryProfile? = nil, locationMode: LocationMode = .highAccuracy, live: LiveFeed? = nil) {
            (self.cadence, self.background, self.replayer, self.accuracy, self.seed) = (cadence, background, replayer, accuracy, seed)
            (self.battery, self.locationMode, self.live) = (battery, locationMode, live)
        }

        /// Shares nothing at all: in the background without "Always".
        var sharesNothing: Bool { background && whenInUseOnly }
    }

    /// What a friend last showed on this device's map.
    struct Shown: Sendable {
        var lat: Double
        var lon: Double
        var ts: Double
        var dot: Bool
    }

    public nonisolated let index: Int
    let context: FleetContext
    let profile: Profile
    var account: DeviceAccount
    var friends: [Friend]
    var friendIndex: [String: Int32]
    /// Its way to the backend (its own connection when it has one).
    let http: SupabaseHTTP
    var replayer: Replayer
    var noise: NoiseGenerator
    var rng: SeededGenerator
    /// Waiting, online, leaving or gone, subscribed or not, and since when it lost Realtime (`VirtualDevice+Lifecycle`).
    var life = Lifecycle()
    var seq: UInt64 = 0
    /// Its `AppAction`s: how many times it made each, and their own draws (the location's stay as they were).
    var actionsMade: [Int: Int] = [:]
    var actionDraws: SeededGenerator
    var lastShare: (time: Double, position: GeoPoint)?
    var shown: [Int32: Shown] = [:]
    /// When it last heard from Realtime (a change read off the socket, a heartbeat's reply), wall clock.
    var lastHeard: Double?
    /// Realtime reconnections (for the battery report's groups).
    var reconnectCount = 0
    /// After a comeback, until its catch-up is done: live updates held back, to be shown after the older ones the catch-up brings.
    var held = HeldLive()
    /// The refresh in flight, its generation, and its last renewal after a refusal (`VirtualDevice+Tokens`).
    var renewal = SessionRenewal()
    var realtime: RealtimeClient?
    var tasks: [Task<Void, Never>] = []
    /// Pairing during the run, whatever the shape (`VirtualDevice+Pairing`).
    var pairing: PairingState
    /// Its app's shape's state, one of three (`Delivery/ShapeState`): a pairwise phone's catch-up of rows and ticks to post
    /// again; a group phone's place in its group, broadcasts, chat, media, archive and joins; a mailbox phone's messages
    /// shown and acknowledged. Only the shape's own room reads it.
    var shape: ShapeState
    var ledger = DeviceLedger()
    var duplicates = 0
    var sentOffline = 0
    /// The battery model (`VirtualDevice+Battery`).
    var battery = BatteryState()
    /// The draws for its retries' backoff (the pairwise outbox, a group's chat queue).
    var retryRNG: SeededGenerator
    /// Its own message count (group messages and direct messages alike).
    var messageSeq: UInt64 = 0

    public init(account: DeviceAccount, friends: [Friend], profile: Profile, connection: HTTPConnection?, context: FleetContext,
                pairing: DevicePairing? = nil, group: GroupRole? = nil) throws {
        index = account.index
        self.pairing = PairingState(plan: pairing)
        self.account = account
        self.friends = friends
        friendIndex = Dictionary(friends.map { ($0.userID, Int32($0.index)) }, uniquingKeysWith: { a, _ in a })
        self.profile = profile
        self.context = context
        http = SupabaseHTTP(engine: context.engine, target: context.target, connection: connection)
        replayer = profile.replayer
        noise = try NoiseGenerator(model: profile.accuracy, seed: profile.seed)
        rng = SeededGenerator(seed: profile.seed, stream: 0xDE71CE)
        actionDraws = SeededGenerator(seed: profile.seed, stream: 0xAC7105)
        retryRNG = SeededGenerator(seed: profile.seed, stream: 0x2E7)
        shape = ShapeState(for: context.app, role: group, chatRetry: context.options.chatRetry, seed: profile.seed)
    }

    var metrics: Metrics { context.metrics }
    var app: any AppProfile { context.app }

    // MARK: - Lifecycle

    /// Comes online at `intended`: connects to Realtime, subscribes to its
    /// own rows, and starts sharing at a random phase of its cadence.
    /// `leavingAt` is the intended time the run will have it leave, if it planned one.
    public func arrive(at intended: Double, leavingAt: Double? = nil) async {
        if let leavingAt { life.plan(leaveAt: leavingAt) }
        guard life.arrive(at: intended) else { return }
        profile.link?.begin(at: ShapingProxy.now())
        startEnergy(at: intended)
        // A session from a long onboarding may be (nearly) expired: the join would be refused.
        if account.session.expiresAt - refreshMargin <= context.clock.wallNow() { await refresh() }
        guard life.onlineSince != nil else { return }
        await startReceiving(at: intended)
    }

    /// Online and in its group: connects to Realtime, joins its channels, and starts sharing at a random
    /// phase of its cadence (and its other timers).
    func connect(at intended: Double) {
        let client = RealtimeClient(url: context.target.realtimeURL, accessToken: account.session.accessToken,
                                    clock: context.clock, heartbeatInterval: context.options.heartbeat, proxy: profile.tunnel)
        resetShapeChannels()
        for subscription in channels {
            client.join(subscription.topic, bindings: subscription.bindings, options: subscription.options)
        }
        life.joinedRealtime()
        realtime = client
        tasks.append(Task { await client.run() })
        // Its events are handled on the device itself: no hop from the stream's task to the actor for each one.
        // The task holds the device until the stream ends, which `disconnect` brings about by cancelling it.
        tasks.append(Task { await self.consume(client.events) })
        scheduleRefresh()
        schedulePairing(arrival: intended)
        let first = intended + rng.uniform(0, profile.cadence.upperBound)
        // An app that shares no positions (a declared app of actions alone) makes only its actions.
        if app.sharesLocation { context.scheduler.at(first) { [weak self] t in await self?.share(intended: t) } }
        scheduleShapeTimers(from: intended)
        scheduleActions(from: intended)
    }

    private func consume(_ events: AsyncStream<RealtimeClient.Event>) async {
        for await event in events { await handle(event) }
    }

    /// Stops sharing and counts as offline; keeps receiving until `disconnect`.
    /// A device that has not arrived yet never will. `intended` is the leave's intended time: a tick that
    /// came due before it and runs after it is still shared (−∞: nothing more is).
    public func leave(at intended: Double = -.infinity) {
        if life.leave(at: intended) { stopGPS(at: context.clock.now()) }
        shapeLeft()
        offChannels()
        context.presence.set(index, online: false)
        if let last = ledger.online.last, last.to == .infinity { ledger.online[ledger.online.count - 1].to = context.clock.wallNow() }
    }

    /// Whether it arrived and never got its Realtime subscription.
    var neverSubscribed: Bool { life.neverSubscribed }

    /// Closes the Realtime connection; nothing more is sent or received.
    public func disconnect() {
        leave()
        shapeDisconnecting(gone: life.isGone, subscribed: life.subscribed)
        if battery.ledger != nil, battery.end == nil { battery.end = context.clock.now() }
        life.disconnect()
        context.health.closed(index)
        for t in tasks { t.cancel() }
        tasks = []
        realtime = nil
    }

    var isGone: Bool { life.isGone }

    /// Nothing queued, Realtime up, nothing to catch up on: what it will get, it has.
    var isSettled: Bool { !life.awaitingComeback && !held.catchingUp && shapeSettled }

    /// Disconnects once settled and no phone has updates queued (a friend's retries may still be
    /// for it), or at `deadline` (the run's clock).
    public func settleAndDisconnect(until deadline: Double) {
        let now = context.clock.now()
        if now < deadline, !isSettled || context.health.now.queued > 0 {
            context.scheduler.at(now + 0.5) { [weak self] _ in await self?.settleAndDisconnect(until: deadline) }
            return
        }
        disconnect()
    }

    /// The account as it is now (its session rotates), for the roster.
    var currentAccount: DeviceAccount { account }

    /// Online and subscribed to its rows or channels now.
    var isListening: Bool { life.onlineSince != nil && life.subscribed && life.lostAt == nil }
}
