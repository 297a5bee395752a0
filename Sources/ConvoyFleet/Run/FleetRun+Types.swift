import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation

/// What a run is given, where it is, and what it produced.
extension FleetRun {
    public struct Configuration: Sendable {
        public var scenario: Scenario
        /// The scenario file (track files are relative to its folder; errors name it).
        public var scenarioFile: String
        public var target: SupabaseTarget
        /// Makes account emails unique, so runs can share a backend.
        public var runID: String
        /// How long receivers wait for updates in flight after the last send, seconds.
        public var drain: Double
        public var device: DeviceOptions
        /// Sign-ups and invitations in flight at once during onboarding.
        public var onboardingConcurrency: Int
        /// Each device holds its own HTTP connection (as a phone does); false: one shared pool.
        public var connectionPerDevice: Bool
        /// The tracks, when already loaded (`convoy run` loads them before starting a backend); nil: loaded here.
        public var tracks: TrackLibrary?
        /// The battery profiles, when already loaded (as the tracks); nil: loaded here.
        public var batteryProfiles: BatteryProfiles?
        /// The hostile devices' probe catalogue, when already loaded; nil: loaded here if the scenario has `hostile:`.
        public var probeCatalogue: ProbeCatalogue?
        /// The part of the fleet this process runs (`--shard`); nil: all of it.
        public var shard: Shard?
        /// When the first device arrives (Unix seconds, `--start-at`); nil: as soon as set-up is done.
        public var startAt: Double?
        /// Sign devices up through the admin API with the target's service key (`--signup admin`), not `/signup`.
        public var adminSignUp = false
        /// The app the devices run, as the scenario's `app:` names it.
        public var app: any AppProfile
        /// Live receivers by group name (`convoy live`): that group's devices share their fixes, round-robin, instead of replaying.
        public var live: [String: [LiveFeed]] = [:]

        public init(scenario: Scenario, scenarioFile: String, target: SupabaseTarget, runID: String, drain: Double = 5,
                    device: DeviceOptions = DeviceOptions(), onboardingConcurrency: Int = 32, connectionPerDevice: Bool = true,
                    tracks: TrackLibrary? = nil, batteryProfiles: BatteryProfiles? = nil, probeCatalogue: ProbeCatalogue? = nil,
                    shard: Shard? = nil, startAt: Double? = nil) {
            self.probeCatalogue = probeCatalogue
            self.shard = shard
            self.startAt = startAt
            self.tracks = tracks
            self.batteryProfiles = batteryProfiles
            self.scenario = scenario
            self.scenarioFile = scenarioFile
            self.target = target
            self.runID = runID
            self.drain = drain
            self.device = device
            self.onboardingConcurrency = onboardingConcurrency
            self.connectionPerDevice = connectionPerDevice
            self.device.workload = scenario.workload
            self.device.retentionLimit = scenario.retention.limit
            self.device.retry = scenario.retry
            self.device.directEvery = scenario.social.directEvery
            // The scenario reader refuses a name `Apps` does not know.
            app = scenario.app.profile ?? GreenBoxApp()
        }
    }

    public enum Phase: String, Sendable {
        case onboarding, pairing
        /// Set up, waiting for `--start-at`.
        case waiting
        case rampUp = "ramp-up"
        case steady
        case rampDown = "ramp-down"
        case draining, done
    }

    /// Once a second: what happened in that second, and where the run is.
    public struct Tick: Sendable {
        /// Seconds since the first device arrived (negative during onboarding).
        public var elapsed: Double
        public var phase: Phase
        public var devicesOnline: Int
        public var onboarded: Int
        /// What was recorded in this second.
        public var interval: MetricsSnapshot
        /// Counters since the start.
        public var totals: [String: Int]
        /// Phones off Realtime and updates waiting for a retry, now.
        public var health = FleetHealth.Now()
        /// Each group now: its phones (on this shard), online, off Realtime, and what they sent and received so far
        /// (updates per friend, or a mailbox app's messages), as the dashboard shows it.
        public var groups: [DashboardFrame.Group] = []
        /// Why requests failed so far: each operation and reason, its count, and its last request and answer.
        public var failures: [FailureSample] = []
        /// This process's CPU over the last second (percent of one core) and its memory now.
        public var process: DashboardFrame.Process?
    }

    /// What a run produced.
    public struct Outcome: Sendable {
        public var metrics: MetricsSnapshot
        public var accounting: Accounting
        /// False when the run was interrupted (SIGINT/SIGTERM): the figures cover what ran.
        public var complete: Bool
        public var devices: Int
        public var startedAt: Date
        public var endedAt: Date
        /// Seconds from the first arrival to the end of the drain.
        public var duration: Double
        /// Each device's account as it ended (sessions rotate), for `--keep-roster`.
        public var accounts: [DeviceAccount]
        /// This process's CPU and memory before any device, at the first arrival, and at the end.
        public var resources: RunSummary.Resources
        /// What the retention checker found; nil when it did not run (`retention.check_every: 0`, or interrupted during set-up).
        public var retention: RetentionReport?
        /// The battery model per group; nil when interrupted during set-up.
        public var battery: BatteryReport?
        /// What the hostile devices' probes found; nil without `hostile:`.
        public var probes: ProbeSummary?
        /// What this shard's devices sent and received, for `convoy merge` (`ledger.json`); nil when not sharded.
        public var ledger: ShardLedger?
        /// The network conditions each group ran under; nil when no group had any.
        public var network: [RunSummary.NetworkGroup]?
        /// A group app's groups and their auto-end; nil for other apps (or without the service key to read them).
        public var groups: GroupsReport?
        /// A mailbox app's messages; nil for other apps.
        public var mailbox: MailboxReport? = nil
        /// Why requests failed, the first of each kind with its request and answer; nil when none did.
        public var failures: [FailureSample]? = nil
        /// Whether the app's phones share locations (the location accounting applies).
        public var sharesLocations = true
    }
}
