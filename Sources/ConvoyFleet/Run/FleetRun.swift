import ConvoyCrypto
import ConvoyGeo
import ConvoyMetrics
import ConvoySodium
import ConvoyTime
import ConvoyWire
import Foundation
import Logging
import Synchronization

/// `convoy run`'s main job: onboard and pair a scenario's devices, bring them
/// online at the arrival rate, let them share and receive through the steady
/// part, take them off again, wait for what is in flight, and account for
/// every update.
public final class FleetRun: Sendable {
    public let configuration: Configuration
    let engine: HTTPEngine
    let metrics: Metrics
    let clock: RunClock
    let logger: Logger
    let status = Mutex((phase: Phase.onboarding, onboarded: 0, start: Double.nan)), costs = Mutex([CostSample]())

    public init(_ configuration: Configuration, engine: HTTPEngine, metrics: Metrics = Metrics(), clock: RunClock = RunClock(),
                logger: Logger = Logger(label: "convoy.run")) {
        self.configuration = configuration
        self.engine = engine
        self.metrics = metrics
        self.clock = clock
        self.logger = logger
    }

    /// The scenario's tracks, as long as the run needs.
    public static func tracks(for configuration: Configuration) throws(ScenarioError) -> TrackLibrary {
        try TrackLibrary.build(configuration.scenario, file: configuration.scenarioFile,
                               length: plannedLength(configuration.scenario) + configuration.drain + 60)
    }

    /// The shipped battery profiles with the scenario's `battery.profiles` over them;
    /// every group's `network` must name one.
    public static func batteryProfiles(for configuration: Configuration) throws(ScenarioError) -> BatteryProfiles {
        let scenario = configuration.scenario
        let file = configuration.scenarioFile
        var path: String?
        if let p = scenario.battery.profiles {
            path = p.hasPrefix("/") ? p : ((file as NSString).deletingLastPathComponent as NSString).appendingPathComponent(p)
            guard FileManager.default.fileExists(atPath: path!) else {
                throw ScenarioError(file: file, line: scenario.battery.profilesLine, column: scenario.battery.profilesColumn, path: "battery.profiles",
                                    message: "\(path!): no such file")
            }
        }
        let profiles = try BatteryProfiles.load(overridingWith: path)
        for (i, g) in scenario.groups.enumerated() where profiles.profile(g.network) == nil {
            throw ScenarioError(file: file, line: g.networkLine, column: g.networkColumn, path: "groups[\(i)].network",
                                message: "no battery profile \"\(g.network)\" (profiles: \(profiles.networkNames.joined(separator: ", ")); add one with battery.profiles)")
        }
        return profiles
    }

    /// Seconds from the first arrival to the last departure.
    public static func plannedLength(_ s: Scenario) -> Double {
        Double(s.deviceCount) / s.timeline.arrivalRate + s.timeline.steady + s.timeline.rampDown
    }

    /// Runs the scenario. Cancelling the calling task ends the run early and
    /// gracefully: sharing stops, in-flight updates drain, the outcome is
    /// marked incomplete. `progress` is called about once a second.
    public func run(progress: @escaping @Sendable (Tick) -> Void = { _ in }) async throws -> Outcome {
        let scenario = configuration.scenario
        let startedAt = Date()
        let beforeDevices = ProcessResources.current()
        let n = scenario.deviceCount
        let shard = configuration.shard
        try checkRunnable()
        let mine = shard?.devices ?? Array(0..<n)
        let library = try configuration.tracks ?? Self.tracks(for: configuration)
        let batteryProfiles = try configuration.batteryProfiles ?? Self.batteryProfiles(for: configuration)
        let catalogue = try configuration.probeCatalogue ?? Self.probeCatalogue(for: configuration)
        let scheduler = Scheduler(clock: clock.monotonic, metrics: metrics)
        let presence = Presence(devices: n)
        let app = configuration.app
        let health = FleetHealth(devices: mine.count)
        let context = FleetContext(engine: engine, target: configuration.target, metrics: metrics, clock: clock,
                                   scheduler: scheduler, presence: presence, logger: logger, options: configuration.device, shard: shard,
                                   app: app, health: health)
        let monitor = Task { [self] in await self.monitor(presence: presence, health: health, progress: progress) }
        defer { monitor.cancel() }

        // Network conditions: a link per phone of each group that has them, every connection through one shaping proxy.
        let groupOf = scenario.groups.enumerated().flatMap { g, group in Array(repeating: g, count: group.count) }
        var links: [Int: NetworkLink] = [:]
        for i in mine { if let c = scenario.groups[groupOf[i]].conditions { links[i] = NetworkLink(conditions: c, phone: i, seed: scenario.seed) } }
        if !links.isEmpty, !configuration.connectionPerDevice {
            throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "groups",
                                message: "network conditions shape each phone's own connection: they cannot be used with one shared pool of connections")
        }
        let proxy = links.isEmpty ? nil : try await ShapingProxy.start(links: links, logger: logger)
        if let proxy { logger.info("network conditions: \(links.count) phones through the shaping proxy on 127.0.0.1:\(proxy.port)") }

