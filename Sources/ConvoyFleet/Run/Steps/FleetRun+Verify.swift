import ConvoyMetrics
import Foundation
import Synchronization

/// Step 5 of a run, verify: each phone's ledger read back and every update accounted for (delivered, or lost and why),
/// with each phone's battery model; then step 6, the results: the metrics, reports and ledger the outcome carries.
extension FleetRun {
    /// What the phones' ledgers add up to.
    struct Verified {
        let accounting: Accounting
        let accounts: [DeviceAccount]
        let battery: BatteryReport
        /// This shard's devices, for `convoy merge`; empty when not sharded.
        let entries: [ShardLedger.Device]
        let neverSubscribed: Int
    }

    func verify(_ stage: Stage, _ fleet: Fleet) async -> Verified {
        let scenario = configuration.scenario
        let volts = stage.batteryProfiles.battery.voltage
        var ledgers = [DeviceLedger](repeating: DeviceLedger(), count: scenario.deviceCount)
        var entries: [ShardLedger.Device] = []
        var duplicates = 0, offline = 0, deaf = 0
        var accounts: [DeviceAccount] = []
        var energy = BatterySummary.Builder()
        var perDevice: [String: [Double]] = [:]
        var reconnects: [String: Int] = [:]
        let finished = clock.now()
        for d in fleet.devices {
            let i = d.index
            let group = scenario.groups[stage.groupOf[i]].name
            var percentPerHour: Double?
            if let e = await d.energyReport(now: finished) {
                energy.add(group: group, ledger: e.ledger, until: e.until)
                let b = e.ledger.breakdown(until: e.until)
                let p = BatteryUnits.percentPerHour(joules: b.total, seconds: b.seconds, capacity: scenario.battery.capacity, voltage: volts)
                perDevice[group, default: []].append(p)
                percentPerHour = p
            }
            if await d.neverSubscribed { deaf += 1 }
            reconnects[group, default: 0] += await d.reconnectCount
            ledgers[i] = await d.ledger
            let (dup, off) = (await d.duplicates, await d.sentOffline)
            (duplicates, offline) = (duplicates + dup, offline + off)
            if configuration.shard != nil {
                entries.append(ShardLedger.Device(index: i, group: group, ledger: ledgers[i], duplicates: dup, sentOffline: off,
                                                  batteryPercentPerHour: percentPerHour))
            }
            accounts.append(await d.currentAccount)
        }
        // A shard reconciles the pairs it holds both ends of; `convoy merge` the rest.
        return Verified(accounting: Accounting.reconcile(ledgers, duplicates: duplicates, sentOffline: offline,
                                                                  gapsLose: Self.missedInAGapIsGone(configuration.app)), accounts: accounts,
                        battery: Self.report(energy.summary(capacityMAh: scenario.battery.capacity), volts: volts, perDevice: perDevice,
                                             reconnects: reconnects),
                        entries: entries, neverSubscribed: deaf)
    }

    func results(_ stage: Stage, _ timeline: Timeline, _ checks: Checks, _ drained: Drained, _ verified: Verified,
                 complete: Bool, probes: ProbeSummary?) -> Outcome {
        let (scenario, shard, accounting, count) = (configuration.scenario, configuration.shard, verified.accounting, stage.mine.count)
        var snapshot = metrics.snapshot()
        snapshot.counters[.delivered] = accounting.delivered
        snapshot.counters[.lost] = accounting.lostTotal
        for (reason, count) in accounting.lost { snapshot.counters[.lost(reason: reason)] = count }
        snapshot.counters[.devices] = count
        let feeds = configuration.live.values.flatMap { $0 }
        if !feeds.isEmpty { snapshot.counters[.liveFixesReceived] = feeds.reduce(0) { $0 + $1.received } }
        snapshot.counters[.devicesNeverSubscribed] = verified.neverSubscribed  // arrived, never subscribed: received nothing, offline throughout
        snapshot.unmeasured = checks.retention?.report.unmeasured  // a run too short to see a row reach the limit has not tested it
        var resources = RunSummary.Resources(beforeDevices: stage.beforeDevices, timelineStart: timeline.start, end: ProcessResources.current(),
                                             delivered: accounting.delivered, devices: count)
        resources.steady = RunSummary.Resources.steady(costs.withLock { $0 }, lastArrival: timeline.rampUpEnd - timeline.t0,
                                                       rampDown: timeline.steadyEnd - timeline.t0)
        let ledger = shard.map { ShardLedger(runID: configuration.runID, shard: $0.index + 1, shards: $0.count, fleet: scenario.deviceCount,
                                             devices: verified.entries) }
        let unprobed = scenario.hostile.flatMap { h in
            stage.catalogue.map { ProbeSummary(outcomes: [], catalogue: $0, file: h.catalogue, hostileDevices: checks.hostileCount) }
        }
        var outcome = Outcome(metrics: snapshot, accounting: accounting, complete: complete, devices: count, startedAt: stage.startedAt,
                              endedAt: Date(), duration: clock.now() - timeline.t0, accounts: verified.accounts, resources: resources,
                              retention: checks.retention?.report, battery: verified.battery, probes: probes ?? unprobed, ledger: ledger,
                              network: Self.network(scenario, figures: drained.shaping, offRealtime: drained.offRealtime,
                                                     duration: timeline.steadyEnd - timeline.t0), groups: drained.groups)
        (outcome.mailbox, outcome.failures, outcome.sharesLocations) = (drained.mailbox, stage.context.failures.samples, configuration.app.sharesLocation)
        return outcome
    }
}

extension FleetRun.Outcome {
    /// The run's summary.json: every figure the outcome carries, with the scenario's identity and thresholds from `configuration`.
    /// `target`: what the run ran against; `exitCode`: the caller's status for a run that ended (`complete`) with its thresholds
    /// passed or not. A probe leak or a retention finding fails the run, whatever the thresholds say (`failed`: that status).
    public func summary(of configuration: FleetRun.Configuration, target: RunSummary.Target,
                        exitCode: (_ complete: Bool, _ passed: Bool) -> Int32) -> RunSummary {
        let scenario = configuration.scenario
        var summary = RunSummary(
            scenario: scenario.name, scenarioFile: configuration.scenarioFile, seed: scenario.seed, complete: complete,
            startedAt: startedAt, endedAt: endedAt, durationSeconds: duration, target: target, devices: devices, accounting: accounting,
            metrics: metrics, thresholds: scenario.thresholds, exitCode: { exitCode(complete, $0) })
        (summary.resources, summary.retention, summary.battery, summary.probes) = (resources, retention, battery, probes)
        (summary.network, summary.groups, summary.mailbox) = (network, groups, mailbox)
        (summary.failures, summary.sharesLocations) = (failures, sharesLocations)
        if let shard = configuration.shard {
            summary.shard = .init(runID: configuration.runID, shard: shard.index + 1, shards: shard.count, fleetDevices: scenario.deviceCount,
                                  sentToOtherShards: metrics.counters[.sentOtherShards])
            summary.shard?.fleet = Shard.fingerprint(scenario)
        }
        summary.applyCorrectness(failed: exitCode(true, false))
        return summary
    }
}
