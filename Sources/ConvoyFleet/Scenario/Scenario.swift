import ConvoyGeo
import ConvoyMetrics
import ConvoyWire

/// What `convoy run` runs: a backend, groups of virtual devices, who is
/// friends with whom, a timeline, and the thresholds that decide the exit
/// code. Every key is documented in docs/scenarios.md; `ScenarioFile.load`
/// reads one from YAML with errors that name file, line, column and key.
public struct Scenario: Sendable, Equatable {
    public var name: String
    /// The app the devices run (`app:`, docs/scenarios.md).
    public var app = AppChoice()
    /// Everything random (social graph, tracks, jitter, noise) derives from it.
    public var seed: UInt64
    public var target: Target
    public var groups: [DeviceGroup]
    public var social: Social
    public var timeline: Timeline
    public var workload: Workload
    public var thresholds: [Threshold]
    /// Devices that reinstall the app mid-run (greenbox-prd.md §4.1); nil: none.
    public var migration: Migration?
    /// The backend's retention policy, which the run checks (greenbox-prd.md §3.3).
    public var retention: RetentionPolicy
    /// The battery model's settings.
    public var battery = BatterySettings()
    /// Hostile devices that run a probe catalogue during the load; nil: none.
    public var hostile: Hostile?
    /// What a phone does with an insert that failed (`retry:`); none by default.
    public var retry = RetryPolicy.none
    /// The embedded backend's access-token lifetime, seconds (`auth.token_ttl`); nil: the app's own.
    public var tokenTTL: Double?

    public enum Target: Sendable, Equatable {
        /// `convoy serve` in-process on a free loopback port, temporary SQLite database.
        case embedded
        /// A Supabase project or any compatible server.
        case project(url: String, anonKey: String, serviceKey: String?)
        /// A `convoy serve --keys-file` file: `{url, anon_key, service_role_key}`.
        case keysFile(String)
    }

    public enum Workload: String, Sendable, Equatable, CaseIterable {
        /// Updates happen when their time comes, however slow the backend is (the default).
        case open
        /// Each device waits for its previous update before the next: a slow backend slows the load.
        case closed
    }

    public var deviceCount: Int { groups.reduce(0) { $0 + $1.count } }

    func with(battery: BatterySettings, hostile: Hostile?, app: AppChoice, retry: RetryPolicy = .none) -> Scenario {
        var s = self
        s.retry = retry
        s.app = app
        s.battery = battery
        s.hostile = hostile
        return s
    }

    public init(name: String, seed: UInt64, target: Target, groups: [DeviceGroup], social: Social, timeline: Timeline,
                workload: Workload, thresholds: [Threshold], migration: Migration? = nil, retention: RetentionPolicy = RetentionPolicy()) {
        (self.name, self.seed, self.target, self.groups, self.social, self.timeline, self.workload, self.thresholds, self.migration)
            = (name, seed, target, groups, social, timeline, workload, thresholds, migration)
        self.retention = retention
    }
}

/// The app a scenario runs: its name in `Apps`, and its options.
public struct AppChoice: Sendable, Equatable {
    public var name: String
    public var options: AppOptions
    /// An app declared in a file (`app: {file: apps/mine.yaml}`, docs/apps.md) instead of a built-in one.
    public var declared: DeclaredAppSpec?

    public init(name: String = Apps.defaultName, options: AppOptions = AppOptions()) { (self.name, self.options) = (name, options) }

    public init(declared spec: DeclaredAppSpec) { (name, options, declared) = (spec.name, AppOptions(), spec) }

    /// The app chosen: the declared one, or the built-in one in its modes (nil: no such app).
    public var profile: (any AppProfile)? {
        if let declared { return declared.group != nil ? DeclaredGroupApp(declared) : DeclaredApp(declared) }
        return Apps.make(name, options: options)
    }
}

/// A device migration (PRD §4.1): a share of the devices reinstall — a new
/// key pair, published — and invite each active friend again; each friend
/// re-accepts after a while and switches to the new key. Until then what
/// they seal to the old key no longer opens.
public struct Migration: Sendable, Equatable {
    /// The fraction of devices that reinstall.
    public var share: Double
    /// When, in seconds after the steady part starts.
    public var at: Double
    /// How long each friend takes to accept again, seconds, drawn uniformly.
    public var reaccept: ClosedRange<Double>

    public init(share: Double, at: Double = 0, reaccept: ClosedRange<Double> = 5...30) {
        (self.share, self.at, self.reaccept) = (share, at, reaccept)
    }
}

/// A share of the devices that are hostile: besides sharing like the others,
/// each runs a probe catalogue (docs/probes.md) against its friends, a friend
/// of a friend and a stranger from the fleet, while the load runs.
public struct Hostile: Sendable, Equatable {
    /// The fraction of devices (at least one when above 0).
    public var share: Double
    /// The catalogue file (relative to the scenario file).
    public var catalogue: String
    /// When the first pass starts, seconds after the steady part starts.
    public var at: Double
    /// Run the catalogue again this often; 0: once.
    public var every: Double
    public var catalogueLine = 0
    public var catalogueColumn = 0

