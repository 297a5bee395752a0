import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Logging

/// Step 3 of a run, the steady part: the checks that run beside the phones (the hostile devices' probes, the
/// retention checker's rounds) started, and the run's clock slept through ramp-up, steady and ramp-down.
extension FleetRun {
    /// What runs beside the phones until the drain.
    struct Checks {
        let probes: Task<ProbeSummary, Never>?
        /// The hostile devices that probe (this shard's).
        let hostileCount: Int
        let retention: RetentionChecker?
        let retentionRounds: Task<Void, Never>?
    }

    func startChecks(_ stage: Stage, _ cast: Cast, _ fleet: Fleet, _ timeline: Timeline) -> Checks {
        let scenario = configuration.scenario
        var hostileCount = 0
        var probes: Task<ProbeSummary, Never>?
        if let hostile = scenario.hostile, let catalogue = stage.catalogue {
            var (casts, unmatched) = Self.shapeHostileCasts(configuration.app, hostile, graph: cast.graph, seed: scenario.seed)
            if let shard = configuration.shard {
                // Each shard runs its own hostile devices; their victims may be anywhere.
                casts = casts.filter { shard.owns($0.attacker) }
                unmatched = unmatched.filter { shard.owns($0) }
            }
            hostileCount = casts.count
            if !unmatched.isEmpty {
                metrics.count(.probeHostileUnmatched, by: unmatched.count)
                logger.notice("hostile devices \(unmatched): no friend of a friend who is not their own friend in the graph; they do not probe")
            }
            probes = scheduleProbes(hostile, catalogue: catalogue, casts: casts, devices: fleet.slots, remote: cast.remote,
                                    start: timeline.rampUpEnd + hostile.at, end: timeline.steadyEnd, file: hostile.catalogue)
        }
        let retention = scenario.retention.checkEvery > 0
            ? RetentionChecker(policy: scenario.retention, metrics: metrics, afterGroupEnd: Self.retentionAfterGroupEnd(configuration.app)) : nil
        let rounds = retention.map { checker in
            // With a service key the checker also scans the whole table: in a sharded run, the first shard alone does.
            let serviceKey = (configuration.shard?.index ?? 0) == 0 ? configuration.target.serviceKey : nil
            let (devices, t0) = (fleet.devices, timeline.t0)
            return Task { [clock, engine, configuration] in
                let http = SupabaseHTTP(engine: engine, target: configuration.target)
                var next = t0 + checker.policy.checkEvery
                while !Task.isCancelled {
                    do { try await clock.monotonic.sleep(until: next) } catch { return }
                    await checker.round(for: configuration.app, devices: devices, http: http, serviceKey: serviceKey, clock: clock,
                                        t: clock.now() - t0)
                    next = max(next + checker.policy.checkEvery, clock.now())
                }
            }
        }
        return Checks(probes: probes, hostileCount: hostileCount, retention: retention, retentionRounds: rounds)
    }

    /// Sleeps through ramp-up, steady and ramp-down; false when the run was interrupted (its probes are stopped then).
    /// A probe pass under way finishes (its checks need their answers) before the phones drain.
    func steady(_ timeline: Timeline, _ checks: Checks) async -> (complete: Bool, probes: ProbeSummary?) {
        var complete = true
        do {
            try await clock.monotonic.sleep(until: timeline.rampUpEnd)
            setPhase(.steady)
            try await clock.monotonic.sleep(until: timeline.steadyEnd)
            setPhase(.rampDown)
            try await clock.monotonic.sleep(until: timeline.end)
        } catch {
            complete = false
            logger.notice("interrupted: stopping the devices, draining for \(configuration.drain) s")
            checks.probes?.cancel()
        }
        return (complete, await checks.probes?.value)
    }
}
