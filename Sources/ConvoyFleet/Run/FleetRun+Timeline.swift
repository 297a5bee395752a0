import ConvoyGeo
import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Foundation
import Logging
import Synchronization

/// What runs beside the timeline: the migration's reinstalls, and the once-a-second monitor.
extension FleetRun {
    /// Reinstalls a seeded share of the fleet at `time` (drawn over every device index, so every shard draws the same; each
    /// reinstalls its own); each friend accepts again after its own delay. With invite codes the run has the friend accept
    /// (a friend here: runs are refused sharded with them); an app that pairs during the run asks each friend again on the
    /// phone, and the friend, on whichever shard, accepts when it hears it.
    func scheduleMigration(_ migration: Migration, slots: [VirtualDevice?], at time: Double, scheduler: Scheduler, seed: UInt64) {
        var rng = SeededGenerator(seed: seed, stream: 0x319)
        let chosen = slots.indices.filter { _ in rng.chance(migration.share) }.compactMap { i in slots[i].map { (i, $0) } }
        logger.info("migration: \(chosen.count) devices reinstall at \(String(format: "%.1f", time)) s")
        for (i, device) in chosen {
            scheduler.at(time) { [clock] t in
                let codes = await device.reinstall(at: t)
                var delays = SeededGenerator(seed: seed ^ UInt64(i), stream: 0x31A)
                for (friend, code) in codes {
                    let at = clock.now() + delays.uniform(migration.reaccept.lowerBound, migration.reaccept.upperBound)
                    guard let other = slots[friend] else { continue }
                    scheduler.at(at) { _ in await other.reaccept(code: code, from: i) }
                }
            }
        }
    }

    /// Reports each second's measurements until cancelled,
    /// and says in run.log what the fleet's connections and sessions went through in it (`FleetHealth`).
    func monitor(presence: Presence, health: FleetHealth, tally: GroupTally, failures: FailureLog, progress: @Sendable (Tick) -> Void) async {
        let groups = configuration.scenario.groups.map(\.name)
        let ranges = groups.indices.map { tally.devices(of: $0) }
        let sizes = ranges.map { r in configuration.shard.map { s in s.devices.filter(r.contains).count } ?? r.count }
        var next = clock.now() + 1
        var cpu = (at: clock.now(), seconds: ProcessResources.current().cpuSeconds)
        while !Task.isCancelled {
            do { try await clock.monotonic.sleep(until: next) } catch { return }
            next += 1
            let interval = metrics.takeInterval()
            let totals = metrics.counters()
            let s = status.withLock { $0 }
            let elapsed = s.start.isNaN ? 0 : clock.now() - s.start
            for line in health.report(wall: clock.wallNow()) {
                logger.notice("\(String(format: "%.0f", elapsed)) s: \(line)")
            }
            let (online, down, counts) = (presence.onlineCounts(ranges), health.down(in: ranges), tally.totals())
            let now = groups.indices.map { g in
                DashboardFrame.Group(name: groups[g], devices: sizes[g], online: online[g], offRealtime: down[g], sent: counts[g].sent, received: counts[g].received)
            }
            // The harness's own CPU and memory once a second: for the dashboard, and for the cost of the steady part
            // (`RunSummary.Resources.steady`).
            let resources = ProcessResources.current(), at = clock.now()
            let process = DashboardFrame.Process(name: "convoy run", cpu: 100 * (resources.cpuSeconds - cpu.seconds) / max(at - cpu.at, 1e-3),
                                                 rssMiB: resources.rssMiB, maxRSSMiB: resources.maxRSSMiB)
            cpu = (at, resources.cpuSeconds)
            progress(Tick(elapsed: elapsed, phase: s.phase, devicesOnline: presence.onlineCount, onboarded: s.onboarded, interval: interval,
                          totals: totals, health: health.now, groups: now, failures: failures.latest, process: process))
            if !s.start.isNaN {
                let sample = CostSample(t: elapsed, cpuSeconds: resources.cpuSeconds, received: totals[CounterName.received.name] ?? 0)
                costs.withLock { $0.append(sample) }
            }
        }
    }

    func setPhase(_ phase: Phase) { status.withLock { $0.phase = phase } }
}
