import ConvoyMetrics
import ConvoyTime
import ConvoyWire
import Foundation
import Logging

/// Step 4 of a run, the drain: sharing stops everywhere, what is in flight arrives, the phones that were
/// away come back and catch up (up to the timeline's `settle`), then everything closes.
extension FleetRun {
    /// What the shape's accounting and the shaping proxy saw, taken as they close.
    struct Drained {
        let groups: GroupsReport?
        let mailbox: MailboxReport?
        /// Per group index: the tunnels and cuts its phones went through; nil without network conditions.
        let shaping: [(tunnels: Int, cuts: Int, offlineShare: Double?)]?
        /// Per group index: the share of its phones' time, from their first subscription to the end, that their Realtime
        /// connection was down (an offline window, and the reconnect after it): what a broadcast to them is lost to.
        var offRealtime: [Double?] = []
    }

    func drain(_ stage: Stage, _ cast: Cast, _ fleet: Fleet, _ timeline: Timeline, _ checks: Checks, complete: Bool,
               schedulerTask: Task<Void, Never>) async -> Drained {
        setPhase(.draining)
        let devices = fleet.devices
        for d in devices {
            await d.shapeEnds()
            // A run that reached its end: ticks that came due before it are still shared; an interrupted one stops now.
            await d.leave(at: complete ? timeline.end : -.infinity)
        }
        // In a task of its own: an interrupted run's cancellation does not cut the drain short.
        await Task { [self] in
            try? await clock.monotonic.sleep(until: clock.now() + configuration.drain)
            await settle(devices, for: timeline.settle)
        }.value
        Self.shapeDrained(stage.context)
        checks.retentionRounds?.cancel()
        await checks.retentionRounds?.value
        for d in devices { await d.disconnect() }
        let offRealtime = await offRealtimeShares(devices, groupOf: stage.groupOf)
        let (groups, mailbox) = await shapeReports(cast.graph, devices: fleet.slots,
                                                   purged: checks.retention?.groupEndsSeen ?? [:], context: stage.context,
                                                   purgeLimit: configuration.scenario.retention.limit)
        schedulerTask.cancel()
        await schedulerTask.value
        let shaping = stage.proxy.map { p in
            configuration.scenario.groups.indices.map { g in p.figures(phones: stage.mine.filter { stage.groupOf[$0] == g }) }
        }
        await stage.proxy?.stop()
        setPhase(.done)
        return Drained(groups: groups, mailbox: mailbox, shaping: shaping, offRealtime: offRealtime)
    }

    /// Per group index, Σ gaps ÷ Σ time from each phone's first subscription to now (nil: no phone of it subscribed).
    private func offRealtimeShares(_ devices: [VirtualDevice], groupOf: [Int]) async -> [Double?] {
        let groups = configuration.scenario.groups.count
        var (down, span) = (Array(repeating: 0.0, count: groups), Array(repeating: 0.0, count: groups))
        let now = clock.wallNow()
        for d in devices {
            let ledger = await d.ledger
            guard d.index < groupOf.count, let start = ledger.online.first?.from, start < now else { continue }
            let g = groupOf[d.index]
            span[g] += now - start
            for gap in ledger.gaps { down[g] += max(0, min(gap.to, now) - max(gap.from, start)) }
        }
        return (0..<groups).map { span[$0] > 0 ? down[$0] / span[$0] : nil }
    }

    /// Waits, up to `bound` seconds, for every phone to be back, its queue posted and caught up; says in run.log how long that took.
    private func settle(_ devices: [VirtualDevice], for bound: Double) async {
        let started = clock.now()
        var unsettled = 0
        repeat {
            unsettled = 0
            for d in devices where await !d.isSettled { unsettled += 1 }
            if unsettled == 0 || bound == 0 { break }
            try? await clock.monotonic.sleep(until: clock.now() + 0.25)
        } while clock.now() < started + bound
        if clock.now() - started > 0.2 {
            logger.notice("drain: waited \(String(format: "%.1f", clock.now() - started)) s for phones to come back, post their queues and catch up; \(unsettled) not done")
        }
    }
}
