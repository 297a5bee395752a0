import ConvoyGeo
import ConvoyWire
import Yams

/// A group of devices (docs/scenarios.md, "A group").
extension Reader {
    static let groupKeys = ["name", "count", "tracks", "replay", "accuracy", "correlation_time", "cadence", "background_share",
                            "precise_share", "network", "location_mode", "when_in_use_share", "background_mode", "key_lookup",
                            "key_cache_ttl", "general", "laplace_mean", "gps_denied", "conditions", "message_every", "poll_every",
                            "relogin_every"] + mediaKeys

    func group() throws(ScenarioError) -> DeviceGroup {
        let m = try mapping(Self.groupKeys)
        guard let name = try m["name"]?.string(), !name.isEmpty else { throw error("a group needs a name") }
        guard let count = m["count"] else { throw error("a group needs a count") }
        var group = DeviceGroup(
            name: name, count: try count.int(1...1_000_000), tracks: try m["tracks"]?.tracks() ?? .synthetic(.walk),
            replay: try m["replay"]?.choice(ReplayMode.self) ?? .loop, accuracy: try m["accuracy"]?.metres() ?? 5,
            correlationTime: try m["correlation_time"]?.duration(minimum: 1) ?? 60,
            cadence: try m["cadence"]?.range() ?? 10...15, backgroundShare: try m["background_share"]?.fraction() ?? 0,
            preciseShare: try m["precise_share"]?.fraction() ?? 1, network: try m["network"]?.name() ?? "lte")
        group.locationMode = try m["location_mode"]?.choice(LocationMode.self) ?? .highAccuracy
        group.whenInUseShare = try m["when_in_use_share"]?.fraction() ?? 0
        group.backgroundMode = try m["background_mode"]?.choice(DeviceGroup.BackgroundMode.self) ?? .significantChange
        group.keyLookup = try m["key_lookup"]?.choice(DeviceGroup.KeyLookup.self) ?? .once
        if let ttl = m["key_cache_ttl"] {
            guard group.keyLookup == .cached else { throw ttl.error("key_cache_ttl applies to key_lookup: cached") }
            group.keyCacheTTL = try ttl.duration(minimum: 1)
        }
        group.general = try generalRule(m)
        if let c = m["conditions"] {
            let conditions = try c.conditions()
            group.conditions = conditions
            // The battery model's radio follows the preset unless `network:` names one.
            if m["network"] == nil, let radio = NetworkConditions.radio(forPreset: conditions.name) { group.network = radio }
        }
        if let denied = m["gps_denied"] { group.gpsDenied = try denied.gpsDenied() }
        if let every = m["message_every"] { group.messageEvery = try every.range() }
        if let every = m["poll_every"] {
            // `never`: phones that do not open the app, whose mailboxes wait for the fallback purge.
            if (try? every.string()) == "never" { group.pollsNever = true } else { group.pollEvery = try every.range() }
        }
        if let every = m["relogin_every"] { group.reloginEvery = try every.range() }
        group.media = try mediaPlans(m)
        let mark = (m["tracks"] ?? self).node.mark
        (group.tracksLine, group.tracksColumn) = (mark?.line ?? 0, mark?.column ?? 0)
        let networkMark = (m["network"] ?? self).node.mark
        (group.networkLine, group.networkColumn) = (networkMark?.line ?? 0, networkMark?.column ?? 0)
        return group
    }

    /// `general: round2 | round3 | laplace` (with `laplace_mean`, the mean offset: ε = 2 / mean).
    private func generalRule(_ m: [String: Reader]) throws(ScenarioError) -> PrivacyFuzz {
        let rule = try m["general"]?.choice(GeneralRule.self) ?? .round2
        if let mean = m["laplace_mean"] {
            guard rule == .laplace else { throw mean.error("laplace_mean applies to general: laplace") }
            let metres = try mean.metres()
            guard metres >= 1 else { throw mean.error("the mean offset must be at least 1 m, found \"\(try mean.string())\"") }
            return .geoIndistinguishable(epsilon: 2 / metres)
        }
        switch rule {
        case .round2: return .general(decimals: 2)
        case .round3: return .general(decimals: 3)
        case .laplace: return .geoIndistinguishable(epsilon: 2 / 200)
        }
    }

    private enum GeneralRule: String, CaseIterable {
        case round2, round3, laplace
    }

    /// `gps_denied: {windows: [30s..90s], mean_interval: 10m, mean_duration: 2m, fallback: wifi|cell}`.
    func gpsDenied() throws(ScenarioError) -> GPSDenied {
        let m = try mapping(["windows", "mean_interval", "mean_duration", "fallback"])
        var denied = GPSDenied()
        if let w = m["windows"] { denied.windows = try w.sequence().map { (r) throws(ScenarioError) in try r.range(fromZero: true) } }
        if let i = m["mean_interval"] { denied.meanInterval = try i.duration(minimum: 1) }
        if let d = m["mean_duration"] { denied.meanDuration = try d.duration(minimum: 1) }
        if let f = m["fallback"] { denied.fallback = try f.choice(GPSDenied.Fallback.self) }
        guard !denied.windows.isEmpty || denied.meanInterval != nil else {
            throw error("gps_denied needs windows (device times, e.g. [30s..90s]) or mean_interval (random episodes)")
        }
        return denied
    }
}
