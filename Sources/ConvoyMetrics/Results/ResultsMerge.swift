import Foundation

/// `convoy merge`: shards' results as one run's. Histograms add losslessly
/// (from each `histograms.json`), counters sum, the battery model's groups sum
/// (their per-device spread is recomputed from every device's figure), retention
/// checks and probe outcomes sum, and thresholds are evaluated on the merged
/// measurements. The delivery accounting is not summed: a sender and its
/// recipient may have run on different shards, so it is reconciled again from
/// the shards' ledgers and handed in.
public enum ResultsMerge {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// One shard's folder, read.
    public struct Part: Sendable {
        public var folder: String
        public var input: ReportInput
        public var shard: RunSummary.ShardInfo

        public init(folder: String, input: ReportInput) throws(Failure) {
            guard let shard = input.summary.shard, shard.shard != nil else {
                throw Failure(description: "\(folder): not a shard's results (its summary.json has no shard; run with --shard I/N)")
            }
            guard input.histograms != nil else { throw Failure(description: "\(folder): histograms.json is missing") }
            (self.folder, self.input, self.shard) = (folder, input, shard)
        }
    }

    /// Checks that `parts` are every shard of one run, each once; returns them in shard order.
    public static func check(_ parts: [Part]) throws(Failure) -> [Part] {
        guard let first = parts.first else { throw Failure(description: "no results folders to merge") }
        for p in parts {
            guard p.shard.shards >= 1, let i = p.shard.shard, (1...p.shard.shards).contains(i), p.shard.fleetDevices >= 0 else {
                throw Failure(description: "\(p.folder)/summary.json: shard \(p.shard.shard ?? 0) of \(p.shard.shards) is not a shard")
            }
            if p.shard.runID != first.shard.runID || p.shard.shards != first.shard.shards || p.shard.fleetDevices != first.shard.fleetDevices {
                throw Failure(description: "\(p.folder): shard \(i)/\(p.shard.shards) of run \(p.shard.runID) (\(p.shard.fleetDevices) devices), "
                              + "but \(first.folder) is of run \(first.shard.runID), \(first.shard.shards) shards (\(first.shard.fleetDevices) devices)")
            }
            if p.shard.fleet != first.shard.fleet || p.input.summary.seed != first.input.summary.seed {
                throw Failure(description: "\(p.folder): shard \(i) ran another fleet than \(first.folder) (a different seed, --devices, --duration "
                              + "or scenario), so their devices and friendships differ")
            }
        }
        var seen: [Int: String] = [:]
        for p in parts {
            if let other = seen[p.shard.shard!] {
                throw Failure(description: "\(p.folder): shard \(p.shard.shard!) again (also \(other)); a retried shard counts twice")
            }
            seen[p.shard.shard!] = p.folder
        }
        let missing = (1...first.shard.shards).filter { seen[$0] == nil }
        guard missing.isEmpty else {
            throw Failure(description: "shard\(missing.count == 1 ? "" : "s") \(missing.map(String.init).joined(separator: ", ")) of \(first.shard.shards) "
                          + "missing (run \(first.shard.runID)); give every shard's folder")
        }
        return parts.sorted { $0.shard.shard! < $1.shard.shard! }
    }

    /// The merged summary and measurements. `accounting` and `batteryByDevice` (each device's % per hour, by group)
    /// come from the shards' ledgers; `exitCode` maps (complete, passed) to the exit code.
    public static func merge(_ parts: [Part], accounting: Accounting, batteryByDevice: [String: [Double]],
                             exitCode: (_ complete: Bool, _ passed: Bool) -> Int32) throws(Failure) -> (summary: RunSummary, metrics: MetricsSnapshot) {
        let parts = try check(parts)
        let first = parts[0].input.summary
        var metrics = MetricsSnapshot()
        for p in parts { metrics.merge(p.input.histograms!) }
        let devices = parts.reduce(0) { $0 + $1.input.summary.devices }
        // What a single process writes after its reconciliation.
        for name in metrics.counters.keys where name.hasPrefix("lost.") { metrics.counters[name] = nil }
        metrics.counters[.delivered] = accounting.delivered
        metrics.counters[.lost] = accounting.lostTotal
        for (reason, count) in accounting.lost { metrics.counters[.lost(reason: reason)] = count }
        metrics.counters[.sent] = accounting.sent
        metrics.counters[.sentOffline] = accounting.sentOffline
        metrics.counters[.devices] = devices
        // How late the latest shard started, not the sum.
        if let late = parts.compactMap({ $0.input.histograms?.counters[CounterName.startLateMs.name] }).max() { metrics.counters[.startLateMs] = late }

        var thresholds: [Threshold] = []
        for t in first.thresholds {
            do {
                thresholds.append(try Threshold(t.threshold))
            } catch {
                throw Failure(description: "\(parts[0].folder)/summary.json: threshold \"\(t.threshold)\": \(error)")
            }
        }
        let complete = parts.allSatisfy { $0.input.summary.complete }
        // What the shards together could not measure: thresholds on it fail as not measured.
        let retention = retention(parts.compactMap(\.input.summary.retention))
        metrics.unmeasured = retention?.unmeasured
        var summary = RunSummary(
            scenario: first.scenario, scenarioFile: first.scenarioFile, seed: first.seed, complete: complete,
            startedAt: parts.map(\.input.summary.startedAt).min()!, endedAt: parts.map(\.input.summary.endedAt).max()!,
            durationSeconds: parts.map(\.input.summary.durationSeconds).max()!, target: first.target, devices: devices,
            accounting: accounting, metrics: metrics, thresholds: thresholds, exitCode: { exitCode(complete, $0) })
        summary.shard = .init(runID: parts[0].shard.runID, shard: nil, shards: parts[0].shard.shards, fleetDevices: parts[0].shard.fleetDevices,
                              folders: parts.map(\.folder))
        summary.shard?.fleet = parts[0].shard.fleet
        summary.battery = battery(parts.compactMap(\.input.summary.battery), byDevice: batteryByDevice)
        summary.retention = retention
        summary.sharesLocations = first.sharesLocations
        summary.probes = probes(parts.compactMap(\.input.summary.probes))
        summary.applyCorrectness(failed: exitCode(true, false))
        return (summary, metrics)
    }