        // Set-up: sign-ups, keys, invitations. Not part of the measured timeline.
        let connections: [HTTPConnection?] = try (0..<n).map { i in
            configuration.connectionPerDevice && (shard?.owns(i) ?? true)
                ? try HTTPConnection(engine: engine, proxy: links[i] == nil ? nil : proxy?.tunnel(for: i)) : nil
        }
        var onboarding = Onboarding(engine: engine, target: configuration.target, runID: configuration.runID, app: app)
        if configuration.adminSignUp {
            guard let key = configuration.target.serviceKey else {
                throw ScenarioError(file: configuration.scenarioFile, line: 0, column: 0, path: "target",
                                    message: "--signup admin needs the target's service key (--service-key, or a keys file with service_role_key)")
            }
            onboarding.adminKey = key
        }
        let graph = SocialGraph(devices: n, social: scenario.social, seed: scenario.seed)
        let accounts: [Int: DeviceAccount]
        let friends: [[Friend]]
        var pairings: [DevicePairing]?
        var remote: [Int: RemoteAccount] = [:]
        do {
            accounts = try await signUpAll(onboarding, devices: mine, connections: connections)
            try Task.checkCancellation()
            setPhase(.pairing)
            let seed = scenario.seed
            let preferences = scenario.groups.map(\.preciseShare)
            let preference: @Sendable (Int, Int) -> String = { a, b in
                var rng = SeededGenerator(seed: seed ^ (UInt64(a) << 32 | UInt64(b)), stream: 0x9EF)
                return rng.uniform() < preferences[groupOf[a]] ? "precise" : "general"
            }
            if let teams = try await shapeFriends(graph, accounts: accounts, app: app) {
                friends = teams
            } else if app.pairsDuringRun {
                // The phones pair during the run, measured; set-up only plans whom each asks and how each answers.
                friends = Array(repeating: [], count: n)
                pairings = Self.pairings(graph, userIDs: (0..<n).map { accounts[$0]!.userID }, preference: preference, seed: seed,
                                        options: configuration.device)
            } else if let shard {
                // Other shards sign up at their own pace: wait for them until the start (or ten minutes).
                let deadline = configuration.startAt ?? (clock.wallNow() + 600)
                (friends, remote) = try await onboarding.pair(graph, shard: shard, local: accounts, runID: configuration.runID,
                                                              deadline: max(deadline, clock.wallNow() + 60), preference: preference,
                                                              concurrency: configuration.onboardingConcurrency)
                // Hostile devices here probe victims anywhere: sign in the ones pairing did not.
                if let hostile = scenario.hostile, catalogue != nil {
                    let casts = Self.hostileCasts(hostile, graph: graph, seed: seed).casts.filter { shard.owns($0.attacker) }
                    for i in Set(casts.flatMap { [$0.friend, $0.victim, $0.stranger] }).sorted() where !shard.owns(i) && remote[i] == nil {
                        remote[i] = try await onboarding.signIn(i, password: shard.password(runID: configuration.runID, device: i),
                                                                deadline: max(deadline, clock.wallNow() + 60))
                    }
                }
            } else {
                friends = try await onboarding.pair(graph, accounts: (0..<n).map { accounts[$0]! }, preference: preference,
                                                    concurrency: configuration.onboardingConcurrency)
            }
            try Task.checkCancellation()
        } catch {
            // Interrupted during set-up: nothing was shared; say so in an incomplete outcome.
            await proxy?.stop()
            guard Task.isCancelled else { throw SetUpFailure.explaining(error) }
            setPhase(.done)
            let end = ProcessResources.current()
            let empty = shard.map { ShardLedger(runID: configuration.runID, shard: $0.index + 1, shards: $0.count, fleet: n, devices: []) }
            var snapshot = metrics.snapshot()
            snapshot.counters[.devices] = mine.count
            return Outcome(metrics: snapshot, accounting: Accounting(), complete: false, devices: mine.count, startedAt: startedAt, endedAt: Date(),
                           duration: 0, accounts: [],
                           resources: RunSummary.Resources(beforeDevices: beforeDevices, timelineStart: end, end: end, delivered: 0, devices: mine.count),
                           ledger: empty)
        }

