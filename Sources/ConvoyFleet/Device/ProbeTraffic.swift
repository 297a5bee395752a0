import ConvoyCrypto

/// What the probes post to real devices of a fleet (a replayed ciphertext,
/// a friend's update for a Realtime probe to watch) carries sequence numbers
/// from `seqBase` up, far above any device's own, so a receiving device
/// counts it apart (`probe_rows_received`) and the run's accounting of
/// real updates is untouched.
///
/// A payload without a seq (Green Box `payload: prd`: the PRD's `lat lon ts acc` alone) cannot carry that mark: there
/// the probes' updates are told apart by where they say they are, landmarks no phone of a run stands on exactly.
public enum ProbeTraffic {
    public static let seqBase: UInt64 = 1 << 52  // exact in a JSON double, as is every number above it the probes use

    /// Where the probes' updates are: a captured update (Westminster), a replay's first and second (the Eiffel Tower).
    public static let captured = (lat: 51.5007, lon: -0.1246)
    public static let replayed = [(lat: 48.8584, lon: 2.2945), (lat: 48.8590, lon: 2.2950)]

    /// Whether `update` is a probe's: its seq says so, or, without one, its landmark.
    public static func isProbe(_ update: LocationPayload) -> Bool {
        if let seq = update.seq { return seq >= seqBase }
        return ([captured] + replayed).contains { $0.lat == update.lat && $0.lon == update.lon }
    }
}