    static func battery(_ reports: [BatteryReport], byDevice: [String: [Double]]) -> BatteryReport? {
        guard let first = reports.first else { return nil }
        var order: [String] = []
        var groups: [String: BatteryReport.Group] = [:]
        for g in reports.flatMap(\.groups) {
            guard let sum = groups[g.name] else {
                order.append(g.name)
                groups[g.name] = g
                continue
            }
            groups[g.name] = BatteryReport.Group(
                name: g.name, network: g.network, devices: sum.devices + g.devices, deviceHours: sum.deviceHours + g.deviceHours,
                radioJoules: sum.radioJoules + g.radioJoules, gpsJoules: sum.gpsJoules + g.gpsJoules, cpuJoules: sum.cpuJoules + g.cpuJoules,
                radioTailJoules: sum.radioTailJoules + g.radioTailJoules, capacityMah: first.capacityMah, volts: first.volts)
            groups[g.name]?.reconnects = (sum.reconnects == nil && g.reconnects == nil) ? nil : (sum.reconnects ?? 0) + (g.reconnects ?? 0)
        }
        return BatteryReport(capacityMah: first.capacityMah, volts: first.volts, groups: order.map { name in
            var g = groups[name]!
            g.percentPerHourByDevice = BatteryReport.Group.Spread(byDevice[name] ?? [])
            return g
        })
    }

    /// Checks and findings add up (each shard's devices check their own rows; only the first shard scans the table).
    static func retention(_ reports: [RetentionReport]) -> RetentionReport? {
        guard var out = reports.first else { return nil }
        for r in reports.dropFirst() {
            out.checks += r.checks
            out.scans += r.scans
            out.violations += r.violations
            out.deletedEarly += r.deletedEarly
            out.earlyChecked += r.earlyChecked
            out.maxOverageSeconds = [out.maxOverageSeconds, r.maxOverageSeconds].compactMap { $0 }.max()
            out.oldestRowAgeSeconds = [out.oldestRowAgeSeconds, r.oldestRowAgeSeconds].compactMap { $0 }.max()
            out.findings += r.findings
            out.timeline += r.timeline
        }
        // As one process keeps them: the first 20 (by overage, largest first), the counts go on.
        out.findings = Array(out.findings.sorted { $0.overageSeconds > $1.overageSeconds }.prefix(20))
        out.timeline.sort { $0.t < $1.t }
        return out
    }

    /// Each probe's counts summed over the shards' hostile devices, evidence leaks first, three kept per probe.
    static func probes(_ summaries: [ProbeSummary]) -> ProbeSummary? {
        guard var out = summaries.first else { return nil }
        for s in summaries.dropFirst() {
            out.hostileDevices += s.hostileDevices
            for p in s.probes {
                guard let i = out.probes.firstIndex(where: { $0.id == p.id }) else {
                    out.probes.append(p)
                    continue
                }
                out.probes[i].tried += p.tried
                out.probes[i].denied += p.denied
                out.probes[i].leaked += p.leaked
                out.probes[i].findings += p.findings
                out.probes[i].errors += p.errors
                out.probes[i].evidence = Array((out.probes[i].evidence + p.evidence).sorted { $0.kind == "leak" && $1.kind != "leak" }.prefix(3))
            }
        }
        return out
    }

    /// `metrics.csv` rows of every shard by second, each column combined as `MetricsCSV` says: counts and
    /// devices online summed, each latency column the worst shard's (percentiles of parts do not add).
    /// `header` is the first shard's.
    public static func series(_ folders: [String]) -> (header: [String], rows: [[String]])? {
        var header: [String]?
        var bySecond: [String: [String]] = [:]
        var order: [String] = []
        for folder in folders {
            guard let text = try? String(contentsOfFile: (folder as NSString).appendingPathComponent("metrics.csv"), encoding: .utf8) else { continue }
            var lines = text.split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
            guard !lines.isEmpty else { continue }
            let h = lines.removeFirst()
            if header == nil { header = h }
            guard h == header else { continue }
            // A late tick can name the same second twice in one folder: its last row stands.
            var own: [String: [String]] = [:]
            var ownOrder: [String] = []
            for row in lines where row.count == h.count {
                if own.updateValue(row, forKey: row[0]) == nil { ownOrder.append(row[0]) }
            }
            for row in ownOrder.map({ own[$0]! }) {
                let t = row[0]
                guard var sum = bySecond[t] else {
                    bySecond[t] = row
                    order.append(t)
                    continue
                }
                for (k, name) in h.enumerated() where k > 0 {
                    switch MetricsCSV.merge(of: name) {
                    case .worst:
                        let v = [Double(sum[k]), Double(row[k])].compactMap { $0 }.max()
                        sum[k] = v.map { String(format: "%.3f", $0) } ?? ""
                    case .sum:
                        if let a = Int(sum[k]), let b = Int(row[k]) { sum[k] = String(a + b) }
                    case .first: break
                    }
                }
                bySecond[t] = sum
            }
        }
        guard let header else { return nil }
        return (header, order.sorted { (Double($0) ?? 0) < (Double($1) ?? 0) }.map { bySecond[$0]! })
    }
}
