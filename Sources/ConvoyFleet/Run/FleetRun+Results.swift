import ConvoyMetrics
import ConvoyWire

/// The run's results in the results' terms: the network conditions groups ran under, the battery model per group.
extension FleetRun {
    /// The conditions each group with any ran under, for the results, with what its phones' tunnels went through (by group index).
    /// `offRealtime`: each group's share of time off Realtime (`Drained.offRealtime`); `duration`: seconds from the first
    /// arrival to the end of the steady part, over which a group's random offline windows are drawn.
    static func network(_ scenario: Scenario, figures: [(tunnels: Int, cuts: Int, offlineShare: Double?)]?, offRealtime: [Double?] = [],
                        duration: Double = 0) -> [RunSummary.NetworkGroup]? {
        let groups = scenario.groups.enumerated().compactMap { i, g in g.conditions.map { (i, g.name, $0) } }
        guard !groups.isEmpty else { return nil }
        return groups.map { index, name, c in
            var offline: String?
            switch c.offline {
            case .periodic(let every, let length)?: offline = "\(Quantity.format(seconds: length)) every \(Quantity.format(seconds: every))"
            case .random(let interval, let length)?:
                offline = "random: about \(Quantity.format(seconds: length)) about every \(Quantity.format(seconds: interval))"
            case nil: break
            }
            let phones = scenario.groups[index].count
            var group = RunSummary.NetworkGroup(group: name, preset: c.name, rttMs: c.rtt * 1000, jitterMs: c.jitter * 1000, loss: c.loss,
                                                upBps: c.up, downBps: c.down, resetEverySeconds: c.resetEvery > 0 ? c.resetEvery : nil,
                                                offline: offline, summary: c.summary, tunnels: figures?[index].tunnels ?? 0, cuts: figures?[index].cuts ?? 0)
            if c.offline != nil { group.offlineShare = figures?[index].offlineShare }
            if index < offRealtime.count { group.offRealtimeShare = offRealtime[index] }
            if case .random(let interval, let length)? = c.offline, duration > 0 {
                // Windows begin about every interval + length (a window, then the wait for the next).
                group.offlineMeanShare = length / (interval + length)
                group.offlineWindowsExpected = Double(phones) * duration / (interval + length)
            }
            return group
        }
    }

    /// The battery model's summary in the results' terms.
    static func report(_ s: BatterySummary, volts: Double, perDevice: [String: [Double]], reconnects: [String: Int] = [:]) -> BatteryReport {
        BatteryReport(capacityMah: s.capacityMAh, volts: volts, groups: s.groups.map { g in
            var group = BatteryReport.Group(name: g.name, network: g.network, devices: g.devices, deviceHours: g.hoursObserved,
                                            radioJoules: g.joules.radio, gpsJoules: g.joules.gps, cpuJoules: g.joules.cpu,
                                            radioTailJoules: g.joules.radioTail, capacityMah: s.capacityMAh, volts: volts)
            group.percentPerHourByDevice = BatteryReport.Group.Spread(perDevice[g.name] ?? [])
            group.reconnects = reconnects[g.name] ?? 0
            return group
        })
    }
}