        let roles = Self.shapeRoles(app, graph: graph, social: scenario.social, seed: scenario.seed, count: n)
        // Every device's draws are made on every shard (the streams stay aligned); each shard builds its own devices.
        var slots = [VirtualDevice?](repeating: nil, count: n)
        let groupStart = scenario.groups.indices.map { g in scenario.groups[..<g].reduce(0) { $0 + $1.count } }
        var rng = SeededGenerator(seed: scenario.seed, stream: 0xF1EE7)
        for i in 0..<n {
            let group = scenario.groups[groupOf[i]]
            let tracks = library.tracks[groupOf[i]]
            let track = tracks[i % tracks.count]
            let offset = rng.uniform(0, max(track.duration, 1))
            let background = rng.chance(group.backgroundShare)
            let deviceSeed = rng.next()
            guard let account = accounts[i] else { continue }
            let feeds = configuration.live[group.name] ?? []
            let firstOfGroup = groupStart[groupOf[i]]
            var profile = VirtualDevice.Profile(
                cadence: group.cadence, background: background, replayer: try Replayer(track: track, mode: group.replay, offset: offset),
                accuracy: AccuracyModel(accuracy68: group.accuracy, correlationTime: group.correlationTime, denied: group.gpsDenied),
                seed: deviceSeed, battery: batteryProfiles.profile(group.network), locationMode: group.locationMode,
                live: feeds.isEmpty ? nil : feeds[(i - firstOfGroup) % feeds.count])
            // Draws added since: a stream of their own, so the ones above stay what they were for every seed.
            var permissions = SeededGenerator(seed: scenario.seed ^ UInt64(i), stream: 0x1A11)
            profile.whenInUseOnly = background && permissions.chance(group.whenInUseShare)
            (profile.messageEvery, profile.media) = (group.messageEvery, group.media)
            (profile.pollEvery, profile.reloginEvery) = (group.pollsNever ? nil : group.pollEvery, group.reloginEvery)
            (profile.backgroundMode, profile.keyLookup, profile.keyCacheTTL, profile.general)
                = (group.backgroundMode, group.keyLookup, group.keyCacheTTL, group.general)
            if let link = links[i] { (profile.link, profile.tunnel) = (link, proxy?.tunnel(for: i)) }
            slots[i] = try VirtualDevice(account: account, friends: friends[i], profile: profile, connection: connections[i], context: context,
                                         pairing: pairings?[i], group: roles[i])
        }
        let devices = slots.compactMap { $0 }
        let abandonedAt = scenario.social.abandonAt

