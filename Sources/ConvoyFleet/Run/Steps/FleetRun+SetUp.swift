import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation
import Logging

/// Step 1 of a run, set-up: what the run works with (`Stage`), then who the phones are and whom each
/// shares with (`Cast`): sign-ups, keys, invitations. Nothing here is on the measured timeline.
extension FleetRun {
    /// The run's inputs loaded and its machinery built: tracks, profiles, the scheduler, the shared
    /// context, and the shaping proxy of the groups with network conditions.
    struct Stage {
        let startedAt: Date
        let beforeDevices: ProcessResources
        /// The devices this process runs (a shard's, or all).
        let mine: [Int]
        let library: TrackLibrary
        let batteryProfiles: BatteryProfiles
        let catalogue: ProbeCatalogue?
        let scheduler: Scheduler
        let context: FleetContext
        /// Each device's group index.
        let groupOf: [Int]
        let links: [Int: NetworkLink]
        let proxy: ShapingProxy?
        let connections: [HTTPConnection?]
    }

    /// Who the phones are: their accounts, friends (or the pairings they will make during the run), and
    /// other shards' devices signed in here.
    struct Cast {
        let graph: SocialGraph
        let accounts: [Int: DeviceAccount]
        let friends: [[Friend]]
        let pairings: [DevicePairing]?
        let remote: [Int: RemoteAccount]
    }