    public init(share: Double, catalogue: String, at: Double = 5, every: Double = 0) {
        (self.share, self.catalogue, self.at, self.every) = (share, catalogue, at, every)
    }
}

/// The battery model's settings: the battery percentages are of, and a
/// profiles file over the shipped ones (docs/battery.md).
public struct BatterySettings: Sendable, Equatable {
    /// mAh.
    public var capacity: Double = 3000
    /// A battery profiles file (relative to the scenario file); nil: the shipped profiles.
    public var profiles: String?
    public var profilesLine = 0
    public var profilesColumn = 0

    public init(capacity: Double = 3000, profiles: String? = nil) { (self.capacity, self.profiles) = (capacity, profiles) }
}

/// What the backend promises to delete, and how the run checks it
/// (greenbox-prd.md §3.3: rows deleted 10 minutes after creation by a purge
/// every minute). A row older than `window + purgeEvery + grace` that a
/// recipient can still read is a violation; a row younger than
/// `window − grace` that is gone was deleted early.
public struct RetentionPolicy: Sendable, Equatable {
    /// Rows live this long, seconds.
    public var window: Double
    /// The purge runs this often, seconds (a row may outlive the window by up to this).
    public var purgeEvery: Double
    /// Slack for clocks and a purge in progress, seconds.
    public var grace: Double
    /// A sample of online recipients checks this often, seconds; 0: no checks.
    public var checkEvery: Double
    /// Recipients asked at each check.
    public var sample: Int
    /// With a service key, also scan the whole table at each check.
    public var scan: Bool

    /// The age past which a readable row is a violation.
    public var limit: Double { window + purgeEvery + grace }

    public init(window: Double = 600, purgeEvery: Double = 60, grace: Double = 5, checkEvery: Double = 10, sample: Int = 20, scan: Bool = true) {
        (self.window, self.purgeEvery, self.grace, self.checkEvery, self.sample, self.scan) = (window, purgeEvery, grace, checkEvery, sample, scan)
    }
}

/// Devices that share a configuration.
public struct DeviceGroup: Sendable, Equatable {
    public var name: String
    public var count: Int
    public var tracks: TrackSource
    public var replay: ReplayMode
    /// GPS error: 68 % radius (metres) and Gauss–Markov correlation time (seconds).
    public var accuracy: Double
    public var correlationTime: Double
    /// Foreground sharing interval, seconds, drawn uniformly per tick (PRD: 10–15 s).
    public var cadence: ClosedRange<Double>
    /// Share of devices sharing in the background (significant change: ≥ 500 m, at most every 5 min).
    public var backgroundShare: Double
    /// How these devices share with each friend: the fraction sharing precisely; the rest share general (fuzzed).
    public var preciseShare: Double
    /// The radio, by battery profile name: `lte`, `3g`, `wifi`, or one from `battery.profiles`.
    public var network: String
    /// The mobile network it is on (`conditions:`): nil, loopback as it is.
    public var conditions: NetworkConditions?
    /// How foreground devices run the GPS (background ones use significant change), for the battery model.
    public var locationMode: LocationMode = .highAccuracy
    /// Of the background devices, the share whose users granted only "When In Use" (greenbox-prd.md §4.2):
    /// they share nothing while in the background.
    public var whenInUseShare: Double = 0
    /// How background devices with "Always" share: on significant change (the default) or continuously.
    public var backgroundMode: BackgroundMode = .significantChange
    /// When a device reads its friends' public keys from the backend (PRD §4.4 reads before each send).
    public var keyLookup: KeyLookup = .once
    /// How long a cached key is used (`key_lookup: cached`), seconds.
    public var keyCacheTTL: Double = 300
    /// What "General location" friends get: rounding to 2 (the PRD's) or 3 decimals, or planar Laplace noise.
    public var general: PrivacyFuzz = .general
    /// GPS-denied stretches with their Wi-Fi or cell fallback (docs/noise.md).
    public var gpsDenied = GPSDenied()
    /// Group apps: each phone posts a message to its group this often, drawn uniformly in the range, seconds (nil: none).
    public var messageEvery: ClosedRange<Double>?
    /// Mailbox apps: how often each phone polls its mailbox (`poll_every`; default 5–10 s), or never (`poll_every: never`),
    /// and how often it logs out and in again (`relogin_every`; nil: never).
    public var pollEvery: ClosedRange<Double> = 5...10
    public var pollsNever = false
    public var reloginEvery: ClosedRange<Double>?
    /// Group apps with media: photos and videos each phone sends to its group (`photo_every`, `video_every`).
    public var media: [MediaPlan] = []
    /// Where `tracks` and `network` are in the scenario file (for errors found when they are loaded).
    public var tracksLine = 0
    public var tracksColumn = 0
    public var networkLine = 0
    public var networkColumn = 0