        // The timeline: arrivals in a seeded order at the arrival rate, the steady part, departures.
        let schedulerTask = Task { await scheduler.run() }
        let t0 = startTime()
        let timeline = scenario.timeline
        let rampUpEnd = t0 + Double(n) / timeline.arrivalRate
        let steadyEnd = rampUpEnd + timeline.steady
        let end = steadyEnd + timeline.rampDown
        status.withLock { $0.start = t0 }
        let timelineStart = ProcessResources.current()
        if t0 > clock.now() + 1 {
            setPhase(.waiting)
            scheduler.at(t0) { [self] _ in self.setPhase(.rampUp) }
        } else {
            setPhase(.rampUp)
        }
        var order = Array(0..<n)
        SocialGraph.shuffle(&order, &rng)
        let drain = configuration.drain
        // Phones still out of Realtime or with updates queued when they go are given this long more to come back,
        // post and catch up, as the phone in the user's pocket would: up to the retry policy's max_age, or 30 s when
        // a group has tunnels or resets.
        let retry = configuration.device.retry
        let tunnels = scenario.groups.contains { $0.conditions.map { $0.offline != nil || $0.resetEvery > 0 } ?? false }
        let settle = max(retry.mode == .retry ? retry.maxAge : 0, tunnels ? 30 : 0)
        for (k, i) in order.enumerated() {
            guard let device = slots[i] else { continue }
            // An abandoned team leaves early (nobody ends it: the backend's auto-end will), the others over the ramp-down
            // or at the end; each phone learns its leave's intended time on arriving, which then decides its last ticks.
            let abandons = roles[i]?.abandons == true
            let leave = abandons ? rampUpEnd + abandonedAt : steadyEnd + timeline.rampDown * Double(k) / Double(max(n, 1))
            scheduler.at(t0 + Double(k) / timeline.arrivalRate) { await device.arrive(at: $0, leavingAt: leave) }
            if let at = roles[i]?.leavesAt { scheduler.at(rampUpEnd + at) { _ in await device.leaveForAWhile() } }
            if abandons {
                scheduler.at(leave) { t in await device.leave(at: t) }
                scheduler.at(leave + drain) { _ in await device.settleAndDisconnect(until: leave + drain) }
            } else if timeline.rampDown > 0 {
                scheduler.at(leave) { t in
                    await device.leaveGroup()
                    await device.leave(at: t)
                }
                scheduler.at(leave + drain) { _ in await device.settleAndDisconnect(until: leave + drain + settle) }
            }
        }
        if pairings != nil {
            scheduleLaterAcceptances(graph, devices: slots, userIDs: (0..<n).map { accounts[$0]?.userID ?? "" }, steadyStart: rampUpEnd,
                                     scheduler: scheduler)
        }
        if let migration = scenario.migration {
            scheduleMigration(migration, devices: devices, at: rampUpEnd + migration.at, scheduler: scheduler, seed: scenario.seed)
        }
        let retention = scenario.retention.checkEvery > 0
            ? RetentionChecker(policy: scenario.retention, metrics: metrics, afterGroupEnd: Self.retentionAfterGroupEnd(app)) : nil
        let fleet = devices
        var hostileCount = 0
        var probeTask: Task<ProbeSummary, Never>?
        if let hostile = scenario.hostile, let catalogue {
            var (casts, unmatched) = Self.shapeHostileCasts(app, hostile, graph: graph, seed: scenario.seed)
            if let shard {
                // Each shard runs its own hostile devices; their victims may be anywhere.
                casts = casts.filter { shard.owns($0.attacker) }
                unmatched = unmatched.filter { shard.owns($0) }
            }
            hostileCount = casts.count
            if !unmatched.isEmpty {
                metrics.count(.probeHostileUnmatched, by: unmatched.count)
                logger.notice("hostile devices \(unmatched): no friend of a friend who is not their own friend in the graph; they do not probe")
            }
            probeTask = scheduleProbes(hostile, catalogue: catalogue, casts: casts, devices: slots, remote: remote, start: rampUpEnd + hostile.at,
                                       end: steadyEnd, file: hostile.catalogue)
        }
        let retentionTask = retention.map { checker in
            // With a service key the checker also scans the whole table: in a sharded run, the first shard alone does.
            let serviceKey = (configuration.shard?.index ?? 0) == 0 ? configuration.target.serviceKey : nil
            return Task { [clock, engine, configuration, app] in
                let http = SupabaseHTTP(engine: engine, target: configuration.target)
                var next = t0 + checker.policy.checkEvery
                while !Task.isCancelled {
                    do { try await clock.monotonic.sleep(until: next) } catch { return }
                    await checker.round(for: app, devices: fleet, http: http, serviceKey: serviceKey, clock: clock, t: clock.now() - t0)
                    next = max(next + checker.policy.checkEvery, clock.now())
                }
            }
        }
        var complete = true
        do {
            try await clock.monotonic.sleep(until: rampUpEnd)
            setPhase(.steady)
            try await clock.monotonic.sleep(until: steadyEnd)
            setPhase(.rampDown)
            try await clock.monotonic.sleep(until: end)
        } catch {
            complete = false
            logger.notice("interrupted: stopping the devices, draining for \(drain) s")
            probeTask?.cancel()
        }
        // A probe pass under way finishes (its checks need their answers) before the devices drain.
        let probeSummary = await probeTask?.value

        // Stop sharing everywhere, let what is in flight arrive, then close.
        setPhase(.draining)
        for d in devices {
            await d.leaveGroup()
            // A run that reached its end: ticks that came due before it are still shared; an interrupted one stops now.
            await d.leave(at: complete ? end : -.infinity)
        }
        let drained = Task {
            try? await clock.monotonic.sleep(until: clock.now() + drain)
            let bound = clock.now() + settle
            let started = clock.now()
            var unsettled = 0
            repeat {
                unsettled = 0
                for d in devices where await !d.isSettled { unsettled += 1 }
                if unsettled == 0 || settle == 0 { break }
                try? await clock.monotonic.sleep(until: clock.now() + 0.25)
            } while clock.now() < bound
            if clock.now() - started > 0.2 {
                logger.notice("drain: waited \(String(format: "%.1f", clock.now() - started)) s for phones to come back, post their queues and catch up; \(unsettled) not done")
            }
        }
        await drained.value
        context.convergence.finish()
        retentionTask?.cancel()
        await retentionTask?.value
        for d in devices { await d.disconnect() }
        let (groups, mailbox) = await shapeReports(graph, devices: slots, app: app, purged: retention?.groupEndsSeen ?? [:],
                                                   mailbox: context.mailbox, purgeLimit: scenario.retention.limit)
        schedulerTask.cancel()
        await schedulerTask.value
        let shaping = proxy.map { p in
            scenario.groups.indices.map { g in p.figures(phones: mine.filter { groupOf[$0] == g }) }
        }
        await proxy?.stop()
        setPhase(.done)