    func prepare() async throws -> Stage {
        let scenario = configuration.scenario
        let (startedAt, beforeDevices) = (Date(), ProcessResources.current())
        try checkRunnable()
        let n = scenario.deviceCount
        let shard = configuration.shard
        let mine = shard?.devices ?? Array(0..<n)
        let library = try configuration.tracks ?? Self.tracks(for: configuration)
        let batteryProfiles = try configuration.batteryProfiles ?? Self.batteryProfiles(for: configuration)
        let catalogue = try configuration.probeCatalogue ?? Self.probeCatalogue(for: configuration)
        let scheduler = Scheduler(clock: clock.monotonic, metrics: metrics)
        // Network conditions: a link per phone of each group that has them, every connection through one shaping proxy.
        let groupOf = scenario.groups.enumerated().flatMap { g, group in Array(repeating: g, count: group.count) }
        var links: [Int: NetworkLink] = [:]
        for i in mine { if let c = scenario.groups[groupOf[i]].conditions { links[i] = NetworkLink(conditions: c, phone: i, seed: scenario.seed) } }
        var options = configuration.device
        if let migration = scenario.migration { options.reacceptAfter = migration.reaccept }
        let context = FleetContext(engine: engine, target: configuration.target, metrics: metrics, clock: clock,
                                   scheduler: scheduler, presence: Presence(devices: n), logger: logger, options: options,
                                   shard: shard, app: configuration.app, health: FleetHealth(devices: mine.count),
                                   groups: scenario.groups.map { ($0.name, $0.count) }, links: links,
                                   actions: configuration.app.declared?.appActions ?? [])
        if !links.isEmpty, !configuration.connectionPerDevice {
            throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "groups",
                                message: "network conditions shape each phone's own connection: they cannot be used with one shared pool of connections")
        }
        let proxy = links.isEmpty ? nil : try await ShapingProxy.start(links: links, logger: logger)
        if let proxy { logger.info("network conditions: \(links.count) phones through the shaping proxy on 127.0.0.1:\(proxy.port)") }
        let connections: [HTTPConnection?] = try (0..<n).map { i in
            configuration.connectionPerDevice && (shard?.owns(i) ?? true)
                ? try HTTPConnection(engine: engine, proxy: links[i] == nil ? nil : proxy?.tunnel(for: i)) : nil
        }
        return Stage(startedAt: startedAt, beforeDevices: beforeDevices, mine: mine, library: library, batteryProfiles: batteryProfiles,
                     catalogue: catalogue, scheduler: scheduler, context: context, groupOf: groupOf, links: links, proxy: proxy,
                     connections: connections)
    }

    /// Signs the devices up and makes them friends (or plans the pairings they make during the run).
    func setUp(_ stage: Stage) async throws -> Cast {
        let scenario = configuration.scenario
        let (n, seed, app) = (scenario.deviceCount, scenario.seed, configuration.app)
        var onboarding = Onboarding(engine: engine, target: configuration.target, runID: configuration.runID, app: app)
        if configuration.adminSignUp {
            guard let key = configuration.target.serviceKey else {
                throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "target",
                                    message: "--signup admin needs the target's service key (--service-key, or a keys file with service_role_key)")
            }
            onboarding.adminKey = key
        }
        let graph = SocialGraph(devices: n, social: scenario.social, seed: seed)
        let accounts = try await signUpAll(onboarding, devices: stage.mine, connections: stage.connections)
        try Task.checkCancellation()
        // A declared app's tables and columns, as its templates name them, before the timeline (not a run of failed ticks).
        if let declared = app.declared, let first = accounts.keys.min() {
            try await declared.checkSchema(token: accounts[first]!.session.accessToken, via: SupabaseHTTP(engine: engine, target: configuration.target))
        }
        setPhase(.pairing)
        let (preferences, groupOf) = (scenario.groups.map(\.preciseShare), stage.groupOf)
        let preference: @Sendable (Int, Int) -> String = { a, b in
            var rng = SeededGenerator(seed: seed ^ (UInt64(a) << 32 | UInt64(b)), stream: 0x9EF)
            return rng.uniform() < preferences[groupOf[a]] ? "precise" : "general"
        }
        var (pairings, remote): ([DevicePairing]?, [Int: RemoteAccount]) = (nil, [:])
        let friends: [[Friend]]
        if let teams = try await shapeFriends(graph, accounts: accounts, app: app) {
            friends = teams
        } else if app.pairsDuringRun {
            // The phones pair during the run, measured; set-up only plans whom each asks and how each answers. On a shard,
            // friends elsewhere are signed in for their user ids (each asks and answers on its own shard's phone).
            friends = Array(repeating: [], count: n)
            if let shard = configuration.shard {
                let deadline = shardDeadline()
                remote = try await onboarding.signInFriends(graph, shard: shard, local: accounts, runID: configuration.runID,
                                                            deadline: deadline, concurrency: configuration.onboardingConcurrency)
                try await signInCasts(onboarding, shard: shard, graph: graph, catalogue: stage.catalogue, deadline: deadline, into: &remote)
            }
            let signedIn = remote
            pairings = Self.pairings(graph, userIDs: (0..<n).map { accounts[$0]?.userID ?? signedIn[$0]?.userID ?? "" },
                                     emails: (0..<n).map(onboarding.email), preference: preference, seed: seed,
                                     options: configuration.device)
        } else if let shard = configuration.shard {
            (friends, remote) = try await pairAcrossShards(onboarding, shard: shard, graph: graph, accounts: accounts,
                                                          preference: preference, catalogue: stage.catalogue)
        } else {
            friends = try await onboarding.pair(graph, accounts: (0..<n).map { accounts[$0]! }, preference: preference,
                                                concurrency: configuration.onboardingConcurrency)
        }
        try Task.checkCancellation()
        return Cast(graph: graph, accounts: accounts, friends: friends, pairings: pairings, remote: remote)
    }

    /// A shard pairs its devices with their friends anywhere: other shards sign up at their own pace, so it waits for them until
    /// the start (or ten minutes). Hostile devices here probe victims anywhere: the ones pairing did not sign in are signed in too.
    private func pairAcrossShards(_ onboarding: Onboarding, shard: Shard, graph: SocialGraph, accounts: [Int: DeviceAccount],
                                  preference: @escaping @Sendable (Int, Int) -> String, catalogue: ProbeCatalogue?)
        async throws -> (friends: [[Friend]], remote: [Int: RemoteAccount]) {
        let deadline = shardDeadline()
        var (friends, remote) = try await onboarding.pair(graph, shard: shard, local: accounts, runID: configuration.runID, deadline: deadline,
                                                          preference: preference, concurrency: configuration.onboardingConcurrency)
        try await signInCasts(onboarding, shard: shard, graph: graph, catalogue: catalogue, deadline: deadline, into: &remote)
        return (friends, remote)
    }

    /// Until when a shard waits for the others' devices: the start (or ten minutes), at least a minute.
    private func shardDeadline() -> Double { max(configuration.startAt ?? (clock.wallNow() + 600), clock.wallNow() + 60) }

    /// Signs in the devices of other shards that hostile devices here probe (their friends and victims), those not signed in yet.
    private func signInCasts(_ onboarding: Onboarding, shard: Shard, graph: SocialGraph, catalogue: ProbeCatalogue?, deadline: Double,
                             into remote: inout [Int: RemoteAccount]) async throws {
        guard let hostile = configuration.scenario.hostile, catalogue != nil else { return }
        let casts = Self.hostileCasts(hostile, graph: graph, seed: configuration.scenario.seed).casts.filter { shard.owns($0.attacker) }
        for i in Set(casts.flatMap { [$0.friend, $0.victim, $0.stranger] }).sorted() where !shard.owns(i) && remote[i] == nil {
            remote[i] = try await onboarding.signIn(i, password: shard.password(runID: configuration.runID, device: i), deadline: deadline)
        }
    }

    /// Set-up failed or was interrupted. Interrupted (the caller's task cancelled), nothing was shared: an incomplete outcome says so.
    func setUpEnded(_ stage: Stage, by error: any Error) async throws -> Outcome {
        await stage.proxy?.stop()
        guard Task.isCancelled else { throw SetUpFailure.explaining(error) }
        setPhase(.done)
        let shard = configuration.shard
        let end = ProcessResources.current()
        let count = stage.mine.count
        let empty = shard.map { ShardLedger(runID: configuration.runID, shard: $0.index + 1, shards: $0.count,
                                            fleet: configuration.scenario.deviceCount, devices: []) }
        var snapshot = metrics.snapshot()
        snapshot.counters[.devices] = count
        return Outcome(metrics: snapshot, accounting: Accounting(), complete: false, devices: count, startedAt: stage.startedAt, endedAt: Date(),
                       duration: 0, accounts: [],
                       resources: RunSummary.Resources(beforeDevices: stage.beforeDevices, timelineStart: end, end: end, delivered: 0, devices: count),
                       ledger: empty)
    }
}
