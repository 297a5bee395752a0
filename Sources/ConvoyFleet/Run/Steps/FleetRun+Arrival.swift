import ConvoyGeo
import ConvoyMetrics
import ConvoyWire
import Foundation
import Logging
import Synchronization

/// Step 2 of a run, arrival: the phones built from the cast, and the timeline laid out on the scheduler
/// (arrivals in a seeded order at the arrival rate, the steady part, departures), with what happens on it
/// (later acceptances, the migration's reinstalls).
extension FleetRun {
    /// The phones: by device index (nil where another shard runs it, or sign-up gave no account), what their
    /// shape decides of their timeline, and the seeded order they arrive in.
    struct Fleet {
        let slots: [VirtualDevice?]
        let timelines: [PhoneTimeline]
        let order: [Int]
        var devices: [VirtualDevice] { slots.compactMap { $0 } }
    }

    /// What a phone's shape decides of its part in the run's timeline (`shapeTimelines`): whether it abandons what it
    /// is part of at `abandon_at` (a group's owner who never ends its group), and when, after the ramp-up, it steps away
    /// for a while (a member who leaves its group and asks to join again).
    struct PhoneTimeline: Sendable {
        var abandons = false
        var awayAt: Double?
    }

    /// When each part of the timeline ends, on the run's monotonic clock.
    struct Timeline {
        let t0: Double, rampUpEnd: Double, steadyEnd: Double, end: Double
        /// This process's CPU and memory at the first arrival.
        let start: ProcessResources
        /// How long phones still out of Realtime, or with updates queued, are given to come back, post and catch up when they go,
        /// as the phone in the user's pocket would: up to the retry policy's max_age, or 30 s when a group has tunnels or resets.
        let settle: Double
    }

    /// Every device's draws are made on every shard (the streams stay aligned); each shard builds its own devices.
    func buildDevices(_ stage: Stage, _ cast: Cast) throws -> Fleet {
        let scenario = configuration.scenario
        let n = scenario.deviceCount
        let roles = Self.shapeRoles(configuration.app, graph: cast.graph, social: scenario.social, seed: scenario.seed, count: n)
        var slots = [VirtualDevice?](repeating: nil, count: n)
        let groupStart = scenario.groups.indices.map { g in scenario.groups[..<g].reduce(0) { $0 + $1.count } }
        var rng = SeededGenerator(seed: scenario.seed, stream: 0xF1EE7)
        for i in 0..<n {
            let g = stage.groupOf[i]
            let (group, tracks) = (scenario.groups[g], stage.library.tracks[g])
            let track = tracks[i % tracks.count]
            let offset = rng.uniform(0, max(track.duration, 1))
            let background = rng.chance(group.backgroundShare)
            let deviceSeed = rng.next()
            guard let account = cast.accounts[i] else { continue }
            let feeds = configuration.live[group.name] ?? []
            var profile = VirtualDevice.Profile(
                cadence: group.cadence, background: background, replayer: try Replayer(track: track, mode: group.replay, offset: offset),
                accuracy: AccuracyModel(accuracy68: group.accuracy, correlationTime: group.correlationTime, denied: group.gpsDenied),
                seed: deviceSeed, battery: stage.batteryProfiles.profile(group.network), locationMode: group.locationMode,
                live: feeds.isEmpty ? nil : feeds[(i - groupStart[g]) % feeds.count])
            // Draws added since: a stream of their own, so the ones above stay what they were for every seed.
            var permissions = SeededGenerator(seed: scenario.seed ^ UInt64(i), stream: 0x1A11)
            profile.whenInUseOnly = background && permissions.chance(group.whenInUseShare)
            (profile.messageEvery, profile.media) = (group.messageEvery, group.media)
            (profile.pollEvery, profile.reloginEvery) = (group.pollsNever ? nil : group.pollEvery, group.reloginEvery)
            (profile.backgroundMode, profile.keyLookup, profile.keyCacheTTL, profile.general)
                = (group.backgroundMode, group.keyLookup, group.keyCacheTTL, group.general)
            if let link = stage.links[i] { (profile.link, profile.tunnel) = (link, stage.proxy?.tunnel(for: i)) }
            slots[i] = try VirtualDevice(account: account, friends: cast.friends[i], profile: profile, connection: stage.connections[i],
                                         context: stage.context, pairing: cast.pairings?[i], group: roles[i])
        }
        var order = Array(0..<n)
        SocialGraph.shuffle(&order, &rng)
        return Fleet(slots: slots, timelines: Self.shapeTimelines(roles), order: order)
    }

    /// Lays the timeline out: each phone's arrival, its leave (an abandoned team early, nobody ending it: the backend's auto-end
    /// will; the others over the ramp-down), and what set-up planned for the steady part.
    func arrive(_ stage: Stage, _ cast: Cast, _ fleet: Fleet) -> Timeline {
        let scenario = configuration.scenario
        let (n, timeline, drain, scheduler) = (scenario.deviceCount, scenario.timeline, configuration.drain, stage.scheduler)
        let t0 = startTime()
        let rampUpEnd = t0 + Double(n) / timeline.arrivalRate
        let steadyEnd = rampUpEnd + timeline.steady
        status.withLock { $0.start = t0 }
        let start = ProcessResources.current()
        if t0 > clock.now() + 1 {
            setPhase(.waiting)
            scheduler.at(t0) { [self] _ in self.setPhase(.rampUp) }
        } else {
            setPhase(.rampUp)
        }
        let retry = configuration.device.retry
        let tunnels = scenario.groups.contains { $0.conditions.map { $0.offline != nil || $0.resetEvery > 0 } ?? false }
        let settle = max(retry.mode == .retry ? retry.maxAge : 0, tunnels ? 30 : 0)
        for (k, i) in fleet.order.enumerated() {
            guard let device = fleet.slots[i] else { continue }
            // Each phone learns its leave's intended time on arriving, which then decides its last ticks.
            let abandons = fleet.timelines[i].abandons
            let leave = abandons ? rampUpEnd + scenario.social.abandonAt : steadyEnd + timeline.rampDown * Double(k) / Double(max(n, 1))
            scheduler.at(t0 + Double(k) / timeline.arrivalRate) { await device.arrive(at: $0, leavingAt: leave) }
            if let at = fleet.timelines[i].awayAt { scheduler.at(rampUpEnd + at) { _ in await device.shapeStepsAway() } }
            if abandons {
                scheduler.at(leave) { t in await device.leave(at: t) }
                scheduler.at(leave + drain) { _ in await device.settleAndDisconnect(until: leave + drain) }
            } else if timeline.rampDown > 0 {
                scheduler.at(leave) { t in
                    await device.shapeEnds()
                    await device.leave(at: t)
                }
                scheduler.at(leave + drain) { _ in await device.settleAndDisconnect(until: leave + drain + settle) }
            }
        }
        if cast.pairings != nil {
            scheduleLaterAcceptances(cast.graph, devices: fleet.slots, userIDs: (0..<n).map { cast.accounts[$0]?.userID ?? cast.remote[$0]?.userID ?? "" },
                                     steadyStart: rampUpEnd, scheduler: scheduler)
        }
        if let migration = scenario.migration {
            scheduleMigration(migration, slots: fleet.slots, at: rampUpEnd + migration.at, scheduler: scheduler, seed: scenario.seed)
        }
        return Timeline(t0: t0, rampUpEnd: rampUpEnd, steadyEnd: steadyEnd, end: steadyEnd + timeline.rampDown, start: start, settle: settle)
    }
}
