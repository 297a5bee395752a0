/// `convoy dashboard SHARD_URL…`: the dashboards of a sharded run's shards as one. Each second the shards'
/// new seconds are merged as `convoy merge` merges results: histograms add losslessly (the merged p50 and
/// p99 are of every shard's recordings), counts and phones sum, the phase is the least advanced shard's.
public enum DashboardMerge {
    static let phases = ["onboarding", "pairing", "waiting", "ramp-up", "steady", "ramp-down", "draining", "done"]

    /// One header for the shards': their phones summed, the longest plan.
    public static func header(_ headers: [DashboardFeed.Header], shards: [String]) -> DashboardFeed.Header {
        var h = headers[0]
        h.devices = headers.reduce(0) { $0 + $1.devices }
        h.planned = headers.map(\.planned).max() ?? h.planned
        h.shards = shards
        return h
    }

    /// The fleet this second: from each shard's newest second (`latest`, one a shard, named in `names` when given, for
    /// their processes) and every second published since the last merge (`new`, their intervals added).
    public static func second(latest: [DashboardFeed.Second], new: [DashboardFeed.Second], names: [String]? = nil) -> DashboardFeed.Second {
        var interval = MetricsSnapshot()
        for s in new { interval.merge(s.interval) }
        var totals: [String: Int] = [:]
        for s in latest { totals.merge(s.totals, uniquingKeysWith: +) }
        // A shard's `sent` is what it sealed to friends on its own shard; to friends on others it counts apart (the merge
        // settles them): the fleet sent both.
        let (sent, elsewhere) = (CounterName.sent.name, CounterName.sentOtherShards.name)
        totals[sent, default: 0] += totals[elsewhere] ?? 0
        interval.counters[sent, default: 0] += interval.counters[elsewhere] ?? 0
        var groups: [DashboardFrame.Group] = []
        for s in latest {
            for g in s.groups {
                if let k = groups.firstIndex(where: { $0.name == g.name }) {
                    groups[k].devices += g.devices
                    groups[k].online += g.online
                    groups[k].offRealtime += g.offRealtime
                    groups[k].sent += g.sent
                    groups[k].received += g.received
                } else {
                    groups.append(g)
                }
            }
        }
        // Each shard's failures so far, as one: counts summed by operation and reason, the last shard's request kept.
        var failures: [FailureSample] = []
        for f in latest.flatMap(\.failures) {
            if let k = failures.firstIndex(where: { $0.operation == f.operation && $0.reason == f.reason }) {
                let count = failures[k].count + f.count
                failures[k] = f
                failures[k].count = count
            } else {
                failures.append(f)
            }
        }
        let phase = latest.map(\.phase).min { (phases.firstIndex(of: $0) ?? 0) < (phases.firstIndex(of: $1) ?? 0) } ?? "onboarding"
        return DashboardFeed.Second(elapsed: latest.map(\.elapsed).max() ?? 0, phase: phase, onboarded: latest.reduce(0) { $0 + $1.onboarded },
                                    online: latest.reduce(0) { $0 + $1.online }, offRealtime: latest.reduce(0) { $0 + $1.offRealtime },
                                    retryQueued: latest.reduce(0) { $0 + $1.retryQueued }, interval: interval, totals: totals, groups: groups,
                                    failures: failures, processes: processes(latest, names: names))
    }

    /// Each shard's process, named by its dashboard (a shard's own name, `convoy run`, when no names are given).
    static func processes(_ latest: [DashboardFeed.Second], names: [String]?) -> [DashboardFrame.Process] {
        zip(latest.indices, latest).flatMap { k, s in
            s.processes.map { p in
                var p = p
                if let names, names.indices.contains(k) { p.name = names[k] }
                return p
            }
        }
    }

