extension Threshold {
    /// The metrics that measure location updates (sealed, posted, received, decrypted): a threshold on one says
    /// nothing for an app whose phones share no locations (QuickPic's messages, Closer's pairing), so a scenario
    /// for such an app that names one is refused when it is read.
    static let locationMetrics: Set<String> = Set([
        HistogramName.e2eLatency, .commitToReceipt, .post, .postFailed, .seal, .open, .encode, .decode, .keyLookup,
    ].map(\.name) + [
        CounterName.updates, .sent, .sentOffline, .sentOtherShards, .received, .duplicate, .staleRejected, .futureRejected, .decryptFailures,
        .sealFailures, .receivedFromStrangers, .receivedUnmatched, .receivedWithoutSeq, .receivedAfterRetention, .delivered, .lost,
        .keyLookups, .keyLookupFailures, .backfills, .backfilled,
    ].map(\.name) + ["delivery.loss", "delivery.duplicates", "delivery.stale"])

    /// Whether the threshold is on a location update's metric (`e2e_latency.p99`, `delivery.loss`, `lost.timeout` …).
    public var measuresLocations: Bool {
        let name: String = switch subject {
        case .statistic(let histogram, _): histogram
        case .ratio(let ratio): ratio
        case .counter(let counter): counter
        }
        if Self.locationMetrics.contains(name) { return true }
        // Per-reason counters: lost.<reason>, decrypt_failures.<reason>.
        guard let dot = name.firstIndex(of: ".") else { return false }
        return [CounterName.lost.name, CounterName.decryptFailures.name].contains(String(name[..<dot]))
    }
}
