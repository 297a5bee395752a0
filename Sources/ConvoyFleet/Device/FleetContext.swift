import ConvoyMetrics
import ConvoyWire
import Logging

/// What every device of a run shares: the app it runs, the transport, the
/// backend, the clocks and the scheduler, the run's measurements, and who is online.
public final class FleetContext: Sendable {
    /// The app every device runs (its tables, topics, RPCs and payloads).
    public let app: any AppProfile
    public let engine: HTTPEngine
    public let target: SupabaseTarget
    public let metrics: Metrics
    public let clock: RunClock
    public let scheduler: Scheduler
    public let presence: Presence
    public let logger: Logger
    public let options: DeviceOptions
    /// What its phones sealed for whom and when, for an app whose payload carries no `seq` (Green Box `payload: prd`).
    public let sentUpdates: SentUpdates
    /// The part of the fleet this process runs (nil: all of it); friends elsewhere are on other shards.
    public let shard: Shard?
    /// What the fleet's connections, sessions and retry queues go through, for the live line and run.log.
    public let health: FleetHealth
    /// Its shape: the app as that shape, and the ledgers the shape keeps for the run (`Delivery/RunShape.swift`: a
    /// group app's presence, chat, media, direct messages and replays; a mailbox app's messages). Only the shape's
    /// room reads it.
    let shaped: RunShape
    /// The app as one whose phones share positions and hear them on Realtime (nil: a mailbox app's phones do neither).
    let locations: (any LocationApp)?
    /// The app as one whose users are friends in pairs (nil: a group app's are teams).
    let friends: (any FriendApp)?
    /// Why requests failed: the first of each kind with its request and answer (run.log, the summary).
    public let failures: FailureLog
    /// Each group's sends and receipts, for the live view.
    public let tally: GroupTally
    /// Where each phone is and what its friends saw of it (the live map, report.html's map).
    public let map: FleetMap
    /// Each shaped phone's network link (its offline windows), by device index: none without network conditions.
    public let links: [Int: NetworkLink]
    /// Other calls the phones make at a cadence beside their shape's work (a declared app's `actions:`).
    public let actions: [AppAction]

    public init(engine: HTTPEngine, target: SupabaseTarget, metrics: Metrics, clock: RunClock, scheduler: Scheduler,
                presence: Presence, logger: Logger, options: DeviceOptions = DeviceOptions(), shard: Shard? = nil,
                app: any AppProfile = GreenBoxApp(), health: FleetHealth? = nil, groups: [(name: String, size: Int)] = [],
                links: [Int: NetworkLink] = [:], actions: [AppAction] = []) {
        self.app = app
        self.actions = actions
        self.links = links
        let sizes = groups.isEmpty ? [presence.devices] : groups.map(\.size)
        tally = GroupTally(sizes: sizes)
        map = FleetMap(groups: groups.isEmpty ? ["all"] : groups.map(\.name), sizes: sizes)
        self.health = health ?? FleetHealth(devices: 0)
        shaped = RunShape(app, metrics: metrics)
        (locations, friends) = (app.locations, app.friends)
        sentUpdates = SentUpdates(horizon: options.retentionLimit + 60)
        self.shard = shard
        self.engine = engine
        self.target = target
        self.metrics = metrics
        self.clock = clock
        self.scheduler = scheduler
        self.presence = presence
        self.logger = logger
        self.options = options
        failures = FailureLog(logger: logger)
    }
}

/// How devices behave where the PRD leaves a number open.
public struct DeviceOptions: Sendable, Equatable {
    /// An update whose `ts` is older than this on arrival is stale (PRD §4.4 step d), seconds.
    public var staleAfter: Double = 120
    /// An update timestamped more than this ahead of the receiver's clock is not shown either (PRD §4.4 step d: a `ts`
    /// from the future would hold the friend's marker and hide every real update after it as older), seconds.
    public var futureSkew: Double = 60
    /// At most this `acc` (metres) is drawn as a dot; more is a circle (PRD §4.4 step d).
    public var dotAccuracy: Double = 50
    /// Significant change (background): distance moved and least interval, metres and seconds (iOS).
    public var significantDistance: Double = 500
    public var significantInterval: Double = 300
    /// Refresh the access token this long before it expires (at most a fifth of its lifetime), seconds.
    public var refreshMargin: Double = 60
    /// Open (intended times) or closed (each update waits for the previous one).
    public var workload: Scenario.Workload = .open
    /// The Realtime heartbeat interval, seconds (realtime-js: 25).
    public var heartbeat: Double = RealtimeClient.heartbeatInterval
    /// The largest backfill page, rows.
    public var backfillPage = 1000
    /// A backfill starts this long before the connection went down, seconds: rows
    /// are stamped by the server's clock and committed out of id order.
    public var backfillLookback: Double = 10
    /// The backend's retention limit (window + purge interval + grace), seconds: an update decrypted
    /// later than this after its row was created is lost (`after_retention`).
    public var retentionLimit: Double = 665
    /// Pairing during the run: seconds after arriving that a phone asks a friend, and that a
    /// phone takes to accept a request it sees (the PRD's "Accept & Share Back"), drawn per pair.
    public var pairingAskAfter: ClosedRange<Double> = 1...5
    public var pairingAcceptAfter: ClosedRange<Double> = 2...8
    /// A reinstall with pairing during the run: how long a friend takes to accept its new request (`migration.reaccept`).
    public var reacceptAfter: ClosedRange<Double> = 5...30
    /// What a phone does with an insert that failed (the scenario's `retry:`).
    public var retry = RetryPolicy.none
    /// How a phone retries a chat line or a photo whose post or upload failed (the app's retry queue).
    var chatRetry = ChatRetryQueue<ChatPost>.Policy()
    /// Group apps: how often each phone sends a direct message to a partner (`social.dm_every`); nil: never.
    public var directEvery: ClosedRange<Double>?
    /// Group apps: a phone back from a gap loads the chat it missed (off: what it missed stays missed, as before).
    var catchUpChat = true

    public init() {}
}