    /// How the shards ended, as one: the worst exit code (1 over 99 over 0), the accountings summed, a threshold
    /// passed when it passed on every shard (`convoy merge` judges the merged run, cross-shard delivery included).
    public static func end(_ ends: [DashboardEnd], shards: [String]) -> DashboardEnd {
        let codes = ends.map(\.exitCode)
        let exit = codes.contains(1) ? 1 : codes.first { $0 != 0 } ?? 0
        var accounting: Accounting?
        for a in ends.compactMap(\.accounting) {
            var sum = accounting ?? Accounting()
            sum.sent += a.sent
            sum.delivered += a.delivered
            sum.deliveredByBackfill += a.deliveredByBackfill
            sum.deliveredAfterRetry += a.deliveredAfterRetry
            sum.duplicates += a.duplicates
            sum.sentOffline += a.sentOffline
            sum.lost.merge(a.lost, uniquingKeysWith: +)
            accounting = sum
        }
        var mailbox: DashboardEnd.MailboxEnd?
        for m in ends.compactMap(\.mailbox) {
            var sum = mailbox ?? .init(sent: 0, delivered: 0, lost: [:])
            sum.sent += m.sent
            sum.delivered += m.delivered
            sum.lost.merge(m.lost, uniquingKeysWith: +)
            mailbox = sum
        }
        let thresholds = (ends.first { !$0.thresholds.isEmpty }?.thresholds ?? []).map { t in
            let everywhere = ends.allSatisfy { e in e.thresholds.contains { $0.threshold == t.threshold && $0.state == "passed" } }
            let untested = ends.map { e in e.thresholds.first { $0.threshold == t.threshold && $0.state == "not_tested" } }
            if untested.allSatisfy({ $0 != nil }) {
                return ThresholdNow(threshold: t.threshold, value: nil, unit: t.unit, state: "not_tested", why: untested.first??.why)
            }
            return ThresholdNow(threshold: t.threshold, value: nil, unit: t.unit, state: everywhere ? "passed" : "failed")
        }
        var counters: [String: Int] = [:]
        for e in ends { counters.merge(e.counters, uniquingKeysWith: +) }
        let urls = shards.map { $0.hasSuffix("/") ? $0 : $0 + "/" }
        return DashboardEnd(exitCode: exit, complete: ends.allSatisfy(\.complete), passed: ends.allSatisfy(\.passed), accounting: accounting,
                            mailbox: mailbox, thresholds: thresholds, counters: counters, durationSeconds: ends.map(\.durationSeconds).max() ?? 0,
                            report: (urls.first ?? "") + "report.html", results: "convoy merge of the shards' folders gives the merged run",
                            shards: zip(urls, ends).map { .init(url: $0, exitCode: $1.exitCode, report: $0 + "report.html") })
    }

    /// A shard that stopped answering before it said how it ended: a runtime failure, as far as anyone can tell.
    public static func unreachable(_ url: String, why: String = "stopped answering") -> DashboardEnd {
        DashboardEnd(exitCode: 1, complete: false, passed: false, accounting: nil, mailbox: nil, thresholds: [], counters: [:],
                     durationSeconds: 0, report: url + "report.html", results: "\(url): \(why) before its end", shards: nil)
    }

    /// The shards' maps as one: each phone from the shard that runs it (the one that knows where it is); a tracked
    /// phone's track from its own shard and what its friends received from every shard (each records its own phones' receipts).
    public static func map(_ maps: [FleetMapData]) -> FleetMapData? {
        guard var merged = maps.first else { return nil }
        for m in maps.dropFirst() {
            for p in m.phones where p.i < merged.phones.count && (p.lat != nil || p.online) && merged.phones[p.i].lat == nil {
                merged.phones[p.i] = p
            }
        }
        var tracked: [Int: FleetMapData.Tracked] = [:]
        for t in maps.flatMap(\.tracked) {
            var m = tracked[t.i] ?? .init(i: t.i, g: t.g, track: [], received: [])
            if m.track.isEmpty { m.track = t.track }
            m.received += t.received
            tracked[t.i] = m
        }
        merged.tracked = tracked.values.filter { !$0.track.isEmpty || !$0.received.isEmpty }.sorted { $0.i < $1.i }.map { t in
            var t = t
            t.received = Array(t.received.sorted { $0.t < $1.t }.suffix(400))
            return t
        }
        return merged
    }

    /// One phone as the shards know it: where it is from its own shard, each friend's mode from there and the
    /// last updates each friend received from the friend's shard.
    public static func detail(_ details: [FleetMapData.PhoneDetail]) -> FleetMapData.PhoneDetail? {
        guard var merged = details.first(where: { $0.lat != nil }) ?? details.first else { return nil }
        var friends: [Int: FleetMapData.PhoneDetail.Friend] = [:]
        for f in details.flatMap(\.friends) {
            var m = friends[f.i] ?? .init(i: f.i, mode: nil, last: [])
            m.mode = m.mode ?? f.mode
            m.last = Array((m.last + f.last).sorted { $0.t > $1.t }.prefix(3))
            friends[f.i] = m
        }
        merged.friends = friends.values.sorted { $0.i < $1.i }
        merged.online = details.contains { $0.online }
        return merged
    }
}