    public enum BackgroundMode: String, Sendable, Equatable, CaseIterable {
        /// iOS's significant-change service: ≥ 500 m moved, at most every 5 minutes; the GPS mostly off.
        case significantChange = "significant_change"
        /// The PRD's high-fidelity mode: every cadence tick, the receiver on as in the foreground.
        case continuous
    }

    public enum KeyLookup: String, Sendable, Equatable, CaseIterable {
        /// Read once, at pairing (and again after a friend's reinstall).
        case once
        /// Read before every send, as PRD §4.4 step a says: one request per tick for the tick's friends.
        case everySend = "every_send"
        /// Read before a send when the cached keys are older than `key_cache_ttl`.
        case cached
    }

    public enum TrackSource: Sendable, Equatable {
        case synthetic(MobilityProfile)
        /// GPX files, by path or glob, relative to the scenario file.
        case files([String])
    }

}

/// The social graph, deterministic from the seed.
public struct Social: Sendable, Equatable {
    /// More friends than this per device is not a scenario Convoy can run.
    public static let maximumFriends = 1000

    /// Friends per device, drawn uniformly.
    public var friends: ClosedRange<Int>
    /// Devices are split into this many communities; friends come from one's own.
    public var communities: Int
    /// The fraction of invitations left to "decide later" (pending, never shared).
    public var decideLater: Double
    /// Of the others, the fraction the invitee declines (apps with a reject: QuickPic's friend requests).
    public var decline = 0.0
    /// Of those, the fraction accepted later, at a seeded time in the steady part (apps that pair during the run).
    public var acceptLater: Double = 0
    /// When in the steady part those acceptances come, seconds from its start (`accept_later_at`); nil: any time in it.
    public var acceptLaterAt: ClosedRange<Double>?
    public var acceptLaterLine = 0
    public var acceptLaterColumn = 0
    /// Group apps (Survale's operations): devices in teams of this many, each with everyone in it; its
    /// first member is its owner (the case agent). nil: pairwise friends (`friends`, `communities`).
    public var groups: ClosedRange<Int>?
    public var groupsLine = 0
    public var groupsColumn = 0
    /// Of the groups, how many their owner abandons: every member leaves early and nobody ends it (Survale: left to auto-end).
    public var abandoned = 0
    /// When the abandoned groups' members leave, seconds into the steady part.
    public var abandonAt = 30.0
    /// How long after its last member left the backend ends an abandoned group (Survale: `convoy serve --auto-end`);
    /// the embedded backend is set to it, and the run checks it.
    public var autoEnd = 600.0
    /// How long an invite code lives on the embedded backend (Closer's 24 h unless given; `social.invite_ttl`).
    public var inviteTTL: Double?
    /// How often the embedded backend gives every couple a new daily question (Closer's day unless given; `social.question_every`).
    public var questionEvery: Double?
    /// Closer: how long a day of a couple's age lasts for its 30/60/90-day outcome reminders (`social.outcome_day`; a day
    /// unless given), how often the backend's scan runs (`social.reminder_every`; the manual's minute), and how many
    /// couples the embedded backend holds before the run for the scan to read (`social.existing_couples`).
    public var outcomeDay: Double?
    public var reminderEvery: Double?
    public var existingCouples: Int?
    /// How late past `autoEnd` an end still counts as in time; nil: the backend's check interval (`autoEnd` ÷ 20, at most 5 s) + 5 s.
    public var autoEndGrace: Double?
    /// Group apps: the fraction of each group's members (not its owner) who are not invited in set-up but ask to
    /// join when they come online, and are let in by the owner (Survale: a join request the case agent approves).
    public var joinByRequest = 0.0
    /// How long an owner takes to decide a request it has seen, drawn uniformly.
    public var approveAfter: ClosedRange<Double> = 1...3
    /// Group apps: the fraction of the members (not owners, not of abandoned groups) who leave their group
    /// during the steady part, `leaveAt` into it, and ask to join again `rejoinAfter` later.
    /// Group apps: how often each owner loads its group's after-action replay during the run (`replay_every`); nil:
    /// only once, right after it ends the group, for the replay check.
    public var replayEvery: Double?
    /// Group apps: how often each member sends a direct message to a partner (`dm_every`); nil: none.
    public var directEvery: ClosedRange<Double>?
    public var leaveRejoin = 0.0
    public var leaveAt: ClosedRange<Double> = 30...90
    public var rejoinAfter: ClosedRange<Double> = 10...30

    public init(friends: ClosedRange<Int> = 2...5, communities: Int = 1, decideLater: Double = 0, acceptLater: Double = 0) {
        (self.friends, self.communities, self.decideLater, self.acceptLater) = (friends, communities, decideLater, acceptLater)
    }
}

/// The arrival of devices, the steady part, and the departures, in seconds.
public struct Timeline: Sendable, Equatable {
    /// Devices coming online, per second (the ramp-up lasts count ÷ rate).
    public var arrivalRate: Double
    public var steady: Double
    public var rampDown: Double

    public init(arrivalRate: Double = 10, steady: Double = 60, rampDown: Double = 0) {
        (self.arrivalRate, self.steady, self.rampDown) = (arrivalRate, steady, rampDown)
    }
}