        var ledgers = [DeviceLedger](repeating: DeviceLedger(), count: n)
        var entries: [ShardLedger.Device] = []
        var duplicates = 0, offline = 0, deaf = 0
        var finalAccounts: [DeviceAccount] = []
        var energy = BatterySummary.Builder()
        var perDevice: [String: [Double]] = [:]
        var reconnects: [String: Int] = [:]
        let finished = clock.now()
        for d in devices {
            let i = d.index
            let group = scenario.groups[groupOf[i]].name
            var percentPerHour: Double?
            if let e = await d.energyReport(now: finished) {
                energy.add(group: group, ledger: e.ledger, until: e.until)
                let b = e.ledger.breakdown(until: e.until)
                let p = BatteryUnits.percentPerHour(joules: b.total, seconds: b.seconds, capacity: scenario.battery.capacity,
                                                    voltage: batteryProfiles.battery.voltage)
                perDevice[group, default: []].append(p)
                percentPerHour = p
            }
            if await d.neverSubscribed { deaf += 1 }
            reconnects[group, default: 0] += await d.reconnectCount
            ledgers[i] = await d.ledger
            let (dup, off) = (await d.duplicates, await d.sentOffline)
            duplicates += dup
            offline += off
            if shard != nil {
                entries.append(ShardLedger.Device(index: i, group: group, ledger: ledgers[i], duplicates: dup, sentOffline: off,
                                                  batteryPercentPerHour: percentPerHour))
            }
            finalAccounts.append(await d.currentAccount)
        }
        // A shard reconciles the pairs it holds both ends of; `convoy merge` the rest.
        let accounting = Accounting.reconcile(ledgers, duplicates: duplicates, sentOffline: offline)
        var snapshot = metrics.snapshot()
        snapshot.counters[.delivered] = accounting.delivered
        snapshot.counters[.lost] = accounting.lostTotal
        for (reason, count) in accounting.lost { snapshot.counters[.lost(reason: reason)] = count }
        snapshot.counters[.devices] = mine.count
        let feeds = configuration.live.values.flatMap { $0 }
        if !feeds.isEmpty { snapshot.counters[.liveFixesReceived] = feeds.reduce(0) { $0 + $1.received } }
        snapshot.counters[.devicesNeverSubscribed] = deaf  // arrived, never subscribed: received nothing, offline throughout
        snapshot.unmeasured = retention?.report.unmeasured  // a run too short to see a row reach the limit has not tested it
        var outcome = Outcome(metrics: snapshot, accounting: accounting, complete: complete, devices: mine.count, startedAt: startedAt, endedAt: Date(),
                       duration: clock.now() - t0, accounts: finalAccounts,
                       resources: RunSummary.Resources(beforeDevices: beforeDevices, timelineStart: timelineStart, end: ProcessResources.current(),
                                                       delivered: accounting.delivered, devices: mine.count),
                       retention: retention?.report,
                       battery: Self.report(energy.summary(capacityMAh: scenario.battery.capacity), volts: batteryProfiles.battery.voltage,
                                            perDevice: perDevice, reconnects: reconnects),
                       probes: probeSummary ?? scenario.hostile.flatMap { h in
                           catalogue.map { ProbeSummary(outcomes: [], catalogue: $0, file: h.catalogue, hostileDevices: hostileCount) }
                       },
                       ledger: shard.map { ShardLedger(runID: configuration.runID, shard: $0.index + 1, shards: $0.count, fleet: n, devices: entries) },
                       network: Self.network(scenario, figures: shaping), groups: groups)
        (outcome.mailbox, outcome.failures, outcome.sharesLocations) = (mailbox, context.failures.samples, app.sharesLocation)
        outcome.resources.steady = RunSummary.Resources.steady(costs.withLock { $0 }, lastArrival: rampUpEnd - t0, rampDown: steadyEnd - t0)
        return outcome
    }
}
